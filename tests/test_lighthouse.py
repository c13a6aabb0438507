"""jaxguide_build.lighthouse: reading Lighthouse's report, and choosing the pages it
scores. Its runs on the built book are tests/test_browser.py's."""

import pytest

from jaxguide_build import lighthouse


def test_lighthouse_summary_recognises_a_failing_page():
    """The scores and failing audits are read from Lighthouse's report as it writes them."""
    report = {
        "finalDisplayedUrl": "http://127.0.0.1/x.html",
        "categories": {
            "performance": {"score": 0.89, "auditRefs": []},
            "accessibility": {"score": 0.95, "auditRefs": [{"id": "color-contrast", "weight": 7}]},
            "best-practices": {"score": 1, "auditRefs": [{"id": "errors-in-console", "weight": 1}]},
        },
        "audits": {
            "color-contrast": {"score": 0},
            "errors-in-console": {"score": 1},
            "first-contentful-paint": {"numericValue": 1900.0},
            "largest-contentful-paint": {"numericValue": 2500.0},
            "total-blocking-time": {"numericValue": 250.0},
            "speed-index": {"numericValue": 2000.0},
            "cumulative-layout-shift": {"numericValue": 0.0},
            "total-byte-weight": {"numericValue": 123456},
        },
    }
    result = lighthouse.summarise(report)
    assert (result.performance, result.accessibility, result.best_practices) == (89, 95, 100)
    assert result.failing == ("accessibility: color-contrast",)
    assert (result.fcp_ms, result.tbt_ms, result.bytes) == (1900.0, 250.0, 123456)
    report["runtimeError"] = {"code": "NO_FCP", "message": "no paint"}
    with pytest.raises(RuntimeError, match="NO_FCP"):
        lighthouse.summarise(report)
    # What lighthouse_batch.mjs writes for a page whose run threw: no categories at all.
    with pytest.raises(RuntimeError, match="BATCH"):
        lighthouse.summarise({"runtimeError": {"code": "BATCH", "message": "Error: boom"}})


@pytest.mark.parametrize(
    ("urls", "keep", "error", "words"),
    [
        ("http://127.0.0.1/a.html", None, TypeError, "list of URL strings"),
        (["http://127.0.0.1/a.html", 3], None, TypeError, "list of URL strings"),
        (["http://127.0.0.1/a.html"], [None, None], ValueError, "2 paths for 1 URLs"),
    ],
)
def test_run_many_refuses_bad_arguments_before_starting_anything(urls, keep, error, words):
    with pytest.raises(error, match=words):
        lighthouse.run_many(urls, keep=keep)


def test_heaviest_chapters_are_chosen_by_bytes(tmp_path):
    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / "big.png").write_bytes(b"x" * 5000)
    (tmp_path / "a.html").write_text("<p>" + "a" * 3000 + "</p>")
    (tmp_path / "b.html").write_text('<img src="_images/big.png" alt="x">')
    (tmp_path / "c.html").write_text("<p>c</p>")
    assert lighthouse.heaviest(tmp_path, ["a", "b", "c"], 2) == ["b", "a"]


def test_cli_and_batch_runs_share_one_table_of_settings():
    """run's CLI options are SETTINGS spelled the CLI's way, so both kinds of run use the
    same settings."""
    assert lighthouse._cli_option("maxWaitForLoad", 60000) == "--max-wait-for-load=60000"
    assert lighthouse._cli_option("disableFullPageScreenshot", True) == (
        "--disable-full-page-screenshot"
    )
    assert lighthouse._cli_option("output", "json") == "--output=json"
