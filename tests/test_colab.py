"""jaxguide_build.colab: the Colab button opens ``notebooks/<page>.ipynb`` in the repository
and branch of _config.yml, on a minimal fake Sphinx app (its result on the built book is
tests/test_notebooks.py::test_colab_and_download_buttons)."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

from jaxguide_build import colab


def _app(**theme_options):
    return SimpleNamespace(config=SimpleNamespace(html_theme_options=theme_options))


def test_colab_url_names_the_notebook_in_the_configured_repository_and_branch():
    app = _app(repository_url="https://github.com/some-one/jax.guide", repository_branch="dev")
    assert colab.colab_url(app, "autodiff") == (
        "https://colab.research.google.com/github/some-one/jax.guide/blob/dev/"
        "notebooks/autodiff.ipynb"
    )
    # A trailing slash is the same repository; no branch means main.
    app = _app(repository_url="https://github.com/o/r/")
    assert colab.colab_url(app, "part/page") == (
        "https://colab.research.google.com/github/o/r/blob/main/notebooks/part/page.ipynb"
    )


@pytest.mark.parametrize(
    "url",
    ["https://gitlab.com/o/r", "https://github.com/o/r/tree/main", "https://github.com/o", ""],
)
def test_colab_url_refuses_a_repository_that_is_not_on_github(url):
    with pytest.raises(ValueError, match="repository.url") as err:
        colab.colab_url(_app(repository_url=url), "autodiff")
    assert repr(url) in str(err.value)  # the bad value is named


def _buttons(colab_url: str) -> list[dict]:
    """Header buttons as sphinx-book-theme gives a notebook page: the launch buttons in
    a dropdown (Colab's url built from ``book/<page>.md``), beside others."""
    return [
        {"type": "link", "url": "https://github.com/o/r", "label": "Source repository"},
        {
            "type": "group",
            "label": "Launch interactive content",
            "buttons": [
                {"type": "link", "url": "https://mybinder.org/v2/gh/o/r/main?urlpath=x"},
                {"type": "link", "text": "Colab", "url": colab_url},
            ],
        },
        {"type": "group", "buttons": [{"type": "link", "url": "_sources/autodiff.md"}]},
    ]


def test_the_colab_button_of_a_page_opens_its_notebook():
    app = _app(repository_url="https://github.com/o/r", repository_branch="pages")
    theme = "https://colab.research.google.com/github/o/r/blob/pages/book/autodiff.md"
    context = {"header_buttons": _buttons(theme)}
    colab.page_context(app, "autodiff", "page.html", context, None)
    expected = _buttons(
        "https://colab.research.google.com/github/o/r/blob/pages/notebooks/autodiff.ipynb"
    )
    assert context["header_buttons"] == expected  # only Colab's url changed


def test_a_page_without_a_notebook_keeps_its_buttons():
    """The theme gives a page that is not a notebook no launch buttons: nothing points
    at a notebook that does not exist, and a page with no buttons at all is fine."""
    app = _app(repository_url="https://github.com/o/r")
    buttons = [b for b in _buttons("unused") if b.get("label") != "Launch interactive content"]
    context = {"header_buttons": copy.deepcopy(buttons)}
    colab.page_context(app, "index", "page.html", context, None)
    assert context["header_buttons"] == buttons
    assert "colab" not in repr(context)
    empty: dict = {}
    colab.page_context(app, "search", "search.html", empty, None)
    assert empty == {}
