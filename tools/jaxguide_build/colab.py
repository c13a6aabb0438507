"""Sphinx extension: the Colab button opens the chapter's notebook.

sphinx-book-theme builds its Colab link from the page's source path
(``book/<page>.md``), which Colab cannot open. This points it at the notebook that
tools/make_notebooks.py generates from the page, ``notebooks/<page>.ipynb``, in the
repository and branch named once in _config.yml (``repository.url``/``branch``).
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

COLAB = "https://colab.research.google.com"
NOTEBOOKS = "notebooks"


def colab_url(app: Sphinx, pagename: str) -> str:
    """The Colab address of ``notebooks/<pagename>.ipynb`` in the book's repository."""
    opts = app.config.html_theme_options
    match = re.fullmatch(
        r"https://github\.com/([\w.-]+)/([\w.-]+)/?", opts.get("repository_url", "")
    )
    if not match:
        raise ValueError(
            f"_config.yml repository.url must be a GitHub repository, got {opts.get('repository_url')!r}"
        )
    owner, name = match.groups()
    branch = opts.get("repository_branch") or "main"
    return f"{COLAB}/github/{owner}/{name}/blob/{branch}/{NOTEBOOKS}/{pagename}.ipynb"


def _rewrite(buttons: list[dict[str, Any]], url: str) -> int:
    count = 0
    for button in buttons:
        if button.get("url", "").startswith(COLAB):
            button["url"] = url
            count += 1
        count += _rewrite(button.get("buttons", []), url)
    return count


def page_context(
    app: Sphinx,
    pagename: str,
    templatename: str,
    context: dict[str, Any],
    doctree: nodes.document | None,
) -> None:
    """``html-page-context``: the page's Colab button opens its notebook."""
    _rewrite(context.get("header_buttons", []), colab_url(app, pagename))


def setup(app: Sphinx) -> dict[str, Any]:
    # After sphinx-book-theme has added its launch buttons (default priority 500).
    app.connect("html-page-context", page_context, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
