"""Stylesheets without the rules no page can use: the stylesheets the pages link keep
only the rules whose classes and ids occur somewhere in the site's pages or scripts
(:func:`purge_css`), and an ``@import`` is inlined. The originals are kept beside the
output and put back at the next build (:func:`restore_stylesheets`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

from sphinx.application import Sphinx

from ..cache import ContentCache, write_atomic
from .bundle import BUNDLE_NAME, bundle_sources, relocated_urls, stylesheet_hrefs
from .memo import PageMemo
from .reading import WORD

# The stylesheets the last build purged, listed in the output (one path a line), and
# where their originals are kept (next to the output folder).
_PURGED_LIST = ".jaxguide-purged-css"
_PURGE_CACHE = ".jaxguide-purge-cache"  # beside the html folder, like the font cache
_ORIGINALS = ".jaxguide-css-originals"
_IMPORT = re.compile(r"""@import\s+(?:url\()?["']?([^"')\s;]+)""")
_IMPORT_STATEMENT = re.compile(r"""@import\s+(?:url\()?["']([^"')\s;]+)["']\)?\s*;""")
_NAME_IN_SELECTOR = re.compile(r"[.#]((?:[A-Za-z0-9_-]|\\.)+)")
# At-rules whose block holds rules (purged inside); any other block is kept whole.
_NESTING_AT_RULES = ("@media", "@supports", "@layer", "@container", "@document")


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses, brackets and strings."""
    parts: list[str] = []
    depth, quote, start = 0, "", 0
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote and text[i - 1] != "\\" else quote
        elif c in "\"'":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _css_blocks(css: str) -> Iterator[tuple[str, str | None]]:
    """Top-level items of a stylesheet: ``(prelude, body)`` for a rule or a block at-rule
    (``body`` without its braces), ``(statement, None)`` for ``@import ...;`` and the
    like. Comments are dropped; strings are respected."""
    i, n, prelude = 0, len(css), list[str]()
    while i < n:
        c = css[i]
        if css.startswith("/*", i):
            end = css.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c in "\"'":
            j = i + 1
            while j < n and css[j] != c:
                j += 2 if css[j] == "\\" else 1
            prelude.append(css[i : j + 1])
            i = j + 1
        elif c == ";":  # ends a statement at-rule: @import ...; @charset ...;
            if "".join(prelude).strip():
                yield "".join(prelude).strip() + ";", None
            prelude, i = [], i + 1
        elif c == "{":
            depth, j, quote = 1, i + 1, ""
            while j < n and depth:
                d = css[j]
                if quote:
                    if d == "\\":
                        j += 1
                    elif d == quote:
                        quote = ""
                elif d in "\"'":
                    quote = d
                elif css.startswith("/*", j):
                    j = css.find("*/", j + 2) + 1 or n
                elif d == "{":
                    depth += 1
                elif d == "}":
                    depth -= 1
                j += 1
            yield "".join(prelude).strip(), css[i + 1 : j - 1]
            prelude, i = [], j
        else:
            prelude.append(c)
            i += 1
    if "".join(prelude).strip():
        yield "".join(prelude).strip(), None


def _selector_used(selector: str, used: set[str], prefixes: tuple[str, ...]) -> bool:
    """Whether ``selector`` can match: every class and id it requires occurs somewhere
    in the site. Arguments of ``:not()``, ``:is()``, ``:where()``, ``:has()`` and
    attribute selectors are ignored (they never make a selector need more)."""
    plain, depth = [], 0
    for c in selector:
        depth += c in "(["
        if depth == 0:
            plain.append(c)
        depth -= c in ")]"
    for name in _NAME_IN_SELECTOR.findall("".join(plain)):
        if "\\" in name:
            continue  # an escaped name (e.g. md\:flex): keep, do not guess
        if name not in used and not name.startswith(prefixes):
            return False
    return True


def purge_css(css: str, used: set[str], prefixes: tuple[str, ...] = ()) -> str:
    """``css`` without the rules whose selectors need a class or id that occurs nowhere
    in ``used`` (nor starts with one of ``prefixes``, for names that scripts build,
    such as ``bs-tooltip-`` + a placement). A rule keeps the selectors that can match;
    ``@media``/``@supports`` blocks are purged inside and dropped when empty; other
    at-rules (``@font-face``, ``@keyframes``, ``@import``) are kept as they are.

    >>> css = ".used{color:red}.gone,.used b{margin:0}@media (min-width:9em){.gone{x:1}}"
    >>> print(purge_css(css + ".bs-tip-top{y:2}", used={"used"}, prefixes=("bs-",)))
    .used{color:red}
    .used b{margin:0}
    .bs-tip-top{y:2}
    """
    out = []
    for prelude, body in _css_blocks(css):
        if body is None:
            out.append(prelude)
        elif prelude.startswith("@"):
            if prelude.lower().startswith(_NESTING_AT_RULES):
                inner = purge_css(body, used, prefixes)
                if inner:
                    out.append(f"{prelude}{{{inner}}}")
            else:
                out.append(f"{prelude}{{{body}}}")
        else:
            keep = [
                s.strip() for s in _split_top(prelude, ",") if _selector_used(s, used, prefixes)
            ]
            if keep:
                out.append(f"{','.join(keep)}{{{body}}}")
    return "\n".join(out)


def _names_in_site(outdir: Path, memo: PageMemo | None = None) -> tuple[set[str], tuple[str, ...]]:
    """Every word in the site's pages and scripts (a superset of the classes and ids
    that can ever be on an element), and the words ending in ``-`` that scripts join
    to a variable part (``"bs-" + placement``), as prefixes."""
    words = (memo or PageMemo(outdir)).words()
    scripts: set[str] = set()
    for script in outdir.rglob("*.js"):
        if script.name == "searchindex.js":
            continue  # the pages' words, not code
        scripts.update(WORD.findall(script.read_text(encoding="utf-8", errors="replace")))
    prefixes = tuple(sorted(w for w in scripts if w.endswith("-") and len(w) >= 4))
    return words | scripts, prefixes


def _purge_stylesheets(outdir: Path, memo: PageMemo | None = None) -> list[Path]:
    """Purge every stylesheet the pages link or import (but the book's own) of rules no
    page can use; return the files rewritten, relative to ``outdir``."""
    used, prefixes = _names_in_site(outdir, memo)
    linked: set[str] = set()
    for page in outdir.glob("*.html"):
        for href in stylesheet_hrefs(page.read_text(encoding="utf-8")):
            if BUNDLE_NAME.search(href):
                linked.update(bundle_sources(outdir / href.split("?")[0]))
            else:
                linked.add(href.split("?")[0])
    paths = {(outdir / href).resolve() for href in linked}
    for path in list(paths):  # and the stylesheets they @import (theme.css: basic.css)
        if path.is_file():
            paths.update(
                (path.parent / m).resolve()
                for m in _IMPORT.findall(path.read_text(encoding="utf-8"))
            )
    # Keep each original: the next build starts from it (:func:`restore_stylesheets`), whether
    # or not Sphinx copies its static files again (it does not when no page changed).
    originals = outdir.parent / _ORIGINALS
    for path in paths:
        if path.is_file() and not path.name.startswith("jaxguide"):
            saved = originals / path.relative_to(outdir.resolve())
            saved.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(saved, path.read_bytes())
    rewritten: list[Path] = []
    # Purging is the slow part of a rebuild's post-processing. Its result depends on the
    # stylesheet, the prefixes, and which of the names its selectors use occur in the
    # site: kept per stylesheet with the digest of those, it is reused while they match
    # (an edited chapter rarely brings a class or id a stylesheet mentions).
    results = ContentCache(outdir.parent / _PURGE_CACHE, ".css")
    for path in sorted(paths):
        if not path.is_file() or path.name.startswith("jaxguide"):
            continue
        css = path.read_text(encoding="utf-8")
        relevant = sorted(used.intersection(_NAME_IN_SELECTOR.findall(css)))
        inputs = hashlib.sha256("\n".join([css, *relevant, "", *prefixes]).encode()).hexdigest()
        key = re.sub(r"[^A-Za-z0-9_-]", "_", str(path.relative_to(outdir.resolve())))
        stored = results.get(key)
        if stored is not None and stored.startswith(f"{inputs}\n".encode()):
            slim = stored[len(inputs) + 1 :].decode("utf-8")
        else:
            slim = purge_css(css, used, prefixes)
            results.put(key, f"{inputs}\n{slim}".encode())
        if len(slim) < len(css):
            path.write_text(slim, encoding="utf-8")
            rewritten.append(path.relative_to(outdir.resolve()))
    # An @import is a second round trip before the first paint (theme.css imports
    # basic.css): put the imported rules in its place, their relative url()s rewritten
    # to resolve from the importing file's folder.
    for path in sorted((outdir / href).resolve() for href in linked):
        if not path.is_file():
            continue
        css = path.read_text(encoding="utf-8")

        def inline(match: re.Match[str], path: Path = path) -> str:
            target = (path.parent / match.group(1)).resolve()
            if "://" in match.group(1) or not target.is_file():
                return match.group(0)
            return relocated_urls(target.read_text(encoding="utf-8"), target.parent, path.parent)

        flat = _IMPORT_STATEMENT.sub(inline, css)
        if flat != css:
            path.write_text(flat, encoding="utf-8")
            if path.relative_to(outdir.resolve()) not in rewritten:
                rewritten.append(path.relative_to(outdir.resolve()))
    return rewritten


def restore_stylesheets(app: Sphinx) -> None:
    """``builder-inited``: put back the originals of the stylesheets the last build
    purged, so this build purges them afresh for its pages (Sphinx copies static files
    only when it writes a page, and then finds them unchanged: no "overwrite" notes)."""
    outdir = Path(app.outdir)
    originals = outdir.parent / _ORIGINALS
    listed = outdir / _PURGED_LIST
    if not listed.is_file():
        return
    for name in listed.read_text(encoding="utf-8").split():
        if name.endswith("pydata-sphinx-theme.css"):
            continue  # theme.clear_rewritten removed it; icons writes it from the theme's
        saved = originals / name
        if saved.is_file():
            write_atomic(outdir / name, saved.read_bytes())


def purge_stylesheets(outdir: Path, memo: PageMemo) -> None:
    """Drop the CSS rules no page can use (most of Bootstrap's and sphinx-design's), so
    the stylesheets that block the first paint are a fraction of their size; list the
    files rewritten, whose originals come back at the next build."""
    rewritten = _purge_stylesheets(outdir, memo)
    write_atomic(outdir / _PURGED_LIST, "\n".join(str(p) for p in rewritten).encode())
