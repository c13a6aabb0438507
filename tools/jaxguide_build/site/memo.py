"""What the finishing passes read from each page (its words, its icons:
:mod:`.reading`), remembered with the digest of the page (:class:`PageMemo`): a rebuild
reads again only the pages Sphinx wrote, and a page whose digest is recorded is already
in its final form."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from sphinx.util import logging

from ..cache import write_atomic
from .reading import LINK, WORD, icons_in

logger = logging.getLogger(__name__)


#: The code that decides what a final page is: every pass of the site (this folder).
CODE = Path(__file__).parent


def code_digest(folder: Path = CODE) -> str:
    """A digest of the Python sources in ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class PageMemo:
    """What the site's finishing steps read from each page (the words in it, the icons it
    uses), kept beside the output with the digest of the page it was read from: a
    rebuild reads again only the pages Sphinx wrote. A digest also tells whether a
    page is already in its final form (:meth:`final`). The memo is tied to ``setting``
    and to the code of the site's passes (:data:`CODE`, which decides what a final page
    is): with another, it starts empty, and every page is finished and read again. Saved atomically; an
    unreadable memo counts as empty."""

    NAME = ".jaxguide-page-memo.json"

    def __init__(self, outdir: Path, setting: str = "") -> None:
        self.outdir = outdir
        self.path = outdir.parent / self.NAME
        self.version = hashlib.sha256((code_digest(CODE) + setting).encode()).hexdigest()
        self.pages: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            try:
                stored = json.loads(self.path.read_text(encoding="utf-8"))
                if not isinstance(stored, dict) or not isinstance(stored.get("pages"), dict):
                    raise ValueError("not a page memo")
                if stored.get("version") == self.version:
                    self.pages = stored["pages"]
            except (ValueError, UnicodeDecodeError) as err:
                logger.info(
                    f"[jaxguide-build] {self.path.name} unreadable ({err}): reading every page"
                )
        self.changed = False

    def _key(self, page: Path) -> str:
        return page.relative_to(self.outdir).as_posix()

    @staticmethod
    def _digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def final(self, page: Path, text: str) -> bool:
        """Whether ``text`` is what this memo last recorded for ``page``."""
        entry = self.pages.get(self._key(page))
        return isinstance(entry, dict) and entry.get("digest") == self._digest(text)

    def entry(self, page: Path) -> dict[str, Any]:
        """``{"digest", "words", "icons"}`` for the page as it is now."""
        text = page.read_text(encoding="utf-8")
        if self.final(page, text):
            return self.pages[self._key(page)]
        entry = {
            "digest": self._digest(text),
            # A <link> names files, not classes: whether a page links the stylesheets
            # one by one or their bundle (:mod:`.bundle`) changes no word.
            "words": sorted(set(WORD.findall(LINK.sub("", text)))),
            "icons": sorted(icons_in(text)),
        }
        self.pages[self._key(page)] = entry
        self.changed = True
        return entry

    def icons(self) -> set[str]:
        """Names of the Font Awesome icons the site's pages use."""
        return set().union(*(self.entry(p)["icons"] for p in self.outdir.rglob("*.html")))

    def words(self) -> set[str]:
        """Every word in the site's pages."""
        return set().union(*(self.entry(p)["words"] for p in self.outdir.rglob("*.html")))

    def save(self) -> None:
        """Write the memo, forgetting pages that are gone (only if something changed)."""
        live = {self._key(p) for p in self.outdir.rglob("*.html")}
        pages = {k: v for k, v in self.pages.items() if k in live}
        if self.changed or pages.keys() != self.pages.keys():
            data = {"version": self.version, "pages": pages}
            write_atomic(self.path, json.dumps(data, sort_keys=True).encode())
