"""bench/accelerator_check.py: its CPU path runs, finds what differs from a build, reports
failed claims and measurements, and refuses bad arguments."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys

import nbformat
import pytest

from bookcheck import MYST_HEADER, ROOT
from jaxguide import hardware

spec = importlib.util.spec_from_file_location(
    "accelerator_check", ROOT / "bench" / "accelerator_check.py"
)
check = importlib.util.module_from_spec(spec)
sys.modules["accelerator_check"] = check  # dataclasses look their module up
spec.loader.exec_module(check)

TINY = (
    MYST_HEADER
    + """
# Tiny

```{code-cell} ipython3
print(1 + 1)
```

```{code-cell} ipython3
import jaxguide
jaxguide.claim("two", 2, 1 + 1 == 3, "three")
```
"""
)


BROKEN = MYST_HEADER + "\n# Broken\n\n```{code-cell} ipython3\n1 / 0\n```\n"


def tiny_book(tmp_path):
    """A checkout with a chapter and a 'CPU build' of it whose first output differs, and a
    chapter that fails."""
    for name in ("_config.yml", "pyproject.toml"):  # the notebook's set-up cell reads them
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: index\nchapters:\n  - file: tiny\n  - file: broken\n"
    )
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "index.md").write_text("# Index\n")
    (tmp_path / "book" / "tiny.md").write_text(TINY)
    (tmp_path / "book" / "broken.md").write_text(BROKEN)
    built = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "print(1 + 1)",
                outputs=[nbformat.v4.new_output("stream", name="stdout", text="3\n")],
            )
        ]
    )
    (tmp_path / "_build" / "jupyter_execute").mkdir(parents=True)
    nbformat.write(built, tmp_path / "_build" / "jupyter_execute" / "tiny.ipynb")
    return tmp_path


def test_smoke_run_writes_the_report(tmp_path):
    root = tiny_book(tmp_path)
    out = tmp_path / "report.md"
    argv = ["--smoke", "--root", str(root), "--chapters", "tiny", "broken", "--out", str(out)]
    code = check.main(argv)
    text = out.read_text()
    assert code == 1, text  # broken failed; the others ran and are reported
    assert "| broken | failed: ZeroDivisionError: division by zero |" in text
    assert "Accelerator check (smoke run)" in text
    assert "| matmul (256×256 float32) |" in text and "| copy (4 MiB read + written) |" in text
    assert "no published figure" in text  # a CPU matches no chip of jaxguide.hardware
    assert "| tiny | ran |" in text
    assert "- claim: ✗ two: 2" in text  # not strict: reported, the chapter carries on
    diffs = [line for line in text.splitlines() if line.startswith("- output: cell 0")]
    assert len(diffs) == 1 and "3" in diffs[0]  # the build printed 3, this run 2


def test_measurements_are_positive_rates():
    found = check.measure(smoke=True)
    assert found["backend"] == "cpu" and found["chip"] is None
    assert found["matmul"][1] > 0 and found["copy"][1] > 0
    json.dumps(found)  # plain values, fit for a report


@pytest.mark.parametrize(
    "kind, name",
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H200", "H200"),
        ("TPU v5 lite", "TPU v5e"),
        ("TPU v4", "TPU v4"),
        ("cpu", None),
    ],
)
def test_device_kinds_map_to_published_chips(kind, name):
    assert check.chip_for(kind) == name
    assert all(chip in hardware.names() for _, chip in check.KINDS)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--chapters", "nope"], "choose from"),
        (["--parallel", "0"], "must be at least 1"),
        (["--timeout", "0"], "positive number of seconds"),
        (["--root", "/nonexistent"], "no _toc.yml and book/"),
    ],
)
def test_arguments_are_checked(argv, message, capsys):
    with pytest.raises(SystemExit):
        check.parse(argv)
    assert message in capsys.readouterr().err
