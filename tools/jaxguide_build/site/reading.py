"""What the site's finishing passes read from a page's HTML: the words in it (the
stylesheet purge keeps the rules that can match one) and the Font Awesome icons it uses
(the icon stylesheet and fonts keep those). :class:`~.memo.PageMemo` keeps the result
for each page."""

from __future__ import annotations

import re

WORD = re.compile(r"[A-Za-z0-9_-]+")  # names may start with "-" or a digit: "-Color-Blue"
LINK = re.compile(r"<link\b[^>]*>")


CLASS_ATTR = re.compile(r'class="([^"]*\bfa[a-z-]*\b[^"]*)"')


# Class tokens that style an icon rather than name it.
_FA_MODIFIERS = {
    "fa",
    "fas",
    "far",
    "fab",
    "fa-solid",
    "fa-regular",
    "fa-brands",
    "fa-fw",
    "fa-lg",
    "fa-xs",
    "fa-sm",
    "fa-xl",
    "fa-2x",
    "fa-3x",
    "fa-spin",
    "fa-pulse",
    "fa-inverse",
    "fa-stack",
}


_STYLES = {"fa", "fas", "far", "fab", "fa-solid", "fa-regular", "fa-brands"}


def icons_in(text: str) -> set[str]:
    """Names of the Font Awesome icons a page uses: ``fa-github`` in ``class="fab fa-github"``."""
    used: set[str] = set()
    for classes in CLASS_ATTR.findall(text):
        tokens = classes.split()
        if any(t in _STYLES for t in tokens):
            used.update(t for t in tokens if t.startswith("fa-") and t not in _FA_MODIFIERS)
    return used
