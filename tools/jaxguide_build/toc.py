"""The book's table of contents, read the way Jupyter Book reads it.

Build tooling and tests need the list of pages in ``_toc.yml``. They read it with
``sphinx_external_toc``'s parser, the one Jupyter Book itself uses, so every form of
toc Jupyter Book accepts (``parts:`` with captions, a flat ``chapters:`` list, nested
``sections:``) gives the same pages here, in the book's reading order.

``pages()`` gives ``['index', 'numpy', ...]``; ``parts()`` the same grouped by part
caption. tests/test_toc.py checks each toc form.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .environment import ROOT

TOC = ROOT / "_toc.yml"
BOOK = ROOT / "book"


class TocError(ValueError):
    """``_toc.yml`` cannot be read, or names a page that has no source file."""


@dataclass(frozen=True)
class Part:
    caption: str  # the part's caption ("" for a toc without parts)
    pages: tuple[str, ...]


def _site_map(toc: Path) -> Any:
    from sphinx_external_toc.parsing import parse_toc_yaml

    if not toc.is_file():
        raise TocError(f"no table of contents at {toc}")
    try:
        return parse_toc_yaml(toc)
    except Exception as err:  # the parser's own errors say what is wrong
        raise TocError(f"{toc.name} cannot be read: {err}") from err


def parts(toc: Path = TOC, book: Path = BOOK) -> list[Part]:
    """The toc's parts, each with its pages in reading order (sections included).

    Raises:
        TocError: the toc is missing or malformed, or names a page with no ``.md`` or
            ``.ipynb`` file in ``book``.
    """
    site = _site_map(toc)
    result = []

    def walk(docname: str) -> list[str]:
        found = []
        for subtree in site[docname].subtrees:
            for item in subtree.items:
                if isinstance(item, str):  # a page (globs and URLs are not str)
                    found.append(item)
                    found += walk(item)
        return found

    for subtree in site[site.root.docname].subtrees:
        names = []
        for item in subtree.items:
            if isinstance(item, str):
                names.append(item)
                names += walk(item)
        result.append(Part(subtree.caption or "", tuple(names)))
    missing = [
        n
        for n in [site.root.docname] + [p for part in result for p in part.pages]
        if not any((book / f"{n}{ext}").is_file() for ext in (".md", ".ipynb"))
    ]
    if missing:
        raise TocError(
            f"{toc.name} names page(s) with no source file in {book.name}/: {', '.join(missing)}"
        )
    return result


def pages(toc: Path = TOC, book: Path = BOOK) -> list[str]:
    """Every page of the book in reading order, the root page first."""
    site = _site_map(toc)
    return [site.root.docname] + [p for part in parts(toc, book) for p in part.pages]
