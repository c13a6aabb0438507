"""Colab notebooks: generated from the chapters, never stale, linked from every page,
and runnable with nothing but a jaxguide wheel (as Colab would install it)."""

from __future__ import annotations

import json
import re
import sys

import pytest
import yaml

import make_notebooks
import wheelrun
from bookcheck import MYST_HEADER, ROOT, parsed_page
from jaxguide_build import notebooks

CHAPTERS = notebooks.chapters()


def test_every_chapter_has_an_up_to_date_notebook():
    assert CHAPTERS and "numpy" in CHAPTERS and "index" not in CHAPTERS
    assert make_notebooks.main(["--check"]) == 0, "run: make notebooks"


@pytest.mark.parametrize("argv", [["--help"], ["--chek"]])
def test_help_and_a_mistyped_option_write_nothing(argv, monkeypatch, capsys):
    def write(**kwargs: object) -> int:
        raise AssertionError(f"wrote notebooks for {argv}")

    monkeypatch.setattr(notebooks, "update", write)
    with pytest.raises(SystemExit) as exit:
        make_notebooks.main(argv)
    assert exit.value.code == (0 if argv == ["--help"] else 2)
    out = capsys.readouterr()
    assert "--check" in (out.out if argv == ["--help"] else out.err)


def test_the_check_catches_stale_and_missing_notebooks(tmp_path, capsys):
    # Two chapters are enough to show both failures (each notebook costs a fraction of
    # a second of CPU to make, and the full set is checked above).
    two = ["numpy", "random"]
    assert notebooks.update(folder=tmp_path, names=two) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["numpy.ipynb", "random.ipynb"]
    (tmp_path / "numpy.ipynb").write_text(
        (tmp_path / "numpy.ipynb").read_text().replace("jnp", "np")
    )
    (tmp_path / "random.ipynb").unlink()
    capsys.readouterr()
    assert notebooks.update(check=True, folder=tmp_path, names=two) == 1
    assert "missing or out of date: numpy, random" in capsys.readouterr().err
    # A notebook whose chapter left the toc: the check names it, an update removes it.
    (tmp_path / "gone.ipynb").write_text("{}")
    assert notebooks.update(check=True, folder=tmp_path, names=two) == 1
    assert "not in _toc.yml: gone" in capsys.readouterr().err
    assert notebooks.update(folder=tmp_path, names=two) == 0
    assert not (tmp_path / "gone.ipynb").exists()


def test_a_notebook_is_made_from_the_checkout_it_is_given(tmp_path):
    """bench/accelerator_check.py --root: the chapters, their labels and the settings
    come from that checkout, not this one."""
    import shutil

    for name in ("_config.yml", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n  - file: tiny\n")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "index.md").write_text("# Index\n")
    tiny = "(tiny-top)=\n# Tiny\n\nSee {ref}`tiny-top`.\n\n```{code-cell} ipython3\nprint(2)\n```\n"
    (tmp_path / "book" / "tiny.md").write_text(MYST_HEADER + tiny)
    assert notebooks.chapters(tmp_path) == ["tiny"]
    nb = json.loads(notebooks.notebook("tiny", tmp_path))
    sources = ["".join(c["source"]) for c in nb["cells"]]
    assert sources[-1] == "print(2)" and f"[Tiny]({notebooks.site_url()}tiny.html)" in sources[-2]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_notebook_is_clean_for_colab(chapter):
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    assert set(nb["metadata"]) <= {"kernelspec", "language_info", "colab"}
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    setup = "".join(code[0]["source"])
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    assert 'if "google.colab" in sys.modules:' in setup
    assert f"jaxguide @ git+{url}@v{notebooks.version()}" in setup  # a tag, not a branch
    text = json.dumps(nb)
    for build_only in ("{glue", "jaxguide.provenance()", "jupytext"):
        assert build_only not in text, build_only
    # Images and links must resolve inside Colab too: nothing by a path into the repository.
    markdown = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    targets = re.findall(r"\]\(([^)\s]+)", markdown) + re.findall(
        r"<img[^>]+src=\"([^\"]+)", markdown
    )
    assert all(t.startswith(("https://", "http://", "#")) for t in targets), targets


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_notebook_markdown_has_no_myst_left(chapter):
    """Colab shows MyST directives and roles as raw text: the generator converts them."""
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    site = notebooks.site_url()
    markdown = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    for text in markdown:
        left = notebooks.MYST_LEFT.search(text)
        assert left is None, f"MyST left in {chapter}: {left.group(0)!r}"
        assert "\x00" not in text
        assert text.count("<details>") == text.count("</details>")  # closed in the same cell
    source = (ROOT / "book" / f"{chapter}.md").read_text()
    n_exercises = source.count("{exercise-start}")
    joined = "\n".join(markdown)
    assert [int(n) for n in re.findall(r"^### Exercise (\d+)$", joined, re.M)] == list(
        range(1, n_exercises + 1)
    )
    hidden = [
        c
        for c in nb["cells"]
        if c["cell_type"] == "code"
        and c["metadata"].get("cellView") == "form"
        and "".join(c["source"]).startswith("# @title Solution")
    ]
    assert {re.search(r"exercise (\d+)", "".join(c["source"])).group(1) for c in hidden} <= {
        str(i) for i in range(1, n_exercises + 1)
    }
    if n_exercises:
        assert hidden, "solution code is not hidden behind a form"
    # Cross-references became links to the published pages (one to an exercise of the
    # same notebook names it instead: "exercise 2").
    exercises = notebooks.exercise_numbers(source)
    targets = re.findall(r"\{(?:ref|doc)\}`(?:[^`<]*<)?([^`>]+)>?`", source)
    n_refs = len([t for t in targets if t not in exercises])
    assert len(re.findall(re.escape(site) + r"[\w-]+\.html", joined)) >= n_refs


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_notebook_prose_shows_no_code_and_hides_the_checks(chapter):
    """Where the page shows a glued number, the notebook's prose names it and points to
    the cell that prints it: never the Python expression that computes it. The page's
    hidden cells are collapsed behind a form title (their output still shows)."""
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    for key, expression in notebooks.glued_code(code).items():
        assert f"`{expression}`" not in markdown, (chapter, key)
    assert not re.search(r"`f[\"'][^`]*\{[^`]*`", markdown), "an f-string in the prose"
    source = (ROOT / "book" / f"{chapter}.md").read_text()
    n_glued = len(re.findall(r"\{glue:text\}`", source))
    assert len(re.findall(r"\* \(printed by a cell (?:above|below)\)", markdown)) >= n_glued


#: MyST-NB's cell tags that hide a cell's code on the page (its output may still show),
#: and those that leave the code in view. Every tag a chapter uses must be in one of the
#: two (this list, not the generator's), so a new way of hiding a cell cannot pass
#: unseen into Colab as plain code.
HIDES_CODE = {"remove-cell", "remove-input", "hide-cell", "hide-input"}
SHOWS_CODE = {
    "raises-exception",
    "measured",
    "remove-output",
    "hide-output",
    "remove-stderr",
    "remove-stdout",
    "skip-execution",
}
#: The cell options (``mystnb:``) a chapter may use: none of them hides the code
#: (``remove_code_source`` would, and is not handled by the generator).
MYSTNB_OPTIONS = {"image", "figure", "markdown", "text", "merge_streams", "output_stderr"}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_cell_the_page_hides_is_collapsed_in_colab(chapter):
    """Each code cell of the chapter (read from book/, not from the notebook) is the
    notebook's cell in the same place; one the page hides, whichever tag hides it, is
    collapsed behind a form title there; and every cell that glues or claims (the
    page's checks) is hidden on the page, so none reaches Colab as plain code."""
    import jupytext

    page = jupytext.read(ROOT / "book" / f"{chapter}.md", fmt="md:myst")
    assert "remove_code_source" not in page.metadata.get("mystnb", {})
    book_cells = [
        c for c in page.cells if c.cell_type == "code" and notebooks.BUILD_ONLY not in c.source
    ]
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    colab_cells = [c for c in nb["cells"] if c["cell_type"] == "code"][2:]  # after set-up
    assert len(colab_cells) == len(book_cells)
    for cell, colab in zip(book_cells, colab_cells):
        head = cell.source.strip().splitlines()[0][:80] if cell.source.strip() else "empty"
        tags = set(cell.metadata.get("tags", []))
        assert tags <= HIDES_CODE | SHOWS_CODE, (chapter, head, tags)
        assert set(cell.metadata.get("mystnb", {})) <= MYSTNB_OPTIONS, (chapter, head)
        shown = "".join(colab["source"])
        body = shown.split("\n", 1)[1] if shown.startswith("# @title ") else shown
        assert notebooks.unguarded(body) == cell.source, (chapter, head)
        if body.startswith(notebooks.CHECKING):  # a check that cannot stop the notebook
            assert "remove-cell" in tags and notebooks.glued_code([cell.source]), head
        if notebooks.glued_code([cell.source]):
            assert tags & HIDES_CODE, f"{chapter}: a check in a visible cell: {head}"
        if tags & HIDES_CODE:
            assert colab["metadata"].get("cellView") == "form", (chapter, head)
            assert colab["metadata"].get("jupyter") == {"source_hidden": True}, (chapter, head)
            assert shown.startswith("# @title "), (chapter, head)


def run_setup_cell(monkeypatch, returncode: int, stderr: str = ""):
    """Run the notebooks' first cell as Colab would, with pip answering ``returncode``."""
    import subprocess
    import types

    nb = json.loads((ROOT / "notebooks" / "numpy.ipynb").read_text())
    code = "".join(nb["cells"][0]["source"])
    calls = []

    def pip(args, **kwargs):
        calls.append(args)
        return subprocess.CompletedProcess(args, returncode, "", stderr)

    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(subprocess, "run", pip)
    exec(compile(code, "setup-cell", "exec"), {"__name__": "__main__"})
    return calls


def test_setup_cell_installs_the_tagged_release_in_colab(monkeypatch):
    (call,) = run_setup_cell(monkeypatch, 0)
    assert call[1:4] == ["-m", "pip", "install"] and call[-1].endswith(f"@v{notebooks.version()}")


def test_setup_cell_stops_with_a_clear_message_when_pip_fails(monkeypatch):
    with pytest.raises(SystemExit) as err:
        run_setup_cell(
            monkeypatch, 1, "ERROR: Could not find a version that satisfies the requirement"
        )
    message = str(err.value)
    assert "Could not install jaxguide @ git+" in message
    assert "Could not find a version" in message  # pip's own reason
    assert (
        "can reach the internet" in message and f"release v{notebooks.version()} exists" in message
    )


def test_setup_cell_does_nothing_outside_colab(monkeypatch):
    import subprocess

    nb = json.loads((ROOT / "notebooks" / "numpy.ipynb").read_text())
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("pip ran outside Colab"))
    exec(compile("".join(nb["cells"][0]["source"]), "setup-cell", "exec"), {"__name__": "__main__"})


def test_conversion_of_each_construct(monkeypatch):
    import nbformat

    conv = notebooks.Converter("numpy", ['glue("speed", compare(a, b, prose=True))'])
    md = lambda text: conv.cell(nbformat.v4.new_markdown_cell(text)).source  # noqa: E731
    site = notebooks.site_url()
    assert (
        md("See {ref}`sharding`.")
        == f"See [Sharded arrays and automatic parallelism]({site}sharding.html)."
    )
    assert md("See {ref}`the chapter <shard-map>`.") == f"See [the chapter]({site}shard_map.html)."
    assert md("{doc}`training`").startswith("[") and f"({site}training.html)" in md(
        "{doc}`training`"
    )
    assert md("It was {glue:text}`speed`.") == "It was *speed* (printed by a cell below)."
    assert md("```{note}\nMind the gap.\n```\n") == "> **Note**\n>\n> Mind the gap."
    assert md("```{exercise-start}\n:label: ex-a\n```\n\nDo it.") == "### Exercise 1\n\nDo it."
    assert md(
        "```{exercise-end}\n```\n\n```{solution-start} ex-a\n:class: dropdown\n```\n\nBecause."
    ).startswith("<details>\n<summary>Solution to exercise 1")
    code = conv.cell(nbformat.v4.new_code_cell("x = 1"))
    assert code.metadata["cellView"] == "form" and code.source.startswith(
        "# @title Solution to exercise 1"
    )
    assert md("```{solution-end}\n```\nAfter.") == "After."
    assert conv.cell(nbformat.v4.new_code_cell("y = 2")).source == "y = 2"
    # The page's hidden cells are collapsed in Colab; once a cell above glued a value,
    # the prose points up to it.
    # Its title says whether the text quotes a value it glues (the chapter's prose, read
    # when the converter starts, quotes no "speed" or "ratio": set here).
    conv.quoted = {"speed"}
    check = nbformat.v4.new_code_cell(
        'claim("speed", s, s > 1, "faster")', metadata={"tags": ["remove-cell"]}
    )
    assert conv.cell(check).metadata["cellView"] == "form"
    assert check.source.startswith("# @title Checks and values the text quotes")
    quiet = nbformat.v4.new_code_cell(
        'claim("ratio", r, r > 1, "above 1")', metadata={"tags": ["remove-cell"]}
    )
    assert conv.cell(quiet).source.startswith("# @title Checks (hidden in the book")
    assert md("It was {glue:text}`speed:.1f`.") == "It was *speed* (printed by a cell above)."
    figure = nbformat.v4.new_code_cell("plt.plot(x)", metadata={"tags": ["remove-input"]})
    assert conv.cell(figure).source.startswith("# @title Hidden in the book")
    with pytest.raises(
        notebooks.ConversionError, match=r"no notebook form for the MyST directive \{tab-set\}"
    ):
        md("```{tab-set}\nx\n```\n")
    with pytest.raises(notebooks.ConversionError, match="unknown label 'nowhere'"):
        md("{ref}`nowhere`")
    with pytest.raises(notebooks.ConversionError, match="which no cell glues"):
        md("{glue:text}`missing`")
    included = md("```{literalinclude} ../src/jaxguide/compiled.py\n:pyobject: format_bytes\n```\n")
    # A reference to an exercise links to its number, before the exercise as after it.
    text = (
        "See {ref}`ex-b`.\n\n```{exercise-start}\n```\n\n```{exercise-end}\n```\n\n"
        "```{exercise-start}\n:label: ex-b\n```\n"
    )
    assert notebooks.exercise_numbers(text) == {"exercise-1": 1, "ex-b": 2}
    conv.numbered = notebooks.exercise_numbers(text)
    assert md("See {ref}`ex-b`.") == "See exercise 2."
    assert included.startswith("From `jaxguide/compiled.py`:\n\n```python\ndef format_bytes(")


@pytest.mark.book
def test_colab_and_download_buttons(book):
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    owner_repo = cfg["url"].removeprefix("https://github.com/")
    for chapter in CHAPTERS:
        soup = parsed_page(book, chapter)
        colab = [
            a["href"] for a in soup.select("a[href]") if "colab.research.google.com" in a["href"]
        ]
        assert colab == [
            f"https://colab.research.google.com/github/{owner_repo}/blob/{cfg['branch']}/notebooks/{chapter}.ipynb"
        ], colab
        assert (ROOT / "notebooks" / f"{chapter}.ipynb").is_file()
        downloads = {a["href"] for a in soup.select("a[href]") if a["href"].startswith("_sources/")}
        assert downloads == {f"_sources/{chapter}.md", f"_sources/{chapter}.ipynb"}, downloads
        executed = json.loads((book.html / "_sources" / f"{chapter}.ipynb").read_text())
        assert any(c.get("outputs") for c in executed["cells"] if c["cell_type"] == "code")
        # The same in every build: named cells, not the reader's random ids.
        assert [c["id"] for c in executed["cells"]] == [
            f"{chapter}-{i}" for i in range(len(executed["cells"]))
        ]


@pytest.mark.book
def test_notebooks_run_from_a_wheel_in_a_clean_environment(wheel_notebooks):
    """The chosen notebooks (tests/wheelrun.py: a sample, or all with
    JAXGUIDE_WHEEL_RUN=all) ran top to bottom where jaxguide came from a wheel, from a
    folder holding nothing but the notebooks, after every module of the wheel imported
    there (tests/conftest.py runs them once per session; tests/test_reproducible.py
    compares their outputs with the book's)."""
    assert wheel_notebooks.failures == []
    assert wheel_notebooks.chapters == wheelrun.chosen(sorted(CHAPTERS))
    assert sorted(p.stem for p in wheel_notebooks.executed.glob("*.ipynb")) == sorted(
        wheel_notebooks.chapters
    )


def test_the_wheel_run_sample_is_made_of_chapters(monkeypatch):
    """The sample names executed chapters (a renamed chapter would silently leave it);
    JAXGUIDE_WHEEL_RUN=all chooses every chapter, and a misspelt value is refused."""
    assert set(wheelrun.SAMPLE) <= set(CHAPTERS)
    monkeypatch.delenv(wheelrun.CHOICE_VARIABLE, raising=False)
    assert wheelrun.chosen(sorted(CHAPTERS)) == sorted(wheelrun.SAMPLE)
    monkeypatch.setenv(wheelrun.CHOICE_VARIABLE, "all")
    assert wheelrun.chosen(sorted(CHAPTERS)) == sorted(CHAPTERS)
    monkeypatch.setenv(wheelrun.CHOICE_VARIABLE, "sample")
    assert wheelrun.chosen(sorted(CHAPTERS)) == sorted(wheelrun.SAMPLE)
    monkeypatch.setenv(wheelrun.CHOICE_VARIABLE, "everything")
    with pytest.raises(ValueError, match="JAXGUIDE_WHEEL_RUN='everything'.*unknown: everything"):
        wheelrun.chosen(sorted(CHAPTERS))


def test_the_wheel_run_takes_chapter_names(monkeypatch):
    """JAXGUIDE_WHEEL_RUN=<chapter>,... (make notebook CHAPTER=<name> WHEEL=1) chooses
    those chapters, in the book's order, spaces and repeats ignored; an unknown name, or
    commas with no name, is refused with the choices."""
    book = ["numpy", "pmap", "pytrees", "random"]
    for choice, expected in [
        ("pytrees", ["pytrees"]),
        ("random,numpy", ["numpy", "random"]),
        (" random , numpy,random ", ["numpy", "random"]),
    ]:
        monkeypatch.setenv(wheelrun.CHOICE_VARIABLE, choice)
        assert wheelrun.chosen(book) == expected, choice
    monkeypatch.setenv(wheelrun.CHOICE_VARIABLE, "numpy,numpi")
    with pytest.raises(ValueError, match=r"unknown: numpi; choose from numpy, pmap"):
        wheelrun.chosen(book)
    monkeypatch.setenv(wheelrun.CHOICE_VARIABLE, ",")
    with pytest.raises(ValueError, match="none given"):
        wheelrun.chosen(book)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_checks_print_only_the_values_the_text_quotes(chapter):
    """The notebook's second cell, collapsed, keeps every check quiet but those whose
    values the prose quotes (``jaxguide.page.show_only``): exactly the keys of the
    page's ``{glue:text}`` roles, each of which a cell of the notebook glues."""
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    cell = nb["cells"][1]
    assert cell["metadata"].get("cellView") == "form"
    source = "".join(cell["source"])
    listed = re.search(r"show_only\(\[(.*?)\]\)", source, re.S)
    assert listed, source[:200]
    keys = sorted(yaml.safe_load(f"[{listed.group(1)}]") or [])
    page = (ROOT / "book" / f"{chapter}.md").read_text()
    assert keys == sorted(set(re.findall(r"\{glue:text\}`([^`:]+)", page)))
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert set(keys) <= set(notebooks.glued_code(code))


def test_a_guarded_check_reports_an_error_and_carries_on(capsys, monkeypatch):
    """A hidden check cell runs in Colab inside ``jaxguide.page.checking``: the same
    code, indented; an error in it prints one line that names the keys and the error,
    and the notebook goes on; a cell whose text indenting would change is left alone."""
    import jaxguide.page

    code = 'x = 2\nclaim("x", x, x == 2, "two")\n\ny = [][1]\n'
    wrapped = notebooks.guarded(code, ["x", "y"])
    assert wrapped.startswith("with jaxguide.page.checking(['x', 'y']):\n    x = 2\n")
    assert notebooks.unguarded(wrapped) == code
    monkeypatch.delenv("JAXGUIDE_STRICT_CLAIMS", raising=False)
    scope = {"jaxguide": jaxguide, "claim": jaxguide.page.claim}
    exec(compile(wrapped, "cell", "exec"), scope)
    out = capsys.readouterr().out
    assert scope["x"] == 2 and "✓ x: 2 (two)" in out
    (line,) = jaxguide.page.failed_claims(out)
    assert line.startswith("✗ x, y: not computed (IndexError: list index out of range)")
    monkeypatch.setenv("JAXGUIDE_STRICT_CLAIMS", "1")  # the build: the error stops it
    with pytest.raises(IndexError):
        exec(compile(wrapped, "cell", "exec"), scope)
    for kept in ('%xmode Minimal\nglue("a", 1)', 'text = """a\nb"""\nglue("t", text)'):
        assert notebooks.guarded(kept, ["a"]) == kept


def test_inline_code_that_looks_like_a_role_is_kept():
    """A type JAX prints, `{V:x}`, quoted in backticks, stays as written; a role beside
    it still converts."""
    md = "varies over `x` (`{V:x}`), the `psum` does not ({ref}`shard-map`)."
    assert notebooks.ROLE.findall(md) == [("ref", "shard-map")]
    assert notebooks.MYST_LEFT.search("(`{V:x}`)") is None
