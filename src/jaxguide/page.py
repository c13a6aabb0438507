"""Helpers that only matter to a page being built: claims, glued values and provenance.

* :func:`claim` is the one home of a checked claim: it glues a value for the prose and
  checks the condition the prose relies on. In the book's build a claim that does not
  hold stops the build at its cell; in Colab (or on another JAX) it prints what differs
  from the book's build and carries on.
* :func:`glue` stores a value under a key for the prose (myst-nb's ``glue``); where
  myst-nb is absent (Colab, a plain Jupyter) it prints ``key: value`` instead, so a
  reader sees the number the prose refers to.
* :func:`show_only` keeps both quiet, outside the build, about keys the text does not
  quote: a notebook calls it first with the keys its prose names.
* :func:`provenance` says what produced a page: JAX and jaxlib versions, backend,
  devices, when and how long. The book's chapters end with a hidden cell that glues
  it into a small box at the top of the page.

All three are also available as ``jaxguide.claim``, ``jaxguide.glue`` and
``jaxguide.provenance``.

Example:
    >>> from jaxguide.page import provenance
    >>> p = provenance()
    >>> p.jax_version == __import__("jax").__version__
    True
"""

from __future__ import annotations

import contextlib
import datetime
import html
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from jaxguide import _checks

__all__ = [
    "BOOK_JAX",
    "FAILED_MARK",
    "ClaimError",
    "Provenance",
    "STRICT_ENV",
    "checking",
    "claim",
    "failed_claims",
    "glue",
    "provenance",
    "show_only",
]

T = TypeVar("T")

#: The JAX release the published book was built with (``uv.lock`` pins it; a test checks
#: the two agree). A claim that fails elsewhere names it, so a reader on a newer JAX
#: knows which build the prose describes.
BOOK_JAX = "0.10.2"

#: Set to ``1`` in the environment of the book's build kernels (and the test suite's own
#: run of the notebooks): there a claim that does not hold raises :class:`ClaimError`.
STRICT_ENV = "JAXGUIDE_STRICT_CLAIMS"

#: How the line :func:`claim` prints for a claim that does not hold (outside a strict
#: build) begins; :func:`failed_claims` finds such lines by it.
FAILED_MARK = "✗ "
# Where the standard explanation of that line begins (cut off by failed_claims).
_FAILED_TAIL = "; this run (JAX"

# The keys whose lines claim() and glue() print outside the build (show_only); None: all.
_SHOWN: frozenset[str] | None = None


def show_only(keys: Iterable[str] | None) -> None:
    """Outside the book's build, :func:`claim` and :func:`glue` print their line only
    for ``keys``: the values a notebook's text quotes, and so points the reader to. A
    claim that does not hold always prints. ``None`` prints every line again (the
    default). Each Colab notebook calls it in a hidden cell before its first check; the
    build needs no call (it glues, and prints nothing).

    Args:
        keys: the keys to print, or None for all.

    Returns:
        Nothing.

    Raises:
        TypeError: ``keys`` is a single str, or holds something that is not a str.

    Example:
        >>> show_only(["answer"])
        >>> glue("answer", 42)
        answer: 42
        >>> glue("bookkeeping", 7)    # not quoted: nothing printed
        >>> show_only(None)
    """
    global _SHOWN
    if keys is None:
        _SHOWN = None
        return
    if isinstance(keys, str):
        raise TypeError(
            f"show_only(keys={keys!r}): keys must be a list of keys, not one str; pass [{keys!r}]."
        )
    chosen = list(keys)
    for key in chosen:
        _checks.string("show_only", "keys", key, example="['worst_grad']")
    _SHOWN = frozenset(chosen)


def _shown(key: str) -> bool:
    return _SHOWN is None or key in _SHOWN


# Set when jaxguide is first imported: a chapter's first cell imports it.
_STARTED = time.perf_counter()


def _myst_glue() -> Callable[..., None] | None:
    """myst-nb's ``glue`` inside a notebook kernel where myst-nb is installed (the
    book's build), or None elsewhere (Colab, a plain Python, a doctest)."""
    try:
        from IPython import get_ipython
        from myst_nb import glue as _glue
    except ImportError:
        return None
    return _glue if get_ipython() is not None else None


def glue(key: str, value: object, display: bool = False) -> None:
    """Store ``value`` under ``key`` for the book's prose (myst-nb ``glue``).

    In the built book ``{glue:text}`key``` shows it, and the cell shows nothing unless
    ``display`` is true. Where myst-nb is not installed (Colab, a plain Jupyter), there
    is no prose to fill, so it prints ``key: value``: the notebook's prose points to that
    line wherever the page shows the number (a key the text does not quote prints
    nothing after :func:`show_only`).

    Args:
        key: the name the prose refers to, a non-empty string.
        value: what to show: a string, a number, a figure ...
        display: also show the value where the cell runs, in the build.

    Returns:
        Nothing.

    Raises:
        TypeError: ``key`` is not a str, or ``display`` not a bool.
        ValueError: ``key`` is empty.

    Example:
        >>> glue("answer", 42)    # outside a book build: printed for the reader
        answer: 42
    """
    _checks.string("glue", "key", key, example="'speedup'")
    display = _checks.boolean("glue", "display", display)
    _glue = _myst_glue()
    if _glue is None:
        if _shown(key):
            print(f"{key}: {value}")
        return
    _glue(key, value, display=display)


class ClaimError(AssertionError):
    """A claim a page makes about its own outputs does not hold (see :func:`claim`)."""


def _is_bool(value: object) -> bool:
    # bool, or NumPy's bool scalar (what `np.all(...)` and comparisons of arrays give).
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool")


def claim(key: str, value: T, holds: object, expect: str, *, fmt: str = "") -> T:
    """State a claim the prose makes, once: glue ``value`` and check ``holds``.

    A page's checked numbers each live in one hidden cell, as one call::

        claim("worst_grad", worst, worst < 1e-5, "below 1e-5", fmt=".1e")

    The prose shows the glued value (``{glue:text}`worst_grad```); the chapter's tests
    read the value the build glued. In the book's build (where the environment sets
    ``JAXGUIDE_STRICT_CLAIMS=1``) a claim that does not hold raises :class:`ClaimError`,
    so the build stops at that cell. Anywhere else (Colab, a plain Jupyter, a newer JAX
    than the book's) it prints one line, ``✓ key: value (expect)`` (for the keys
    :func:`show_only` leaves in), or, when the claim does not hold there, what differs
    from the book's build, and carries on: the page's prose describes the book's build,
    and the reader's run may differ.

    Args:
        key: the name the prose and the tests use, a non-empty string.
        value: the value the prose shows (a number, a string, a small table ...).
        holds: whether the claim holds: a bool (``np.bool_`` too); pass ``bool(...)``
            of a JAX array.
        expect: what the prose relies on, in words (``"below 1e-5"``), for messages.
        fmt: a format spec for the glued text (``".1e"``, ``".0%"``); empty glues the
            value itself.

    Returns:
        ``value``, so a claim can stand where the value is first computed.

    Raises:
        ClaimError: in the book's build, when ``holds`` is false.
        TypeError: ``key`` or ``expect`` is not a str, ``fmt`` is not a str,
            or ``holds`` is not a bool.
        ValueError: ``key`` or ``expect`` is empty, or ``fmt`` does not format ``value``.

    Example:
        >>> claim("answer", 42, 42 == 6 * 7, "six times seven")   # outside a build
        ✓ answer: 42 (six times seven)
        42
    """
    _checks.string("claim", "key", key, example="'worst_grad'")
    _checks.string("claim", "expect", expect, example="'below 1e-5'")
    _checks.instance("claim", "fmt", fmt, str, what="a format spec str such as '.1e'")
    if not _is_bool(holds):
        raise _checks.wrong_type(
            "claim",
            "holds",
            holds,
            "a bool",
            "pass bool(...) of the condition (for a JAX array, bool(jnp.all(...)))",
        )
    try:
        shown: object = format(value, fmt) if fmt else value
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"claim(fmt={fmt!r}): cannot format the {type(value).__name__} value of "
            f"{key!r} with it ({e}); pass a spec that fits the value, or ''."
        ) from None
    ok = bool(holds)
    strict = os.environ.get(STRICT_ENV) == "1"
    _glue = _myst_glue()
    if _glue is not None:
        _glue(key, shown, display=False)
    if ok:
        if _glue is None and _shown(key):
            print(f"✓ {key}: {shown} ({expect})")
        return value
    if strict:
        raise ClaimError(f"claim {key!r} does not hold: expected {expect}, got {shown}")
    import jax

    print(
        f"{FAILED_MARK}{key}: {shown}, where the book's build (JAX {BOOK_JAX}) found it "
        f"{expect}{_FAILED_TAIL} {jax.__version__}) differs, so the prose near this cell "
        "describes the book's build, not this run. Carrying on."
    )
    return value


@contextlib.contextmanager
def checking(keys: Iterable[str]) -> Iterator[None]:
    """A block that computes and checks ``keys``, and that an error does not stop
    outside the book's build.

    :func:`claim` reports a condition that fails on the reader's JAX and carries on, but
    the code that computes a value can fail first (a line of a compiled program not
    found, a name a newer JAX moved). Each Colab notebook runs its hidden checks inside
    this block: outside a strict build an exception there prints one line in
    :func:`claim`'s form (it begins with :data:`FAILED_MARK`, so :func:`failed_claims`
    reads it) and the notebook carries on; the visible cells never read a name only a
    hidden cell defines. In the book's build it changes nothing: the error stops the
    build at its cell.

    Args:
        keys: the keys the block claims or glues, named in the line it prints.

    Returns:
        A context manager; the block runs inside it.

    Raises:
        TypeError: ``keys`` is not a list or tuple of str (a single str among them).

    Example:
        >>> with checking(["rows"]):
        ...     rows = "no such line".split()[5]
        ✗ rows: not computed (IndexError: list index out of range), where the book's build (JAX 0.10.2) computed it; this run (JAX ...) raised instead, so the prose near this cell describes the book's build, not this run. Carrying on.
    """
    example = f"[{keys!r}] (a list of keys)" if isinstance(keys, str) else "['rows']"
    names = ", ".join(
        _checks.strings(
            "checking", "keys", keys, what="a list of str", example=example, kinds=(list, tuple)
        )
    )
    names = names or "these checks"
    try:
        yield
    except Exception as error:
        if os.environ.get(STRICT_ENV) == "1":
            raise
        import jax

        print(
            f"{FAILED_MARK}{names}: not computed ({type(error).__name__}: {error}), "
            f"where the book's build (JAX {BOOK_JAX}) computed it{_FAILED_TAIL} "
            f"{jax.__version__}) raised instead, so the prose near this cell describes "
            "the book's build, not this run. Carrying on."
        )


def failed_claims(printed: str | Iterable[str]) -> list[str]:
    """The claims that did not hold in a run outside a strict build, read from what it
    printed: each line that :func:`claim` printed for one (it begins with
    :data:`FAILED_MARK`), without its standard tail ("; this run (JAX ...) differs ...").
    What the tools that run notebooks on another JAX or an accelerator report
    (tools/check_jax_newest.py, bench/accelerator_check.py).

    Args:
        printed: printed text, or several texts (a notebook's outputs), each of one
            line or many.

    Returns:
        Each such line, stripped, in order: ``✗ key: value, where the book's build
        (JAX ...) found it expect``.

    Example:
        >>> out = ("✓ rows: 3 (three rows)\\n"
        ...        "✗ err: 3e-05, where the book's build (JAX 0.10.2) found it below 1e-5; "
        ...        "this run (JAX 0.12.0) differs, so the prose ... Carrying on.\\n")
        >>> failed_claims(out)
        ["✗ err: 3e-05, where the book's build (JAX 0.10.2) found it below 1e-5"]
    """
    texts = [printed] if isinstance(printed, str) else printed
    return [
        line.strip().split(_FAILED_TAIL)[0]
        for text in texts
        for line in text.splitlines()
        if line.lstrip().startswith(FAILED_MARK)
    ]


@dataclass(frozen=True)
class Provenance:
    """What produced a page; :meth:`summary` says it in one sentence.

    Attributes:
        jax_version, jaxlib_version: the running JAX and jaxlib.
        backend: JAX's default backend (``'cpu'``, ``'gpu'``, ``'tpu'``).
        device_count, device_kinds: how many devices, and their kinds.
        executed_at: when, in UTC to the minute.
        seconds: time since ``jaxguide`` was imported (the page's cells).
    """

    jax_version: str
    jaxlib_version: str
    backend: str
    device_count: int
    device_kinds: tuple[str, ...]
    executed_at: str
    seconds: float

    def summary(self) -> str:
        """One sentence: versions, devices, when and how long."""
        return (
            f"JAX {self.jax_version}, jaxlib {self.jaxlib_version}, "
            f"{self.device_count} {self.backend.upper()} device{'s' if self.device_count != 1 else ''} "
            f"({', '.join(self.device_kinds)}); executed {self.executed_at}, its cells running for "
            f"{self.seconds:.1f} s (from import jaxguide; kernel start-up not included)"
        )

    def __repr__(self) -> str:
        return f"Provenance({self.summary()})"

    def _repr_html_(self) -> str:
        return (
            '<div class="jaxguide-provenance"><strong>How this page was produced:</strong> '
            f"every output below was computed when the page was built, with {html.escape(self.summary())}."
            "</div>"
        )


def provenance() -> Provenance:
    """Describe the running JAX and how long since ``jaxguide`` was imported.

    Starts JAX if it has not started (call it at the end of a chapter).

    Returns:
        A :class:`Provenance`; in a notebook it displays as the page's box.

    Example:
        >>> provenance().device_count >= 1
        True
    """
    import jax
    import jaxlib

    devices = jax.devices()
    return Provenance(
        jax_version=jax.__version__,
        jaxlib_version=jaxlib.__version__,
        backend=jax.default_backend(),
        device_count=len(devices),
        device_kinds=tuple(sorted({d.device_kind for d in devices})),
        executed_at=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        seconds=time.perf_counter() - _STARTED,
    )
