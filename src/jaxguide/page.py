"""Helpers that only matter to a page being built: glued values and provenance.

* :func:`glue` stores a value under a key for the prose (myst-nb's ``glue``), and does
  nothing (or prints) where myst-nb is absent, so chapters run unchanged in Colab.
* :func:`provenance` says what produced a page: JAX and jaxlib versions, backend,
  devices, when and how long. The book's chapters end with a hidden cell that glues
  it into a small box at the top of the page.

Both are also available as ``jaxguide.glue`` and ``jaxguide.provenance``.

Example:
    >>> from jaxguide.page import provenance
    >>> p = provenance()
    >>> p.jax_version == __import__("jax").__version__
    True
"""

from __future__ import annotations

import datetime
import html
import time
from dataclasses import dataclass

from jaxguide import _checks

__all__ = ["Provenance", "glue", "provenance"]

# Set when jaxguide is first imported: a chapter's first cell imports it.
_STARTED = time.perf_counter()


def glue(key: str, value: object, display: bool = False) -> None:
    """Store ``value`` under ``key`` for the book's prose (myst-nb ``glue``).

    In the built book ``{glue:text}`key``` shows it. Where myst-nb is not installed
    (Colab, a plain Jupyter), it shows the value if ``display`` is true and otherwise
    does nothing, so chapters run unchanged there.

    Args:
        key: the name the prose refers to, a non-empty string.
        value: what to show: a string, a number, a figure ...
        display: also show the value where the cell runs.

    Returns:
        Nothing.

    Raises:
        TypeError: ``key`` is not a str, or ``display`` not a bool.
        ValueError: ``key`` is empty.

    Example:
        >>> glue("answer", 42)    # outside a notebook being built: no output
    """
    _checks.string("glue", "key", key, example="'speedup'")
    display = _checks.boolean("glue", "display", display)
    try:
        from myst_nb import glue as _glue
    except ImportError:
        if display:
            print(f"{key} = {value}")
        return
    _glue(key, value, display=display)


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
