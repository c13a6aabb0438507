"""Generate notebooks/<chapter>.ipynb from each chapter's MyST source, for Colab.

    .venv/bin/python tools/make_notebooks.py          # write notebooks/ (make notebooks)
    .venv/bin/python tools/make_notebooks.py --check  # exit 1 if any is missing or stale

The notebooks are never edited by hand. Each is the chapter read with jupytext, plus:

* a first cell that, only inside Colab, installs jaxguide from the repository at the
  tag of this version (``v<version>`` from pyproject.toml), leaving Colab's own jax
  and jaxlib alone (jaxguide depends on a jax floor, not a pin);
* build-only parts removed: the provenance box, the cell that glues it, and MyST
  cross-reference targets such as ``(numpy)=``;
* ``{glue:text}`` values (numbers measured when the book was built) replaced by a note;
* no outputs, no jupytext front matter, and cell ids derived from the position, so
  that regenerating an unchanged chapter gives a byte-identical file.

The repository (owner, name, branch) is read from _config.yml, where it is written once.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import jupytext
import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "notebooks"

PROVENANCE_BOX = re.compile(r"```\{glue\} provenance\n```\n*")
TARGET_LABEL = re.compile(r"^\([\w-]+\)=\n", re.M)  # MyST cross-reference targets
GLUE_TEXT = re.compile(r"\{glue:text\}`[^`]+`")
BUILD_ONLY = 'jaxguide.glue("provenance"'


def repository() -> tuple[str, str]:
    """(``https://github.com/<owner>/<name>``, branch) from _config.yml."""
    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    url = repo["url"].rstrip("/")
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url):
        raise SystemExit(f"_config.yml repository.url must be https://github.com/<owner>/<name>, got {url!r}")
    return url, repo.get("branch", "main")


def version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def chapters() -> list[str]:
    """Every page of _toc.yml that is a notebook (has code cells)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [n for n in names if "```{code-cell}" in (ROOT / "book" / f"{n}.md").read_text()]


def setup_cell(url: str, tag: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(
        "# Set-up for Google Colab; does nothing anywhere else. Installs this book's companion\n"
        "# package at the release this notebook belongs to, keeping Colab's own jax and jaxlib.\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    get_ipython().run_line_magic("pip", "install --quiet \\"jaxguide @ git+{url}@{tag}\\"")'
    )


def notebook(name: str) -> str:
    """The notebook for chapter ``name``, as the exact text written to disk."""
    url, _ = repository()
    nb = jupytext.read(ROOT / "book" / f"{name}.md", fmt="md:myst")
    cells = [setup_cell(url, f"v{version()}")]
    for cell in nb.cells:
        if cell.cell_type == "code" and BUILD_ONLY in cell.source:
            continue
        if cell.cell_type == "markdown":
            cell.source = GLUE_TEXT.sub("*(a number measured when the book was built: run the code above)*",
                                        TARGET_LABEL.sub("", PROVENANCE_BOX.sub("", cell.source)))
            if not cell.source.strip():
                continue
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata = {"tags": cell.metadata["tags"]} if cell.metadata.get("tags") else {}
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


def main(argv: list[str]) -> int:
    check = "--check" in argv
    OUT.mkdir(exist_ok=True)
    stale = []
    for name in chapters():
        path = OUT / f"{name}.ipynb"
        text = notebook(name)
        if check:
            if not path.is_file() or path.read_text() != text:
                stale.append(name)
        elif not path.is_file() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    if stale:
        print(f"notebooks missing or out of date: {', '.join(stale)}. Run: make notebooks", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
