"""Colab notebooks: generated from the chapters, never stale, linked from every page,
and runnable with nothing but a jaxguide wheel (as Colab would install it)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from bookcheck import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import make_notebooks  # noqa: E402

CHAPTERS = make_notebooks.chapters()


def test_every_chapter_has_an_up_to_date_notebook():
    assert CHAPTERS and "numpy" in CHAPTERS and "index" not in CHAPTERS
    assert make_notebooks.main(["--check"]) == 0, "run: make notebooks"


def test_the_check_catches_stale_and_missing_notebooks(tmp_path, monkeypatch):
    monkeypatch.setattr(make_notebooks, "OUT", tmp_path)
    assert make_notebooks.main([]) == 0
    (tmp_path / "numpy.ipynb").write_text((tmp_path / "numpy.ipynb").read_text().replace("jnp", "np"))
    (tmp_path / "random.ipynb").unlink()
    assert make_notebooks.main(["--check"]) == 1


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_notebook_is_clean_for_colab(chapter):
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    assert set(nb["metadata"]) <= {"kernelspec", "language_info", "colab"}
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    setup = "".join(code[0]["source"])
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    assert 'if "google.colab" in sys.modules:' in setup
    assert f"jaxguide @ git+{url}@v{make_notebooks.version()}" in setup  # a tag, not a branch
    text = json.dumps(nb)
    for build_only in ("{glue", "jaxguide.provenance()", "jupytext"):
        assert build_only not in text, build_only
    # Images and links must resolve inside Colab too: nothing by a path into the repository.
    markdown = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    targets = re.findall(r"\]\(([^)\s]+)", markdown) + re.findall(r"<img[^>]+src=\"([^\"]+)", markdown)
    assert all(t.startswith(("https://", "http://", "#")) for t in targets), targets


@pytest.mark.book
def test_colab_and_download_buttons(book):
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    owner_repo = cfg["url"].removeprefix("https://github.com/")
    for chapter in CHAPTERS:
        soup = BeautifulSoup(book.page(chapter), "html.parser")
        colab = [a["href"] for a in soup.select("a[href]") if "colab.research.google.com" in a["href"]]
        assert colab == [f"https://colab.research.google.com/github/{owner_repo}/blob/{cfg['branch']}/notebooks/{chapter}.ipynb"], colab
        assert (ROOT / "notebooks" / f"{chapter}.ipynb").is_file()
        downloads = {a["href"] for a in soup.select("a[href]") if a["href"].startswith("_sources/")}
        assert downloads == {f"_sources/{chapter}.md", f"_sources/{chapter}.ipynb"}, downloads
        executed = json.loads((book.html / "_sources" / f"{chapter}.ipynb").read_text())
        assert any(c.get("outputs") for c in executed["cells"] if c["cell_type"] == "code")


RUNNER = """
import sys, nbformat, nbclient, jaxguide
assert "site-packages" in jaxguide.__file__, jaxguide.__file__
path = sys.argv[1]
nb = nbformat.read(path, as_version=4)
nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                        resources={"metadata": {"path": sys.argv[2]}}).execute()
print("OK", path)
"""


def uv() -> str:
    found = shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    assert Path(found).exists(), "uv not found: run make env"
    return found


@pytest.mark.book
def test_notebooks_run_from_a_wheel_in_a_clean_environment(tmp_path):
    run = lambda *a, **kw: subprocess.run(a, capture_output=True, text=True, check=True, **kw)  # noqa: E731
    run(uv(), "build", "--wheel", "--out-dir", str(tmp_path / "dist"), cwd=ROOT)
    wheel = next((tmp_path / "dist").glob("jaxguide-*.whl"))
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(run(uv(), "export", "--frozen", "--all-groups", "--no-hashes", "--no-emit-project", cwd=ROOT).stdout)
    venv = tmp_path / "venv"
    run(uv(), "venv", "--quiet", "--python", "3.11", str(venv))
    python = venv / "bin" / "python"
    run(uv(), "pip", "install", "--quiet", "--python", str(python), "-c", str(constraints), str(wheel), "ipykernel", "nbclient")
    work = tmp_path / "work"  # no repository paths: only the notebooks
    shutil.copytree(ROOT / "notebooks", work)
    (tmp_path / "runner.py").write_text(RUNNER)
    procs = {}
    pending = sorted(work.glob("*.ipynb"))
    failures = []
    while pending or procs:
        while pending and len(procs) < 2:  # two at a time: this machine has 2 cores
            nb = pending.pop(0)
            procs[nb.stem] = subprocess.Popen(
                [str(python), str(tmp_path / "runner.py"), str(nb), str(work)], cwd=work,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env={"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)},
            )
        name, proc = next(iter(procs.items()))
        out, _ = proc.communicate(timeout=900)
        del procs[name]
        if proc.returncode != 0:
            failures.append(f"{name}:\n{textwrap.shorten(out[-3000:], 3000)}")
    assert failures == []
    assert len(list(work.glob("*.ipynb"))) == len(CHAPTERS)
