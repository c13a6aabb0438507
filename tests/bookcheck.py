"""What the tests share (test modules import this, never each other).

- The book's pages: :func:`chapters`, :func:`toc_parts`, :func:`executed_chapters`
  (from ``_toc.yml`` and the chapters' sources).
- Checks on executed chapter notebooks (``_build/jupyter_execute/*.ipynb``):
  :func:`problems`, :func:`should_output`; a build log: :func:`assert_quiet`.
- Readers of a built chapter, for the per-chapter tests: :func:`glued`,
  :func:`page_text`, :func:`images`, :func:`cell_output`, :func:`errors`,
  :func:`seconds`, :data:`VERDICT` (CONTRIBUTING.md, "One home for every claim", says
  which of them a chapter's test may use for what).
- A built book (:class:`BuiltBook`, what the ``book`` fixture hands out) and a Jupyter
  Book runner (:func:`jupyter_book`).

The suite's order and its marker rules are the test session's: tests/timeline.py.

Kept as plain functions so that tests/test_bookcheck.py can show each check fails on
a bad notebook: a check that cannot fail would prove nothing about the book.
"""

from __future__ import annotations

import ast
import copy
import functools
import gc
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from bs4 import BeautifulSoup, Tag

from jaxguide_build import toc
from jaxguide_build.environment import ROOT
from jaxguide_build.outputs import (  # noqa: F401  (re-exported for the tests)
    ANSI,
    comparable_outputs,
    output_differences,
    source,
    tags,
)


class BuiltBook:
    """A built book: the folder a ``jupyter-book build --path-output`` wrote (``out``),
    with the build's log and wall time when this session built it (the ``book`` fixture,
    tests/conftest.py); the readers below take one."""

    def __init__(self, out: Path, log: str = "", seconds: float = 0.0) -> None:
        self.out = out
        self.html = out / "_build" / "html"  # the site
        self.executed = out / "_build" / "jupyter_execute"  # the executed notebooks
        self.log = log
        self.seconds = seconds

    def page(self, name: str) -> str:
        """The HTML of page ``name``."""
        return (self.html / f"{name}.html").read_text()

    def notebook(self, name: str) -> Path:
        """The executed notebook of chapter ``name``."""
        return self.executed / f"{name}.ipynb"


WARNING_RE = re.compile(r"\b[A-Z][A-Za-z]*Warning\b")
RAISES = "raises-exception"

# The front matter that makes a MyST markdown page an executed notebook (pages of
# planted or throw-away test books use it).
MYST_HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


# --- The book's pages ---


def chapters() -> list[str]:
    """Every page named in _toc.yml (the root and all chapters), in reading order."""
    return toc.pages()


def toc_parts() -> dict[str, list[str]]:
    """{part caption: [chapter, ...]} in _toc.yml's order."""
    return {part.caption: list(part.pages) for part in toc.parts()}


def executed_chapters() -> list[str]:
    """Chapters that run code at build time (their front matter has a kernelspec)."""
    return [
        c
        for chapters in toc_parts().values()
        for c in chapters
        if "kernelspec:" in (ROOT / "book" / f"{c}.md").read_text().split("\n---", 1)[0]
    ]


#: Build log noise that has a cause the build removes (issue 16, "Quieter builds"):
#: ipykernel's warning about TCP (the build's kernels use IPC sockets), Sphinx's
#: warning that the theme's webpack macros template overwrites data, a request to
#: report a Sphinx bug for a failing cell, and any text of JAX's compilation cache.
NOISE = (
    "Kernel is running over TCP",
    "without encryption",
    "will overwrite data",
    "Please also report this",
    "persistent compilation cache",
    "Persistent compilation cache",
    "PERSISTENT COMPILATION CACHE",
)


def assert_quiet(log: str) -> None:
    """Fail if a build's log shows any of the :data:`NOISE`."""
    found = [n for n in NOISE if n in log]
    assert not found, f"the build log has {found}:\n{log[-3000:]}"


#: A question bank entry's thread: a question someone asked on one of the four projects'
#: issues or discussions (no pull requests). The tests' own copy: tools/make_questions.py
#: has the one it validates the bank with.
THREAD = re.compile(
    r"^https://github\.com/(jax-ml/jax|google/flax|google-deepmind/optax|google/orbax)"
    r"/(issues|discussions)/\d+$"
)


#: The longest a build of the whole book may take, in seconds: a test waits no longer for
#: one (tests/bookbuild.py, tests/wheelrun.py, :func:`jupyter_book`).
BUILD_TIMEOUT = 1500


def jupyter_book(
    *args: str, cwd: Path = ROOT, timeout: int = BUILD_TIMEOUT
) -> subprocess.CompletedProcess:
    """Run the Jupyter Book CLI of the interpreter running the tests."""
    exe = Path(sys.executable).parent / "jupyter-book"
    return subprocess.run(
        [str(exe), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def _stamp(path: Path | str) -> tuple[str, int, int]:
    """What a cache of a built file is keyed on: its path, and its modification time and
    size, so that a file rewritten by a new build is read again."""
    path = Path(path).resolve()
    stat = path.stat()
    return str(path), stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=64)
def _load(stamp: tuple[str, int, int]) -> dict:
    return json.loads(Path(stamp[0]).read_text())


def load(path: Path) -> dict:
    """A notebook (or any JSON file), read once per version of the file: every caller
    gets the same dict, so treat it as read-only."""
    return _load(_stamp(path))


def output_text(output: dict) -> str:
    """All text an output shows a reader (stream, text/plain, errors)."""
    if output["output_type"] == "stream":
        text = output.get("text", "")
        return "".join(text) if isinstance(text, list) else text
    if output["output_type"] == "error":
        return ANSI.sub("", "\n".join(output.get("traceback", [])))
    data = output.get("data", {})
    parts = []
    for mime in ("text/plain", "text/html", "text/markdown"):
        value = data.get(mime, "")
        parts.append("".join(value) if isinstance(value, list) else value)
    return "\n".join(parts)


def should_output(cell: dict) -> bool:
    """Does this code cell visibly print, plot or end in a displayed expression?"""
    if "remove-output" in tags(cell) or "remove-cell" in tags(cell):
        return False
    try:
        tree = ast.parse(source(cell))
    except SyntaxError:
        return True

    def outside_definitions(node: ast.AST) -> Iterator[ast.AST]:
        """The nodes of ``node`` that run when the cell runs: not a function's or a
        class's body, which only a later call runs."""
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                yield child
                yield from outside_definitions(child)

    for node in outside_definitions(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            if name in {"print", "show", "display"}:
                return True
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        value = tree.body[-1].value
        call = value.func if isinstance(value, ast.Call) else None
        called = getattr(call, "id", None) or getattr(call, "attr", None)
        return called not in {
            "glue",
            "print",
            "set_title",
            "legend",
            "tight_layout",
            "defvjp",
            "defjvp",
        }
    return False


def next_markdown(cells: list[dict], i: int) -> str:
    """The prose right after cell ``i`` (where a chapter explains an error it showed)."""
    for cell in cells[i + 1 :]:
        if cell["cell_type"] == "markdown":
            return source(cell)
    return ""


def problems(nb: dict) -> list[str]:
    """Everything wrong with one executed notebook, as readable lines."""
    found = []
    cells = nb["cells"]
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        head = f"cell {i} ({source(cell).strip().splitlines()[0][:60] if source(cell).strip() else 'empty'!r})"
        outputs = cell.get("outputs", [])
        errors = [o for o in outputs if o["output_type"] == "error"]
        if RAISES in tags(cell):
            if not errors:
                found.append(f"{head}: tagged {RAISES} but raised nothing")
            for err in errors:
                if err["ename"] not in next_markdown(cells, i):
                    found.append(
                        f"{head}: raised {err['ename']}, which the prose after it does not name"
                    )
        elif errors:
            found.append(
                f"{head}: unexpected {errors[0]['ename']}: {errors[0].get('evalue', '')[:200]}"
            )
        for out in outputs:
            text = output_text(out)
            if out["output_type"] != "error" and "Traceback (most recent call last)" in text:
                found.append(f"{head}: a traceback in its output")
            match = WARNING_RE.search(text) if out["output_type"] != "error" else None
            if match:
                found.append(f"{head}: a warning in its output: {match.group(0)}")
            if out["output_type"] == "stream" and out.get("name") == "stderr" and text.strip():
                found.append(f"{head}: wrote to stderr: {text.strip()[:200]!r}")
        if should_output(cell) and not outputs:
            found.append(f"{head}: should print or plot but has no output")
    return found


# --- The book's highlighted code (for the browser's colour checks, tests/test_browser.py) ---


def highlight_kinds(soup: BeautifulSoup) -> set[tuple[str, str]]:
    """Each pairing on a page of a syntax-highlighted block's kind (code cell, output,
    or a literal block in the prose, with its language) and a token class inside it
    (``""``: its plain text), the pairs whose colours axe-core's contrast rule checks."""
    kinds = set()
    for block in soup.select("div.highlight"):
        where = "input" if block.find_parent(class_="cell_input") else "output"
        if not block.find_parent(class_="cell"):
            where = "prose"
        language = block.parent.get_attribute_list("class") if block.parent else []
        kind = f"{where} {' '.join(language)}"
        tokens = {" ".join(t.get_attribute_list("class")) for t in block.select("span[class]")}
        kinds |= {(kind, "")} | {(kind, token) for token in tokens}
    return kinds


@functools.cache
def code_colour_pages(html: Path) -> tuple[str, ...]:
    """The fewest pages (chosen greedily) whose highlighted blocks show every pairing of
    :func:`highlight_kinds` in the book. axe-core's contrast rule spends most of its time
    on the thousands of coloured tokens of a chapter's code, which repeat the same few
    dozen colours on every page: it checks code and outputs on these pages only (in
    light and dark mode), and every other page without them."""
    pages = {p.stem: highlight_kinds(parsed_file(p)) for p in sorted(html.glob("*.html"))}
    left = set().union(*pages.values())
    chosen: list[str] = []
    while left:
        best = max(sorted(pages), key=lambda p: len(pages[p] & left))
        chosen.append(best)
        left -= pages[best]
    return tuple(chosen)


# --- Reading a built chapter (used by the per-chapter tests, tests/test_chapter_*.py) ---

# A timing verdict as jaxguide.compare(..., prose=True) words it.
VERDICT = r"((?:\d\.\d|\d\d+)× (?:faster|slower) than|as fast, within 10%, as)"


def glued(book: BuiltBook, chapter: str) -> dict:
    """The values a chapter glued into its prose, as Python values: a deep copy on each
    call, so a test may change what it gets (the file is read and its values parsed
    once per build)."""
    return copy.deepcopy(_glued(_stamp(book.executed / f"{chapter}.glue.json")))


@functools.lru_cache(maxsize=64)
def _glued(stamp: tuple[str, int, int]) -> dict:
    raw = json.loads(Path(stamp[0]).read_text())
    values = {}
    for key, output in raw.items():
        text = output["data"].get("text/plain", "")
        try:
            values[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            values[key] = text
    return values


# A chapter's page is parsed once per build, not once per assertion: about a hundred
# tests read the same twenty pages (re-parsing each took most of their time). A parsed
# page is a few hundred thousand objects kept to the session's end; the garbage
# collector's full passes walked all of them again and again (a fifth of the book
# tests' time), so everything alive once a page is parsed, the page among them, is
# frozen out of its sight (gc.freeze: what it froze is never collected; the pages are
# kept to the end anyway, and the rest is what the session held at that moment).
@functools.lru_cache(maxsize=64)
def _soup(stamp: tuple[str, int, int]) -> BeautifulSoup:
    soup = BeautifulSoup(Path(stamp[0]).read_text(), "html.parser")
    gc.freeze()
    return soup


@functools.lru_cache(maxsize=64)
def _page_text(stamp: tuple[str, int, int]) -> str:
    return " ".join(_soup(stamp).get_text(" ").split())


def parsed_file(path: Path) -> BeautifulSoup:
    """A built HTML file, parsed once per version of the file (every caller shares it:
    read it, do not change it)."""
    return _soup(_stamp(path))


def parsed_page(book: BuiltBook, chapter: str) -> BeautifulSoup:
    """A chapter's page, parsed once per build (every caller shares it: read it, do not
    change it)."""
    return _soup(_stamp(book.html / f"{chapter}.html"))


def page_text(book: BuiltBook, chapter: str) -> str:
    """The text a reader sees on a chapter's page, its whitespace collapsed."""
    return _page_text(_stamp(book.html / f"{chapter}.html"))


@functools.lru_cache(maxsize=64)
def _prose_text(stamp: tuple[str, int, int]) -> str:
    soup = BeautifulSoup(str(_soup(stamp)), "html.parser")  # a copy: callers share _soup's
    for cell in soup.select("div.cell"):
        cell.decompose()
    return " ".join(soup.get_text(" ").split())


def prose_text(book: BuiltBook, chapter: str) -> str:
    """The prose of a chapter's page, without its code cells (their code and outputs),
    its whitespace collapsed: what a retired sentence (a chapter test's ``RETIRED``) is
    looked for in, so that an output that happens to print the same words does not
    count."""
    return _prose_text(_stamp(book.html / f"{chapter}.html"))


def images(book: BuiltBook, chapter: str) -> list[Tag]:
    """The images of a chapter's cell outputs (BeautifulSoup tags: read them, do not
    change them, as every caller shares them)."""
    return parsed_page(book, chapter).select("div.cell_output img")


UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def seconds(text: str) -> float:
    """Seconds from a duration as ``jaxguide.format_seconds`` writes it ('2.65 s')."""
    value, unit = text.split()
    return float(value) * UNITS[unit]


def cell_output(book: BuiltBook, chapter: str, marker: str) -> str:
    """The printed output of the one code cell of ``chapter`` whose source contains
    ``marker`` (ANSI colours removed)."""
    cells = [
        c
        for c in load(book.notebook(chapter))["cells"]
        if c["cell_type"] == "code" and marker in source(c)
    ]
    assert len(cells) == 1, (chapter, marker, len(cells))
    return ANSI.sub("", "".join(output_text(o) for o in cells[0].get("outputs", [])))


class Raised(NamedTuple):
    """An error a code cell of an executed notebook shows."""

    name: str  # the exception's class name, e.g. "TypeError"
    message: str  # its message (the traceback's last line, without the name)
    source: str  # the source of the cell that raised it
    cell: int  # the cell's index among the notebook's code cells


def raised_in(nb: dict) -> list[Raised]:
    """Every error the code cells of notebook ``nb`` show, in order."""
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    return [
        Raised(o["ename"], o.get("evalue", ""), source(c), i)
        for i, c in enumerate(code)
        for o in c.get("outputs", [])
        if o["output_type"] == "error"
    ]


def errors(book: BuiltBook, chapter: str) -> list[Raised]:
    """Every error the executed notebook of ``chapter`` shows, in order: what its
    ``raises-exception`` cells raised (:func:`problems` reports any other)."""
    return raised_in(load(book.notebook(chapter)))
