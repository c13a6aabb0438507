"""Checks every chapter gets, derived from _toc.yml and the chapters' sources, so a new
chapter is covered by adding it to the toc. What one chapter demonstrates is checked in
its own file, tests/test_chapter_<name>.py."""

from __future__ import annotations

import ast
import builtins
import importlib
import re

import pytest
from myst_nb.core.read import read_myst_markdown_notebook

from bookcheck import ROOT, executed_chapters, glued, parsed_page, prose_text, toc_parts
from claimcheck import TRUE, claim_conditions, restatements
from jaxguide_build.staleness import code_of


def teaching_chapters() -> list[str]:
    """Executed chapters outside the appendix: each ends with exercises."""
    appendix = set(toc_parts().get("Appendix", []))
    return [c for c in executed_chapters() if c not in appendix]


def devices_asked(chapter: str) -> int:
    """The device count the chapter asks jaxguide.setup_devices for."""
    match = re.search(r"setup_devices\((\d+)\)", (ROOT / "book" / f"{chapter}.md").read_text())
    assert match, f"{chapter} never calls jaxguide.setup_devices(n)"
    return int(match.group(1))


#: A claim's key in a chapter's code (``jaxguide.claim("key", ...)``: every claim names its
#: key with a string literal).
CLAIM_KEY = re.compile(r"""jaxguide\.claim\(\s*["']([^"']+)["']""")


def claim_keys(chapter: str) -> list[str]:
    """The keys of the claims in the code cells of ``book/<chapter>.md``, in order."""
    code = "\n".join(code_of((ROOT / "book" / f"{chapter}.md").read_text()))
    return CLAIM_KEY.findall(code)


def test_toc_lists_chapters():
    assert len(executed_chapters()) >= 10
    assert set(teaching_chapters()) < set(executed_chapters())


@pytest.mark.book
@pytest.mark.parametrize("chapter", teaching_chapters())
def test_exercises_have_hidden_executed_solutions(book, chapter):
    soup = parsed_page(book, chapter)
    exercises = soup.select("div.exercise")
    solutions = soup.select("div.solution")
    assert len(exercises) >= 2 and len(solutions) >= len(exercises)
    for sol in solutions:
        assert "dropdown" in sol.get("class", [])
        assert sol.select("div.cell_input"), "solution has no executed code"


@pytest.mark.book
@pytest.mark.parametrize("chapter", executed_chapters())
def test_provenance_box_at_the_top(book, chapter):
    import jax
    import jaxlib

    soup = parsed_page(book, chapter)
    boxes = soup.select("div.jaxguide-provenance")
    assert len(boxes) == 1, "one provenance box per chapter"
    text = boxes[0].get_text(" ")
    n = devices_asked(chapter)
    assert f"JAX {jax.__version__}, jaxlib {jaxlib.__version__}, {n} CPU device" in text
    seconds = float(re.search(r"its cells running for ([\d.]+) s", text).group(1))
    assert 0 < seconds < 300
    # It sits above the first section, right under the title.
    page = book.page(chapter)
    first_section = soup.select("section section")[0]
    assert page.index('class="jaxguide-provenance"') < page.index(f'id="{first_section["id"]}"')


@pytest.mark.book
def test_execution_report_lists_every_chapter(book):
    soup = parsed_page(book, "report")
    rows = soup.select("table tbody tr")
    text = " ".join(soup.get_text(" ").split())
    for chapter in executed_chapters():
        assert chapter in text, chapter
    assert len(rows) >= len(executed_chapters())
    assert "✅" in text and "❌" not in text


@pytest.mark.book
@pytest.mark.parametrize("chapter", executed_chapters())
def test_every_claim_is_glued(book, chapter):
    """Each ``jaxguide.claim`` of the chapter glued its value: the strict build checked
    its condition, and the chapter's prose and tests read the glued value. (A chapter's
    own tests need not read a claim again to find it missing.)"""
    missing = [key for key in claim_keys(chapter) if key not in glued(book, chapter)]
    assert not missing, f"claims in book/{chapter}.md that the build did not glue: {missing}"


def test_claim_keys_are_read_from_code_cells():
    assert claim_keys("numpy")[:2] == ["sin_gap", "sin_values"]
    assert all(claim_keys(c) for c in executed_chapters())


def _names(code: str) -> tuple[set[str], set[str]]:
    """(names a piece of code binds anywhere, names it reads) by its syntax tree: an
    assignment, an import, a ``def`` or ``class``, a parameter, a loop or ``with``
    target, an ``except ... as`` name; code that is not Python binds and reads nothing."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set(), set()
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound, read


@pytest.mark.parametrize("chapter", executed_chapters())
def test_visible_cells_need_no_name_only_a_hidden_cell_defines(chapter):
    """A reader who copies a page's visible cells gets code that runs: no visible cell
    reads a name that only a hidden one (``remove-cell``, ``remove-input``) defines."""
    nb = read_myst_markdown_notebook((ROOT / "book" / f"{chapter}.md").read_text())
    hidden_bound: set[str] = set()
    visible_bound: set[str] = set()
    visible_read: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        (code,) = code_of(f"```{{code-cell}} ipython3\n{cell.source}\n```\n")
        bound, read = _names(code)
        tags = set(cell.metadata.get("tags", []))
        if tags & {"remove-cell", "remove-input"}:
            hidden_bound |= bound
        else:
            visible_bound |= bound
            visible_read |= read
    only_hidden = (visible_read & hidden_bound) - visible_bound - set(dir(builtins))
    assert not only_hidden, (
        f"{chapter}: visible cells read {sorted(only_hidden)}, defined only in hidden "
        "cells; define them in a visible cell"
    )


# --- Tests that restate a claim (CONTRIBUTING.md, "One home for every claim") ----------
# The reader of claims and tests is tests/claimcheck.py (it says what counts).


def _restated(chapter: str) -> list[tuple[int, str, str]]:
    test = ROOT / "tests" / f"test_chapter_{chapter}.py"
    cells = code_of((ROOT / "book" / f"{chapter}.md").read_text())
    conditions = claim_conditions(cells)
    # Every condition counts: a bound, a tolerance or an exact value repeated in a test
    # drifts from its one home when that is retuned.
    return restatements(test.read_text(), conditions)


@pytest.mark.parametrize("chapter", executed_chapters())
def test_chapter_tests_do_not_restate_claims(chapter):
    """No chapter test compares a claim's glued value with the bound the claim checks
    (CONTRIBUTING.md, "One home for every claim"): the strict build checked it."""
    test = ROOT / "tests" / f"test_chapter_{chapter}.py"
    if not test.exists():
        pytest.skip(f"{chapter} has no test of its own")
    found = _restated(chapter)
    new = [f"{test.name}:{line}: {key} {cond}" for line, key, cond in found]
    assert not new, (
        f"{chapter}'s test restates claims of book/{chapter}.md; assert against an "
        f"independent computation, or leave the claim to the build: {new}"
    )


def test_restatements_are_found():
    """The check finds a restated bound (through a name, a wrapper, an alias and a
    comprehension, a constant on either side), a restated dict, set or list, and the
    literal at the end of a chain of ``==``, a tolerance written as ``pytest.approx``,
    ``np.isclose`` or ``abs(x - c) < t``, a ``holds`` bound to a name, a tuple of glues,
    a one-line helper reading a glue, a relation between two glues, and passes an
    independent check."""
    chapter = [
        'jaxguide.claim("kinds", kinds, kinds == {"a": [1, 2], "b": True}, "as shown")',
        'jaxguide.claim("ops", ops, ops >= {"mul", "add"}, "both")',
        'jaxguide.claim("total", total, total == 120, "120")',
        'jaxguide.claim("pairs", pairs, pairs == [(0, 1), (1, 2)], "two pairs")',
        "TOL = 1e-5\nworst = 0.0\nfor d in diffs:\n    worst = max(worst, d)",
        'jaxguide.claim("gap", gap, gap < TOL, "below 1e-5", fmt=".1e")',
        'jaxguide.claim("diffs", diffs, max(diffs) < 1e-5, "below 1e-5")',
        'jaxguide.claim("ok", ok, ok, "the same")',
        'jaxguide.claim("worst", worst, worst < 1e-3, "small")',
        'jaxguide.claim("n", n, n == 3, "three")',
        'jaxguide.claim("corr", corr, abs(corr - 0.8) < 0.03, "0.8", fmt=".3f")',
        'jaxguide.claim("grad", float(d), bool(np.isclose(d, 0.5 / np.sqrt(2.0), rtol=1e-5)), "")',
        'ok = dtype == "bf16" and ratio <= 1\njaxguide.claim("ratio", ratio, ok, "at most 1")',
        'jaxguide.claim("a", a, a == 16, "")\njaxguide.claim("b", b, b == 4, "")',
        'jaxguide.glue("full", full)\njaxguide.claim("remat", remat, remat > 0.9 * full, "")',
    ]
    conditions = claim_conditions(chapter)
    assert conditions["gap"] == {("<", 1e-5)} and conditions["ok"] == {TRUE}
    assert conditions["worst"] == {("<", 1e-3)}  # worst is a variable, not a constant
    test = """
def test_it(g):
    assert float(g["gap"]) < 1e-5
    d = g["diffs"]
    assert all(x < 0.00001 for x in d) and 1e-5 > max(g["diffs"])
    assert g["ok"] is True and bool(g["ok"])
    assert float(g["gap"]) == pytest.approx(abs(a - b), rel=0.05)  # independent
    assert g["n"] == 3
    assert float(g["gap"]) < 1e-4  # another bound: not this check's business
    assert g["kinds"] == {"b": True, "a": (1, 2)}  # key order and list or tuple: the same
    assert {"add", "mul"} <= set(g["ops"])
    assert g["total"] == blocks.sum() == 120  # the literal reaches every side
    assert g["total"] == blocks.sum()  # independent
    assert g["pairs"] == [[0, 1], [1, 2]]
    assert g["kinds"] == {"a": [1, 2], "b": False}  # another value
    assert float(g["corr"]) == pytest.approx(0.8, abs=0.03)
    assert abs(float(g["corr"]) - 0.8) <= 0.03
    exact = 0.5 / np.sqrt(2)
    assert g["grad"] == pytest.approx(exact, rel=1e-5)
    assert g["corr"] == pytest.approx(np.corrcoef(x, y)[0, 1], abs=0.03)  # independent
    assert g["corr"] == pytest.approx(0.8, abs=0.1)  # another tolerance
    assert num(g, "ratio") <= 1
    assert (g["a"], g["b"]) == (16, 4)
    assert (g["a"], g["b"]) == (4, 16)  # other values
    assert float(g["remat"]) > 0.9 * float(g["full"])
    assert g["remat"] > 0.8 * g["full"]  # another relation


def num(g, key):
    return float(g[key])
"""
    assert conditions["kinds"] == {("==", ("dict", (("a", (1, 2)), ("b", True))))}
    assert restatements(test, conditions) == [
        (3, "gap", "< 1e-05"),
        (5, "diffs", "< 1e-05"),
        (6, "ok", "is True"),
        (8, "n", "== 3.0"),
        (10, "kinds", "== ('dict', (('a', (1, 2)), ('b', True)))"),
        (11, "ops", ">= ('set', ('add', 'mul'))"),
        (12, "total", "== 120.0"),
        (14, "pairs", "== ((0, 1), (1, 2))"),
        (16, "corr", "near (0.8, 'abs', 0.03)"),
        (17, "corr", "near (0.8, 'abs', 0.03)"),
        (19, "grad", "near (0.353553390593, 'rel', 1e-05)"),
        (22, "ratio", "<= 1.0"),
        (23, "a", "== 16.0"),
        (23, "b", "== 4.0"),
        (25, "remat", "> ('glues', '(0.9*G(full))')"),
    ]


# --- Sentences taken out of a page stay out ------------------------------------------
# Each chapter test may keep a RETIRED dict of sentences removed from its page (false,
# unbacked, or cut), each with why; they are looked for in the page's prose only, so an
# output that prints the same words does not count.


def _retired(chapter: str) -> dict[str, str]:
    if not (ROOT / "tests" / f"test_chapter_{chapter}.py").exists():
        return {}
    return dict(getattr(importlib.import_module(f"test_chapter_{chapter}"), "RETIRED", {}))


@pytest.mark.book
@pytest.mark.parametrize("chapter", executed_chapters())
def test_retired_sentences_stay_out_of_the_prose(book, chapter):
    retired = _retired(chapter)
    if not retired:
        pytest.skip(f"{chapter} retires no sentence")
    assert all(isinstance(why, str) and why for why in retired.values()), "say why"
    # Compared without whitespace and backticks: the page's text puts spaces around
    # inline code (`gelu`'s reads "gelu 's"), which a sentence written in MyST has not.
    text = re.sub(r"\s", "", prose_text(book, chapter))
    back = [
        f"{sentence!r} ({why})"
        for sentence, why in retired.items()
        if re.sub(r"[\s`]", "", sentence) in text
    ]
    assert not back, f"retired sentences are back in book/{chapter}.md: {back}"


@pytest.mark.book
def test_prose_text_leaves_out_code_cells(book):
    """The reader of retired sentences sees prose, not code or outputs: the start of the
    page's first code cell is on the page but not in its prose."""
    page = parsed_page(book, "numpy")
    code = " ".join(page.select_one("div.cell div.cell_input").get_text(" ").split())[:40]
    assert len(code) == 40 and code in " ".join(page.get_text(" ").split())
    assert code not in prose_text(book, "numpy")
    assert "jax.numpy" in prose_text(book, "numpy")
