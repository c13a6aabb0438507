"""Never stale: a change to jaxguide re-executes exactly the chapters that import the
changed module, and a rebuild with nothing changed executes nothing.

Runs on a two-page book in a temporary copy of the repository. The build runs with
PYTHONPATH pointing at the copy's src/, so the kernel and the extension both see the
copy of jaxguide, which the test edits.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bookcheck import MYST_HEADER, ROOT

pytestmark = pytest.mark.book

USES_COMPILED = MYST_HEADER + """# Uses compiled

```{code-cell} ipython3
from jaxguide.compiled import format_bytes

print("size:", format_bytes(512))
```
"""

USES_TIMING_ONLY = MYST_HEADER + """# Uses timing only

```{code-cell} ipython3
import jaxguide

print("formatted:", jaxguide.format_seconds(0.0015))
```
"""


def build(repo: Path, ok: bool = True) -> tuple[str, float]:
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    exe = Path(sys.executable).parent / "jupyter-book"
    start = time.perf_counter()
    proc = subprocess.run([str(exe), "build", "book/"], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    assert (proc.returncode == 0) == ok, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout + proc.stderr, seconds


def executed(log: str) -> set[str]:
    """Chapters executed by myst-nb, or by the extension's parallel pre-execution."""
    names = {Path(line.split(":")[0]).stem for line in log.splitlines() if "Executing notebook" in line}
    for match in re.findall(r"chapters in parallel: ([\w, ]+)", log):
        names |= {n.strip() for n in match.split(",")}
    return names


def make_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "book").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "_config.yml", repo)
    shutil.copytree(ROOT / "tools", repo / "tools")
    shutil.copytree(ROOT / "book" / "_static", repo / "book" / "_static")
    shutil.copytree(ROOT / "src", repo / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (repo / "_toc.yml").write_text("format: jb-book\nroot: a\nchapters:\n  - file: b\n")
    os.symlink("../_toc.yml", repo / "book" / "_toc.yml")
    (repo / "book" / "a.md").write_text(USES_COMPILED)
    (repo / "book" / "b.md").write_text(USES_TIMING_ONLY)
    return repo


def test_rebuilds_exactly_what_a_jaxguide_change_affects(tmp_path):
    repo = make_repo(tmp_path)
    log, _ = build(repo)
    assert executed(log) == {"a", "b"}
    assert "size: 512 B" in (repo / "_build/html/a.html").read_text()

    log, seconds = build(repo)
    assert executed(log) == set(), "a rebuild with nothing changed executed something"

    compiled = repo / "src/jaxguide/compiled.py"
    text = compiled.read_text()
    assert 'return f"{n:.0f} B"' in text
    compiled.write_text(text.replace('return f"{n:.0f} B"', 'return f"{n:.0f} bytes"'))
    log, _ = build(repo)
    assert executed(log) == {"a"}, "only the page importing jaxguide.compiled should re-execute"
    assert "jaxguide modules changed: compiled" in log
    html = (repo / "_build/html/a.html").read_text()
    assert "size: 512 bytes" in html and "size: 512 B<" not in html

    # A build folder copied from another checkout caches the chapters under that
    # checkout's paths; a change still re-executes them (matched by their code's hash).
    moved = tmp_path / "moved"
    shutil.copytree(repo, moved, symlinks=True)
    compiled = moved / "src/jaxguide/compiled.py"
    compiled.write_text(compiled.read_text().replace('return f"{n:.0f} bytes"', 'return f"{n:.0f} octets"'))
    log, _ = build(moved)
    assert executed(log) == {"a"}
    assert "size: 512 octets" in (moved / "_build/html/a.html").read_text()

    # Editing the chapter itself still re-executes it, as myst-nb's cache does.
    (repo / "book" / "b.md").write_text(USES_TIMING_ONLY.replace("0.0015", "2.5"))
    log, _ = build(repo)
    assert executed(log) == {"b"}
    assert "formatted: 2.5 s" in (repo / "_build/html/b.html").read_text()


FAILING = USES_TIMING_ONLY.replace('print("formatted:"', 'print(1 / 0)\nprint("formatted:"')


def test_a_failing_chapter_is_reported_once_and_keeps_the_others_cached(tmp_path):
    repo = make_repo(tmp_path)
    (repo / "book" / "b.md").write_text(FAILING)
    log, _ = build(repo, ok=False)
    # One execution of each chapter, in parallel; the failure reported from that run,
    # starting with the chapter and the error, then the cell.
    assert executed(log) == {"a", "b"} and "Executing notebook" not in log
    report = log[log.index("[jaxguide-fresh] chapter 'b' failed"):]
    assert report.startswith("[jaxguide-fresh] chapter 'b' failed: ZeroDivisionError: division by zero")
    assert report.splitlines()[1] == "  in the cell:" and "    print(1 / 0)" in report.splitlines()
    assert log.count("ZeroDivisionError: division by zero") <= 2
    # a's outputs were cached and fingerprinted although the build failed: fixing b
    # re-executes b alone.
    (repo / "book" / "b.md").write_text(USES_TIMING_ONLY)
    log, _ = build(repo)
    assert executed(log) == {"b"}
    assert "formatted: 1.5 ms" in (repo / "_build/html/b.html").read_text()
