"""The chapters' Colab notebooks, ``notebooks/<chapter>.ipynb``, made from their MyST
source (:func:`notebook`), and written or checked up to date (:func:`update`, which
``tools/make_notebooks.py`` runs: ``make notebooks``). The checks that run the chapters
outside the build (tools/check_jax_floor.py, bench/accelerator_check.py) run these
notebooks too. Each function reads the book of the checkout ``root``, by default this
one (:data:`~jaxguide_build.environment.ROOT`).

The notebooks are never edited by hand. Each is the chapter read with jupytext, plus:

* a first cell that, only inside Colab, installs jaxguide from the repository at the
  tag of this version (``v<version>`` from pyproject.toml), leaving Colab's own jax
  and jaxlib alone (jaxguide depends on a jax floor, not a pin), and stops the notebook
  with a message saying what to do if the install fails;
* build-only parts removed: the provenance box, the cell that glues it, and MyST
  cross-reference targets such as ``(numpy)=``;
* every MyST construct turned into what a notebook shows (Colab renders plain
  markdown only): exercises become numbered headings, solutions a collapsed
  ``<details>`` block and code cells hidden behind a Colab form title; ``{ref}`` and
  ``{doc}`` become links to the published page; admonitions become quotes;
  ``literalinclude`` becomes the included code, fenced; a ``{glue:text}`` value becomes
  the value's name and a pointer to the cell that prints it (outside the build,
  ``jaxguide.glue`` and ``jaxguide.claim`` print what they store). A construct it does
  not know stops it with an error;
* a second cell, folded, that keeps the hidden checks quiet but for the values the
  prose quotes (``jaxguide.page.show_only``: :func:`quiet_cell`);
* the page's hidden cells (checks, glued values, the code of a figure shown alone)
  collapsed behind a Colab form title: their output shows, their code on a click; a
  hidden check cell runs inside ``jaxguide.page.checking`` (:func:`guarded`), so an
  error on the reader's JAX says what was not computed and the notebook carries on;
* no outputs, no jupytext front matter, and cell ids derived from the position, so
  that regenerating an unchanged chapter gives a byte-identical file.

The repository (owner, name, branch) is read from _config.yml, where it is written once.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import jupytext
import nbformat
import yaml

from . import toc
from .environment import ROOT

#: Where the notebooks are committed (``make notebooks`` writes them there).
FOLDER = ROOT / "notebooks"

PROVENANCE_BOX = re.compile(r"```\{glue\} provenance\n```\n*")
TARGET_LABEL = re.compile(r"^\([\w-]+\)=\n", re.M)  # MyST cross-reference targets
BUILD_ONLY = 'jaxguide.glue("provenance"'
# A directive: ```{name} argument / :::{name} argument, its options, its body, its fence.
DIRECTIVE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$\n?",
    re.S | re.M,
)
# A role: {name}`text`. Not inside inline code: `{V:x}` (a type JAX prints, quoted in
# backticks) starts with a backtick and is left as it is.
ROLE = re.compile(r"(?<!`)\{(?P<name>[\w:-]+)\}`(?P<text>[^`]*)`")
ADMONITIONS = {
    "note",
    "tip",
    "warning",
    "important",
    "caution",
    "attention",
    "danger",
    "error",
    "hint",
    "seealso",
    "admonition",
    "dropdown",
    "margin",
}
#: What is left of MyST in a notebook's markdown if the conversion missed something.
MYST_LEFT = re.compile(r"^(`{3,}|:{3,})\{[\w:-]+\}|(?<!`)\{[\w:-]+\}`|^\([\w-]+\)=\s*$", re.M)


SOLUTION_END = "\x00E\x00"


class ConversionError(ValueError):
    """A chapter uses a MyST construct the notebook generator cannot convert."""


def site_url(root: Path = ROOT) -> str:
    """The published book's address: ``html.baseurl`` in _config.yml."""
    url = yaml.safe_load((root / "_config.yml").read_text()).get("html", {}).get("baseurl", "")
    if not url.startswith("https://"):
        raise SystemExit(
            f"_config.yml html.baseurl must be the published site's https:// address, got {url!r}"
        )
    return url.rstrip("/") + "/"


def labels(root: Path = ROOT) -> dict[str, tuple[str, str, bool]]:
    """Every ``(label)=`` target of the book: label -> (page, title, is the page's title)."""
    found = {}
    for path in sorted((root / "book").glob("*.md")):
        for match in re.finditer(r"^\(([\w-]+)\)=\s*\n+(#+)\s+(.+)$", path.read_text(), re.M):
            title = re.sub(r"[`*]", "", match.group(3)).strip()
            found[match.group(1)] = (path.stem, title, len(match.group(2)) == 1)
    return found


def page_title(page: str, root: Path = ROOT) -> str:
    match = re.search(r"^#\s+(.+)$", (root / "book" / f"{page}.md").read_text(), re.M)
    return re.sub(r"[`*]", "", match.group(1)).strip() if match else page


#: The calls that store a value for the prose (``jaxguide.glue``, ``jaxguide.claim``).
GLUING = ("glue", "claim")
#: Tags of the cells the web page hides; a notebook collapses them behind a form title.
HIDDEN = ("remove-cell", "remove-input", "hide-input", "hide-cell")
#: A value the prose quotes: ``{glue:text}`key``` (or ``key:format``).
QUOTED = re.compile(r"\{glue:text\}`([^`:]+)")


#: How a notebook runs a hidden check cell (one tagged ``remove-cell`` that glues or
#: claims): inside ``jaxguide.page.checking``, so that an error in computing a value on
#: the reader's JAX prints what was not computed and the notebook carries on.
CHECKING = "with jaxguide.page.checking("


def guarded(source: str, keys: list[str]) -> str:
    """``source`` inside ``with jaxguide.page.checking(keys):``, or unchanged where
    indenting it could change what it does: a line magic or shell line, or a
    triple-quoted string (whose text would gain the indent).

    >>> print(guarded("x = f()\\nprint(x)", ["x"]))
    with jaxguide.page.checking(['x']):
        x = f()
        print(x)
    """
    if re.search(r"^\s*[%!]", source, re.M) or '"""' in source or "'''" in source:
        return source
    body = "".join(f"    {line}" if line.strip() else line for line in source.splitlines(True))
    return f"{CHECKING}{keys!r}):\n{body}"


def unguarded(source: str) -> str:
    """The cell :func:`guarded` was given: the inverse, for tests."""
    if not source.startswith(CHECKING):
        return source
    body = source.split("\n", 1)[1]
    return "".join(line[4:] if line.strip() else line for line in body.splitlines(True))


def quoted_keys(source: str) -> list[str]:
    """The keys of the glued values a chapter's prose quotes, sorted."""
    return sorted(set(QUOTED.findall(source)))


def glued_code(code_cells: list[str]) -> dict[str, str]:
    """key -> the source of the value each ``glue("key", value)`` or
    ``claim("key", value, ...)`` call stores.

    >>> glued_code(['jaxguide.claim("gap", abs(a - b), abs(a - b) < 1e-5, "small")'])
    {'gap': 'abs(a - b)'}
    """
    found = {}
    for src in code_cells:
        if not any(f"{name}(" in src for name in GLUING):
            continue  # no call to either: nothing to parse (most cells)
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and len(node.args) >= 2
                and getattr(node.func, "attr", getattr(node.func, "id", "")) in GLUING
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found[node.args[0].value] = ast.get_source_segment(src, node.args[1]) or ""
    return found


def included(arg: str, options: dict[str, str], chapter: Path, root: Path = ROOT) -> str:
    """The code a ``literalinclude`` shows, as a fenced block naming its file."""
    path = (chapter.parent / arg.strip()).resolve()
    text = path.read_text()
    if "pyobject" in options:
        tree = ast.parse(text)
        node = next(
            (
                n
                for n in ast.walk(tree)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.name == options["pyobject"]
            ),
            None,
        )
        if node is None:
            raise ConversionError(f"literalinclude: {options['pyobject']} not found in {path.name}")
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        text = "\n".join(text.splitlines()[start - 1 : node.end_lineno])
    elif "lines" in options:
        lo, _, hi = options["lines"].partition("-")
        text = "\n".join(text.splitlines()[int(lo) - 1 : int(hi or lo)])
    name = path.relative_to(root / "src") if path.is_relative_to(root / "src") else path.name
    return f"From `{name}`:\n\n```python\n{text.strip()}\n```\n"


def split_options(body: str) -> tuple[dict[str, str], str]:
    """A directive's ``:key: value`` options and the rest of its body."""
    options, lines = {}, body.splitlines()
    while lines and re.match(r"^:[\w-]+:", lines[0]):
        key, _, value = lines.pop(0)[1:].partition(":")
        options[key] = value.strip()
    return options, "\n".join(lines).strip("\n")


EXERCISE_START = re.compile(r"^```\{exercise-start\}[^\n]*\n((?::[^\n]*\n)*)", re.M)


def exercise_numbers(text: str) -> dict[str, int]:
    """Each exercise's label (``exercise-N`` without one) and its number, in the order
    the chapter states them: what a reference to an exercise links to, before or after
    the exercise itself."""
    numbers: dict[str, int] = {}
    for n, match in enumerate(EXERCISE_START.finditer(text), start=1):
        label = re.search(r"^:label:\s*(\S+)", match.group(1), re.M)
        numbers[label.group(1) if label else f"exercise-{n}"] = n
    return numbers


class Converter:
    """Turns one chapter's markdown cells into plain markdown, cell by cell, keeping the
    state the gated exercise directives need (which exercise or solution we are in)."""

    def __init__(self, name: str, code_cells: list[str], root: Path = ROOT):
        self.name, self.root, self.chapter = name, root, root / "book" / f"{name}.md"
        self.site, self.labels = site_url(root), labels(root)
        self.glued = glued_code(code_cells)
        self.exercises: dict[str, int] = {}  # the exercises converted so far
        # Every exercise of the chapter, numbered in order: a reference may come first.
        self.numbered = exercise_numbers(self.chapter.read_text(encoding="utf-8"))
        self.in_solution = 0  # the exercise number whose solution we are in, or 0
        self.printed: set[str] = set()  # keys glued by the code cells converted so far
        self.quoted = set(quoted_keys(self.chapter.read_text(encoding="utf-8")))

    def link(self, target: str, text: str | None) -> str:
        if target in self.labels:
            page, title, top = self.labels[target]
            url = f"{self.site}{page}.html" + ("" if top else f"#{target}")
            return f"[{text or title}]({url})"
        if target in self.numbered:
            return text or f"exercise {self.numbered[target]}"
        raise ConversionError(f"{self.name}: reference to an unknown label {target!r}")

    def role(self, match: re.Match) -> str:
        name, text = match.group("name"), match.group("text")
        explicit = re.fullmatch(r"(.*?)\s*<([^>]+)>", text, re.S)
        label, target = (explicit.group(1), explicit.group(2)) if explicit else (None, text)
        if name == "ref":
            return self.link(target, label)
        if name == "doc":
            page = target.removesuffix(".md").lstrip("/")
            return f"[{label or page_title(page, self.root)}]({self.site}{page}.html)"
        if name == "glue:text" or name == "glue":
            key = target.split(":")[0]
            if key not in self.glued:
                raise ConversionError(f"{self.name}: {{glue:text}} of {key!r}, which no cell glues")
            where = "above" if key in self.printed else "below"
            return f"*{key}* (printed by a cell {where})"
        if name == "math":
            return f"${text}$"
        return f"`{text}`" if name in {"code", "py:func", "func", "class", "mod"} else text

    def directive(self, match: re.Match) -> str:
        name, arg = match.group("name"), match.group("arg").strip()
        options, body = split_options(match.group("body"))
        if name == "exercise-start":
            number = len(self.exercises) + 1
            self.exercises[options.get("label", f"exercise-{number}")] = number
            return f"### Exercise {number}\n"
        if name == "exercise-end":
            return ""
        if name == "solution-end":
            self.in_solution = 0
            return SOLUTION_END
        if name == "solution-start":
            exercise = self.exercises.get(arg)
            if exercise is None:
                raise ConversionError(f"{self.name}: solution to an unknown exercise {arg!r}")
            self.in_solution = exercise
            return f"\x00S{exercise}\x00"
        if name == "literalinclude":
            return included(arg, options, self.chapter, self.root)
        if name in ADMONITIONS:
            title = arg if name in {"admonition", "dropdown"} and arg else name.capitalize()
            text = self.convert(body)
            return (
                "\n".join([f"> **{title}**", ">"] + [f"> {l}".rstrip() for l in text.splitlines()])
                + "\n"
            )
        if name in {"code-block", "code"}:
            return f"```{arg}\n{body}\n```\n"
        if name == "math":
            return f"$$\n{body}\n$$\n"
        raise ConversionError(f"{self.name}: no notebook form for the MyST directive {{{name}}}")

    def convert(self, text: str) -> str:
        text = DIRECTIVE.sub(self.directive, text)
        return ROLE.sub(self.role, text)

    def hide_solutions(self, text: str, inside: int) -> str:
        """Wrap the parts of one markdown cell that belong to a solution in a collapsed
        ``<details>`` block (closed in the same cell: each cell renders on its own)."""
        parts: list[str] = []
        buf: list[str] = []
        state = inside

        def flush() -> None:
            body = "".join(buf).strip("\n")
            buf.clear()
            if body and state:
                parts.append(
                    f"<details>\n<summary>Solution to exercise {state} (click to show)</summary>"
                    f"\n\n{body}\n\n</details>"
                )
            elif body:
                parts.append(body)

        for piece in re.split(r"(\x00S\d+\x00|\x00E\x00)", text):
            if piece.startswith("\x00S") or piece == SOLUTION_END:
                flush()
                state = int(piece[2:-1]) if piece.startswith("\x00S") else 0
            else:
                buf.append(piece)
        flush()
        return re.sub(r"\n{3,}", "\n\n", "\n\n".join(parts))

    def cell(self, cell: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
        """The notebook form of one cell, or None if nothing of it is left."""
        if cell.cell_type == "markdown":
            inside = self.in_solution
            text = self.convert(TARGET_LABEL.sub("", PROVENANCE_BOX.sub("", cell.source)))
            cell.source = self.hide_solutions(text, inside)
            left = MYST_LEFT.search(cell.source)
            if left:
                raise ConversionError(
                    f"{self.name}: MyST left in a markdown cell: {left.group(0)!r}"
                )
            return cell if cell.source.strip() else None
        self.printed |= set(glued_code([cell.source]))
        title = None
        if self.in_solution:  # hidden behind a form title in Colab, until clicked
            title = f"Solution to exercise {self.in_solution} (double-click to show the code)"
        elif set(cell.metadata.get("tags", [])) & set(HIDDEN):
            keys = set(glued_code([cell.source]))
            if keys and "remove-cell" in cell.metadata.get("tags", []):
                cell.source = guarded(cell.source, sorted(keys))
            if keys & self.quoted:
                title = "Checks and values the text quotes (hidden in the book; double-click for the code)"
            elif keys:
                title = "Checks (hidden in the book; double-click for the code)"
            else:
                title = "Hidden in the book (double-click to show the code)"
        if title:
            cell.source = f"# @title {title}" + ' { display-mode: "form" }\n' + cell.source
            fold(cell)
        return cell


def repository(root: Path = ROOT) -> tuple[str, str]:
    """(``https://github.com/<owner>/<name>``, branch) from _config.yml."""
    repo = yaml.safe_load((root / "_config.yml").read_text())["repository"]
    url = repo["url"].rstrip("/")
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url):
        raise SystemExit(
            f"_config.yml repository.url must be https://github.com/<owner>/<name>, got {url!r}"
        )
    return url, repo.get("branch", "main")


def version(root: Path = ROOT) -> str:
    """jaxguide's version (pyproject.toml): the release tag ``v<version>`` is what a
    notebook installs in Colab."""
    return tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]


def chapters(root: Path = ROOT) -> list[str]:
    """Every page of _toc.yml that is a notebook (has code cells), in reading order."""
    names = toc.pages(root / "_toc.yml", root / "book")
    return [n for n in names if "```{code-cell}" in (root / "book" / f"{n}.md").read_text()]


def setup_cell(url: str, tag: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(
        "# Set-up for Google Colab; does nothing anywhere else. Installs this book's companion\n"
        "# package at the release this notebook belongs to, keeping Colab's own jax and jaxlib.\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    spec = "jaxguide @ git+{url}@{tag}"\n'
        '    pip = [sys.executable, "-m", "pip", "install", "--quiet", spec]\n'
        "    done = subprocess.run(pip, capture_output=True, text=True)\n"
        "    if done.returncode != 0:\n"
        "        raise SystemExit(\n"
        '            f"Could not install {spec}:\\n{done.stderr.strip()[-1500:]}\\n\\n"\n'
        '            "Check that this runtime can reach the internet, and that the "\n'
        f'            "release {tag} exists at {url}/releases. Then run this cell "\n'
        '            "again: the rest of the notebook needs jaxguide."\n'
        "        )"
    )


def quiet_cell(keys: list[str]) -> nbformat.NotebookNode:
    """A collapsed cell that keeps the checks quiet but for the values the text quotes
    (``jaxguide.page.show_only``): each of those prints its line, to which the text
    points; a check that fails on the reader's JAX says so in any case."""
    listed = "".join(f"    {key!r},\n" for key in keys)
    cell = nbformat.v4.new_code_cell(
        f"# @title {QUIET_TITLE}" + ' { display-mode: "form" }\n'
        "# The hidden checks below print a line only for the values the text quotes;\n"
        "# one that does not hold on this JAX always says what differs.\n"
        "import jaxguide.page\n\n"
        + (f"jaxguide.page.show_only([\n{listed}])" if keys else "jaxguide.page.show_only([])")
    )
    fold(cell)
    return cell


def fold(cell: nbformat.NotebookNode) -> None:
    """Fold a cell's code away where the notebook is opened: Colab shows a form with the
    cell's title (``cellView``), Jupyter a collapsed input (``jupyter.source_hidden``);
    the output shows in both."""
    cell.metadata["cellView"] = "form"
    cell.metadata["jupyter"] = {"source_hidden": True}


#: The form title of :func:`quiet_cell`.
QUIET_TITLE = "Which checked values this notebook prints (double-click for the code)"


def notebook(name: str, root: Path = ROOT) -> str:
    """The notebook for chapter ``name`` of the book in ``root``, as the exact text
    written to disk.

    A one-page book in a temporary folder: the notebook opens with the Colab set-up and
    the quiet cell, the hidden check runs inside ``checking``, and the prose names the
    value a cell prints.

    >>> import json, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> root = Path(folder.name)
    >>> _ = (root / "_config.yml").write_text(
    ...     "repository: {url: 'https://github.com/o/b'}\\nhtml: {baseurl: 'https://o.io/b/'}\\n"
    ... )
    >>> _ = (root / "pyproject.toml").write_text('[project]\\nversion = "1.0"\\n')
    >>> (root / "book").mkdir()
    >>> _ = (root / "book" / "demo.md").write_text(
    ...     "# Demo\\n\\n```{code-cell} ipython3\\n:tags: [remove-cell]\\n"
    ...     'jaxguide.claim("n", 3, True, "three")\\n```\\n\\nThere are {glue:text}`n`.\\n'
    ... )
    >>> cells = json.loads(notebook("demo", root))["cells"]
    >>> for cell in cells:  # each one's first words
    ...     print(cell["id"], cell["cell_type"], *"".join(cell["source"]).split()[:6])
    demo-0 code # Set-up for Google Colab; does
    demo-1 code # @title Which checked values this
    demo-2 markdown # Demo
    demo-3 code # @title Checks and values the
    demo-4 markdown There are *n* (printed by a
    >>> print("".join(cells[3]["source"]).split("\\n", 1)[1])
    with jaxguide.page.checking(['n']):
        jaxguide.claim("n", 3, True, "three")
    >>> folder.cleanup()
    """
    url, _ = repository(root)
    nb = jupytext.read(root / "book" / f"{name}.md", fmt="md:myst")
    source = (root / "book" / f"{name}.md").read_text(encoding="utf-8")
    cells = [setup_cell(url, f"v{version(root)}"), quiet_cell(quoted_keys(source))]
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    converter = Converter(name, code, root)
    for cell in nb.cells:
        if cell.cell_type == "code" and BUILD_ONLY in cell.source:
            continue
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata = {"tags": cell.metadata["tags"]} if cell.metadata.get("tags") else {}
        cell = converter.cell(cell)
        if cell is not None:
            cells.append(cell)
    for i, cell in enumerate(cells):
        cell.id = f"{name}-{i}"
    out = nbformat.v4.new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "colab": {"name": f"{name}.ipynb", "provenance": []},
        },
    )
    nbformat.validate(out)
    return nbformat.writes(out) + "\n"


def update(
    check: bool = False,
    folder: Path = FOLDER,
    names: list[str] | None = None,
    root: Path = ROOT,
) -> int:
    """Write the notebook of each chapter (``names``, by default every one) into
    ``folder`` where it is missing or differs, and remove those of chapters no longer in
    _toc.yml; with ``check``, only say (on stderr) which are missing, out of date or
    left over. The exit status of ``tools/make_notebooks.py [--check]``: 1 if ``check``
    found any, else 0."""
    folder.mkdir(exist_ok=True)
    names = chapters(root) if names is None else names
    stale = []
    for name in names:
        path = folder / f"{name}.ipynb"
        text = notebook(name, root)
        if not path.is_file() or path.read_text() != text:
            if check:
                stale.append(name)
            else:
                path.write_text(text)
                print(f"wrote {path.relative_to(root) if path.is_relative_to(root) else path}")
    orphans = sorted(p.stem for p in folder.glob("*.ipynb") if p.stem not in chapters(root))
    if orphans and check:
        print(
            f"notebooks whose chapter is not in _toc.yml: {', '.join(orphans)}. Delete them, or "
            "add the chapters back to the toc.",
            file=sys.stderr,
        )
        return 1
    for name in orphans:  # a chapter left the toc: its notebook goes too
        (folder / f"{name}.ipynb").unlink()
        print(f"removed notebooks/{name}.ipynb (not in _toc.yml)")
    if stale:
        print(
            f"notebooks missing or out of date: {', '.join(stale)}. Run: make notebooks",
            file=sys.stderr,
        )
        return 1
    return 0
