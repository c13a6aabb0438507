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

USES_SHARDING = MYST_HEADER + """# Uses sharding

```{code-cell} ipython3
import jax.numpy as jnp
from jaxguide.sharding import notation

print("notation:", notation(jnp.ones((2, 3))))
```
"""

USES_TIMING_ONLY = MYST_HEADER + """# Uses timing only

```{code-cell} ipython3
import jaxguide

print("formatted:", jaxguide.format_seconds(0.0015))
```
"""


def build(repo: Path) -> tuple[str, float]:
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    exe = Path(sys.executable).parent / "jupyter-book"
    start = time.perf_counter()
    proc = subprocess.run([str(exe), "build", "book/"], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout + proc.stderr, seconds


def executed(log: str) -> set[str]:
    """Chapters executed by myst-nb, or by the extension's parallel pre-execution."""
    names = {Path(line.split(":")[0]).stem for line in log.splitlines() if "Executing notebook" in line}
    for match in re.findall(r"chapters in parallel: ([\w, ]+)", log):
        names |= {n.strip() for n in match.split(",")}
    return names


def test_rebuilds_exactly_what_a_jaxguide_change_affects(tmp_path):
    repo = tmp_path / "repo"
    (repo / "book").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", repo)
    shutil.copytree(ROOT / "tools", repo / "tools")
    shutil.copytree(ROOT / "src", repo / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (repo / "_toc.yml").write_text("format: jb-book\nroot: a\nchapters:\n  - file: b\n")
    os.symlink("../_toc.yml", repo / "book" / "_toc.yml")
    (repo / "book" / "a.md").write_text(USES_SHARDING)
    (repo / "book" / "b.md").write_text(USES_TIMING_ONLY)

    log, _ = build(repo)
    assert executed(log) == {"a", "b"}
    assert "notation: A[I, J] (one device)" in (repo / "_build/html/a.html").read_text()

    log, seconds = build(repo)
    assert executed(log) == set(), "a rebuild with nothing changed executed something"

    sharding = repo / "src/jaxguide/sharding.py"
    text = sharding.read_text()
    assert 'text + " (one device)"' in text
    sharding.write_text(text.replace('text + " (one device)"', 'text + " (on a single device)"'))
    log, _ = build(repo)
    assert executed(log) == {"a"}, "only the page importing jaxguide.sharding should re-execute"
    assert "jaxguide modules changed: sharding" in log
    html = (repo / "_build/html/a.html").read_text()
    assert "notation: A[I, J] (on a single device)" in html and "(one device)" not in html

    # Editing the chapter itself still re-executes it, as myst-nb's cache does.
    (repo / "book" / "b.md").write_text(USES_TIMING_ONLY.replace("0.0015", "2.5"))
    log, _ = build(repo)
    assert executed(log) == {"b"}
    assert "formatted: 2.5 s" in (repo / "_build/html/b.html").read_text()
