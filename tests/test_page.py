import jax
import jaxlib
import pytest

from jaxguide import page, provenance


def test_provenance_describes_the_running_jax():
    import datetime
    import time

    from jaxguide import page

    before = time.perf_counter() - page._STARTED
    p = provenance()
    after = time.perf_counter() - page._STARTED
    assert before <= p.seconds <= after  # seconds since import jaxguide, now
    now = datetime.datetime.now(datetime.UTC)
    assert p.executed_at in {
        (now - datetime.timedelta(minutes=m)).strftime("%Y-%m-%d %H:%M UTC") for m in (0, 1)
    }
    assert (p.jax_version, p.jaxlib_version) == (jax.__version__, jaxlib.__version__)
    assert p.backend == jax.default_backend() and p.device_count == jax.device_count()
    html = p._repr_html_()
    assert html.startswith('<div class="jaxguide-provenance">')
    assert f"JAX {jax.__version__}, jaxlib {jaxlib.__version__}" in html


def test_glue_checks_its_arguments():
    from jaxguide import glue

    with pytest.raises(ValueError, match=r"glue\(key=''\): key must not be empty"):
        glue("", 1)
    with pytest.raises(TypeError, match=r"glue\(key=3\): key must be a str"):
        glue(3, 1)
    with pytest.raises(TypeError, match=r"glue\(display=1\): display must be True or False"):
        glue("k", 1, display=1)


def test_glue_outside_a_book_build_prints_the_value(capsys):
    # No notebook kernel here (as in Colab, where myst-nb is absent too): the prose has
    # nothing to fill, so the reader sees the value the notebook's prose points to.
    from jaxguide import glue

    glue("speed", "4.2× faster")
    assert capsys.readouterr().out == "speed: 4.2× faster\n"


def test_glue_in_a_build_hands_the_value_to_myst_nb(monkeypatch, capsys):
    from jaxguide import glue, page

    calls = []
    monkeypatch.setattr(page, "_myst_glue", lambda: lambda *a, **kw: calls.append((a, kw)))
    glue("speed", "4.2× faster")
    assert calls == [(("speed", "4.2× faster"), {"display": False})]
    assert capsys.readouterr().out == ""


def test_claim_in_the_build_glues_and_stops_where_it_fails(monkeypatch, capsys):
    from jaxguide import ClaimError, claim, page

    calls = []
    monkeypatch.setattr(page, "_myst_glue", lambda: lambda *a, **kw: calls.append((a, kw)))
    monkeypatch.setenv("JAXGUIDE_STRICT_CLAIMS", "1")
    assert claim("err", 1.23e-7, 1.23e-7 < 1e-5, "below 1e-5", fmt=".1e") == 1.23e-7
    assert calls == [(("err", "1.2e-07"), {"display": False})]
    with pytest.raises(
        ClaimError, match=r"claim 'err' does not hold: expected below 1e-5, got 3\.0e-05"
    ):
        claim("err", 3e-5, 3e-5 < 1e-5, "below 1e-5", fmt=".1e")
    assert issubclass(ClaimError, AssertionError)
    assert capsys.readouterr().out == ""  # the build prints nothing: the prose shows it


def test_claim_elsewhere_says_what_differs_and_carries_on(monkeypatch, capsys):
    import numpy as np

    from jaxguide import claim
    from jaxguide.page import BOOK_JAX

    monkeypatch.delenv("JAXGUIDE_STRICT_CLAIMS", raising=False)
    x = np.arange(3)
    assert claim("rows", 3, np.all(x < 3), "three rows") == 3  # a NumPy bool is a bool
    assert capsys.readouterr().out == "✓ rows: 3 (three rows)\n"
    assert claim("err", 3e-5, 3e-5 < 1e-5, "below 1e-5", fmt=".1e") == 3e-5
    out = capsys.readouterr().out
    assert out.startswith(f"✗ err: 3.0e-05, where the book's build (JAX {BOOK_JAX}) found it")
    assert f"this run (JAX {jax.__version__}) differs" in out and "Carrying on." in out


def test_failed_claims_reads_the_lines_claim_prints(monkeypatch, capsys):
    """The tools that run notebooks outside the build (tools/check_jax_newest.py,
    bench/accelerator_check.py) read the claims that did not hold with failed_claims:
    the lines claim prints for them, found by FAILED_MARK, without their standard tail."""
    from jaxguide import claim, page

    monkeypatch.delenv("JAXGUIDE_STRICT_CLAIMS", raising=False)
    claim("rows", 3, True, "three rows")
    claim("err", 3e-5, 3e-5 < 1e-5, "below 1e-5", fmt=".1e")
    print("a cell's own output, not a claim: ✗ inside a line")
    claim("kind", "TPU", False, "'cpu'")
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert [line[:2] for line in lines] == ["✓ ", page.FAILED_MARK, "a ", page.FAILED_MARK]
    found = [
        f"✗ err: 3.0e-05, where the book's build (JAX {page.BOOK_JAX}) found it below 1e-5",
        f"✗ kind: TPU, where the book's build (JAX {page.BOOK_JAX}) found it 'cpu'",
    ]
    assert page.failed_claims(out) == found
    # A notebook's outputs: several texts, of one line or many, indented or not.
    assert page.failed_claims([lines[0], "  " + lines[1], "\n".join(lines[2:])]) == found
    assert page.failed_claims(lines[0]) == page.failed_claims([]) == []


def test_claim_checks_its_arguments():
    from jaxguide import claim

    with pytest.raises(TypeError, match=r"claim\(holds=...\): holds must be a bool, got Array"):
        claim("k", 1, jax.numpy.array(True), "true")
    with pytest.raises(ValueError, match=r"claim\(expect=''\): expect must not be empty"):
        claim("k", 1, True, "")
    with pytest.raises(ValueError, match=r"claim\(key=''\)"):
        claim("", 1, True, "x")
    with pytest.raises(ValueError, match=r"claim\(fmt='.1e'\): cannot format the str value of 'k'"):
        claim("k", "text", True, "x", fmt=".1e")
    with pytest.raises(TypeError, match=r"claim\(fmt=...\): fmt must be a format spec str"):
        claim("k", 1, True, "x", fmt=3)


def test_book_jax_is_the_locked_jax():
    import re
    from pathlib import Path

    from jaxguide.page import BOOK_JAX

    lock = (Path(__file__).parents[1] / "uv.lock").read_text()
    locked = re.search(r'\[\[package\]\]\nname = "jax"\nversion = "([^"]+)"', lock)
    assert locked and locked.group(1) == BOOK_JAX


def test_show_only_quiets_the_keys_the_text_does_not_quote(capsys):
    """Outside the build, only the chosen keys print; a failing claim always does;
    None prints everything again; a single str is refused."""
    try:
        page.show_only(["quoted"])
        page.glue("quoted", 1)
        page.glue("other", 2)
        page.claim("quoted_claim", 3, True, "three")
        page.claim("other_claim", 4, False, "five")
        out = capsys.readouterr().out
        assert "quoted: 1" in out and "other: 2" not in out
        assert "quoted_claim" not in out  # not in the list
        assert out.count(page.FAILED_MARK) == 1 and "other_claim" in out
        page.show_only(None)
        page.glue("other", 2)
        assert "other: 2" in capsys.readouterr().out
        with pytest.raises(TypeError, match=r"keys must be a list of keys"):
            page.show_only("quoted")
        with pytest.raises(TypeError):
            page.show_only([1])
    finally:
        page.show_only(None)


def test_checking_names_the_keys_it_could_not_compute(capsys, monkeypatch):
    monkeypatch.delenv(page.STRICT_ENV, raising=False)
    with page.checking(["a", "b"]):
        raise KeyError("gone")
    (line,) = page.failed_claims(capsys.readouterr().out)
    assert line.startswith("✗ a, b: not computed (KeyError: 'gone')")
    with pytest.raises(TypeError, match=r"keys must be a list of str, got str; pass e.g. \['a'\]"):
        with page.checking("a"):
            pass
    with pytest.raises(TypeError, match=r"keys must be a list of str, got int"):
        with page.checking(["a", 3]):
            pass
