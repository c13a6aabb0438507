"""Search: ``html_search_scorer`` (``book/_static/jaxguide-search.js``) resolved
against the book's folder, and the search scripts (tools, index, scorer) only on the
page that uses them, search.html."""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

# pydata-sphinx-theme loads Sphinx's search tools and the whole search index in the
# head of every page, for its search-as-you-type option. With that option off (its
# default, and this book's), only search.html uses them: elsewhere they are
# render-blocking scripts. The search dialog submits to search.html either way.
_SEARCH_SCRIPTS = re.compile(
    r'[ \t]*<script src="(?:\.\./)*(?:_static/searchtools\.js|_static/language_data\.js|searchindex\.js)[^"]*"></script>\n?'
)
_SCORER_SCRIPT = re.compile(
    r'[ \t]*<script[^>]* src="(?:\.\./)*_static/jaxguide-search\.js[^"]*"></script>\n?'
)


def resolve_scorer(app: Sphinx, config: Config) -> None:
    """``html_search_scorer`` is opened relative to the working directory; resolve it
    against the book's folder, so the build works from any directory."""
    scorer = config.html_search_scorer
    if scorer and not Path(scorer).is_absolute():
        config.html_search_scorer = str(Path(app.confdir) / scorer)


def search_scripts(text: str, page: Path, *, as_you_type: bool) -> str:
    """``text`` (the page ``page``) without the search scripts it does not use."""
    if page.name == "search.html":
        return text
    if not as_you_type:
        text = _SEARCH_SCRIPTS.sub("", text)
    # The search scorer (book/_static/jaxguide-search.js) is for search.html only.
    return _SCORER_SCRIPT.sub("", text)
