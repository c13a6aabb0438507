"""Search: a Pagefind index of every section of the book, written after Sphinx, and the
search page (``search.html``) that reads it (``book/_static/jaxguide-search.js``).

Sphinx's own search (searchtools.js and searchindex.js) ranks whole pages, needs every
word of the query on one page, and hangs on some words in the Sphinx 7.4 line that
Jupyter Book 1 pins (sphinx-doc/sphinx#13096). Here each section of each page of the
table of contents (its heading, prose, code and outputs, without its subsections) is a
record of its own in a Pagefind index (``pagefind/`` in the site): a search ranks
sections, and each result links to its section's anchor. The Questions page is indexed
the same way. No page but ``search.html`` loads a search script, and that page loads
the index only when a reader searches.

Beside the index, ``pagefind/jaxguide-aliases.json`` holds what the search page adds to
Pagefind: ``aliases``, the old API names of the migration appendix's table mapped to
today's (a reader typing ``tree_leaves`` also searches ``jax.tree.leaves``);
``negated``, the book's words that negate another with the prefix in- (``indivisible``:
a reader's ``divisible`` also searches it; only words the book has, since Pagefind
answers a word it lacks with every word of its longest indexed prefix, which for
``in...`` is thousands); and ``answers``, for each record of a questions list, the
records its questions link to, by their Pagefind ids (the search page ranks those above
the list).
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import html
import importlib.metadata
import json
import keyword
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup, Tag
from sphinx.application import Sphinx
from sphinx.util import logging

from .. import toc
from ..cache import write_atomic

logger = logging.getLogger(__name__)

#: The folder of the index in the site.
FOLDER = "pagefind"
ALIASES = "jaxguide-aliases.json"
# This module's code: what it writes (the records, the tables beside the index) is tied
# to it, so that a change here writes them again.
_SOURCE_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
#: The migration appendix, whose table maps old names to today's.
MIGRATION = "migration"

# Sphinx's search scripts, in search.html's <head>: replaced by the book's search script.
_SEARCH_SCRIPTS = re.compile(
    r'[ \t]*<script[^>]* src="(?:\.\./)*(?:_static/searchtools\.js|_static/language_data\.js|searchindex\.js)[^"]*"></script>\n?'
)
_BOOK_SEARCH = '<script defer src="_static/jaxguide-search.js"></script>\n'
_BOOK_SCRIPT = re.compile(
    r'[ \t]*<script[^>]* src="(?:\.\./)*_static/jaxguide-search\.js[^"]*"></script>\n?'
)
# Elements whose text is not the section's (:func:`_not_text`): permalinks, buttons,
# scripts, the build's provenance box, the hidden bookkeeping cells' code, math's TeX
# source (the MathML is kept).
_NOT_TEXT_TAGS = frozenset({"script", "style", "button", "summary", "annotation"})
_NOT_TEXT_CLASSES = frozenset({"jaxguide-provenance", "toggle-details__summary"})
_HIDDEN_INPUT = frozenset({"tag_remove-input", "tag_hide-input"})


def _not_text(article: Tag) -> list[Tag]:
    """The elements of ``article`` whose text is not its section's: ``a.headerlink``,
    ``script``, ``style``, ``button``, ``summary``, ``annotation``,
    ``.jaxguide-provenance``, ``.toggle-details__summary``, and the ``.cell_input`` of a
    ``div.cell.tag_remove-input`` or ``div.cell.tag_hide-input`` (one pass over the tree:
    soupsieve's CSS selection of the same took half as long as parsing the page)."""
    found = []
    for tag in article.find_all(True):
        classes = tag.get("class") or ()
        if (
            tag.name in _NOT_TEXT_TAGS
            or (tag.name == "a" and "headerlink" in classes)
            or not _NOT_TEXT_CLASSES.isdisjoint(classes)
            or ("cell_input" in classes and _in_hidden_input_cell(tag))
        ):
            found.append(tag)
    return found


def _in_hidden_input_cell(tag: Tag) -> bool:
    for parent in tag.parents:
        classes = parent.get("class") or ()
        if parent.name == "div" and "cell" in classes and not _HIDDEN_INPUT.isdisjoint(classes):
            return True
    return False


_HEADING = re.compile(r"^h[1-6]$")
# The Questions page and each chapter's "Questions readers ask" list questions, each
# with a link to the section that answers it: their words count less than a section's
# own (Pagefind's data-pagefind-weight), so that the answer ranks above the question.
QUESTIONS = "questions"
QUESTION_LISTS = ("questions-readers-ask",)
QUESTIONS_WEIGHT = 0.5


@dataclass(frozen=True)
class Section:
    """One record of the index: a section's own content (its subsections excluded)."""

    url: str  # page.html#section-id ("page.html" for the page's first section)
    title: str  # the section's heading, as shown (with its number)
    page: str  # the page's title
    html: str  # the section's own HTML, without the elements _not_text finds
    ids: frozenset[str] = frozenset()  # the ids in its own content, its own included
    links: tuple[str, ...] = ()  # a questions list's links to sections: page.html#id

    def document(self) -> str:
        """The HTML Pagefind indexes for this record: the heading is its title, and its
        url (the section's anchor) is the ``url`` of the result's metadata."""
        return (
            '<!doctype html><html lang="en"><head><meta charset="utf-8"></head><body>'
            f'<span data-pagefind-meta="page" data-pagefind-ignore>{html.escape(self.page)}</span>'
            f'<a data-pagefind-meta="url[href]" data-pagefind-ignore href="{html.escape(self.url)}"></a>'
            f'<main data-pagefind-body><h2 data-pagefind-meta="title">{html.escape(self.title)}'
            f"</h2>{self.html}</main></body></html>"
        )


def _text(tag: Tag) -> str:
    return " ".join(tag.get_text(" ").split())


def heading_of(section: Tag) -> Tag | None:
    """The heading of ``section`` itself (a child ``<h1>`` to ``<h6>``), if it has one."""
    heading = section.find(_HEADING, recursive=False)
    return heading if isinstance(heading, Tag) else None


def headed_sections(article: Tag) -> list[Tag]:
    """The ``<section>`` elements of ``article`` (BeautifulSoup) that have an id and a
    heading of their own: the records of the index, in the page's order."""
    return [
        s
        for s in article.find_all("section")
        if isinstance(s, Tag) and heading_of(s) is not None and s.get("id")
    ]


_PRE = re.compile(r"(<pre\b[^>]*>)(.*?)(</pre>)", re.S)
_SPAN_TAG = re.compile(r"</?span\b[^>]*>")
_INLINE_PRE = re.compile(r'<span class="pre">([^<]*)</span>')


def _without_token_spans(html_text: str) -> str:
    """``html_text`` without the ``<span>`` tags of highlighted code (every span inside a
    ``<pre>``: one per token) and of inline code (``<span class="pre">``), their text
    kept: more than half of a page's tags, which carry no words and no ids, and most of
    the time parsing took."""
    html_text = _PRE.sub(lambda m: m[1] + _SPAN_TAG.sub("", m[2]) + m[3], html_text)
    return _INLINE_PRE.sub(r"\1", html_text)


def sections(text: str, page: str) -> list[Section]:
    """The sections of the built page ``page`` (its name, e.g. ``"sharding"``) whose
    HTML is ``text``: each ``<section>`` of the article that has a heading, with its
    own content only.

    >>> page = (
    ...     '<article class="bd-article"><section id="intro"><h1>Sharding</h1><p>Arrays.</p>'
    ...     '<section id="mesh"><h2>A mesh</h2><p id="grid">Devices.</p></section>'
    ...     "</section></article>"
    ... )
    >>> for s in sections(page, "sharding"):
    ...     print(s.url, "|", s.title, "|", s.page, "|", s.html, "|", sorted(s.ids))
    sharding.html | Sharding | Sharding | <p>Arrays.</p> | ['intro']
    sharding.html#mesh | A mesh | Sharding | <p id="grid">Devices.</p> | ['grid', 'mesh']
    """
    # Only the article is parsed: the page's header, sidebars and footer are a tenth of it.
    start = text.find('<article class="bd-article"')
    end = text.rfind("</article>")
    if start < 0 or end < start:
        return []
    article = BeautifulSoup(
        _without_token_spans(text[start : end + len("</article>")]), "html.parser"
    ).article
    if article is None:
        return []
    for tag in _not_text(article):
        tag.decompose()
    found = []
    headed = headed_sections(article)
    first = heading_of(headed[0]) if headed else None
    page_title = _text(first) if first is not None else page
    for i, section in enumerate(headed):
        heading = heading_of(section)
        assert heading is not None  # headed_sections keeps only sections with one
        parts = [
            str(child)
            for child in section.children
            if child is not heading
            and not (getattr(child, "name", None) == "section" and child in headed)
        ]
        own_id = str(section["id"])
        anchor = "" if i == 0 else f"#{own_id}"
        own = "".join(parts)
        ids = {own_id}
        links: list[str] = []
        for child in section.children:
            if isinstance(child, Tag) and not (child.name == "section" and child in headed):
                tags = [child, *(t for t in child.find_all(id=True) if isinstance(t, Tag))]
                ids |= {str(t["id"]) for t in tags if t.get("id")}
        if page == QUESTIONS or own_id in QUESTION_LISTS:
            own = f'<div data-pagefind-weight="{QUESTIONS_WEIGHT}">{own}</div>'
            for a in BeautifulSoup(own, "html.parser").select("a.internal[href], a[href^='#']"):
                href = str(a["href"])
                target = f"{page}.html{href}" if href.startswith("#") else href
                if "#" in target and "/" not in target and target not in links:
                    links.append(target)
        found.append(
            Section(
                url=f"{page}.html{anchor}",
                title=_text(heading),
                page=page_title,
                html=own,
                ids=frozenset(ids),
                links=tuple(links),
            )
        )
    return found


def answers(records: list[Section]) -> dict[str, list[str]]:
    """For each record of a questions list, the records its links lead to (their urls, as
    the index has them), in the order of the links; links to no record are left out."""
    record_of = {f"{r.url.split('#')[0]}#{i}": r.url for r in records for i in sorted(r.ids)}
    table = {}
    for r in records:
        targets = [record_of[link] for link in r.links if link in record_of]
        if targets:
            table[r.url] = list(dict.fromkeys(t for t in targets if t != r.url))
    return table


_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])")
_TAG = re.compile(r"<[^>]*>")


def negated(records: list[Section]) -> list[str]:
    """The words of ``records`` (lowercase, names split at their capitals and
    underscores) that negate another with the prefix in-: ``in`` and 5 or more letters."""
    found: set[str] = set()
    for r in records:
        # The text between the tags (a section's HTML has no script or style left).
        text = html.unescape(_TAG.sub(" ", r.html))
        found |= {w.lower() for w in _WORD.findall(text) if re.fullmatch(r"[Ii]n[a-z]{5,}", w)}
    return sorted(found)


_CODE = re.compile(r"`([^`]+)`")
_NAME = re.compile(r"[A-Za-z_][\w.]*")


def aliases(migration_md: str) -> dict[str, list[str]]:
    """Old API names of the migration appendix's table (its first column) mapped to the
    names that replace them (the code in its second column): ``{"jax.tree_leaves":
    ["jax.tree.leaves", ...], ...}``. Several old names in one cell each map to every
    new name of the row."""
    table: dict[str, list[str]] = {}
    rows: list[tuple[list[str], list[str]]] = []
    for line in migration_md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or set(cells[0]) <= {"-", ":"}:
            continue
        rows.append((_names(cells[0]), _names(cells[1])))
    current = {n for _, new in rows for n in new}
    for old, new in rows:
        for name in old:
            # An API name (dotted, snake_case or CamelCase), no longer in use.
            api = "." in name or "_" in name or sum(c.isupper() for c in name) >= 2
            if api and name not in current and new:
                table.setdefault(name, [])
                table[name] += [n for n in new if n not in table[name]]
    return table


def _names(cell: str) -> list[str]:
    """The API names in the code of a table cell, without arguments."""
    names = []
    for code in _CODE.findall(re.sub(r"\{\w+\}`[^`]*`", "", cell)):
        name = re.split(r"[(\s=\[]", code.strip(), maxsplit=1)[0].strip(".,;:")
        if _NAME.fullmatch(name) and not keyword.iskeyword(name) and name not in names:
            names.append(name)
    return names


def _write(records: list[Section], out: Path) -> int:
    """Run Pagefind's command line once over ``records``, each written as a page of a
    scratch folder: a few seconds for the whole book, where its Python client, which
    sends the records one by one, took about 40."""
    from pagefind_bin import get_executable

    with tempfile.TemporaryDirectory(prefix="jaxguide-pagefind-") as scratch:
        # Numbered in the records' order; the real url is in each page's metadata.
        for i, record in enumerate(records):
            (Path(scratch) / f"{i:05d}.html").write_text(record.document(), encoding="utf-8")
        proc = subprocess.run(
            [str(get_executable()), "--site", scratch, "--output-path", str(out)]
            + ["--force-language", "en", "--quiet"],
            capture_output=True,
            text=True,
        )
    if proc.returncode != 0:
        raise RuntimeError(
            f"jaxguide_build.site: Pagefind failed (exit {proc.returncode}):\n"
            + (proc.stdout + proc.stderr)[-2000:]
        )
    return len(records)


def without_sphinx_index(app: Sphinx, builder: Any) -> None:
    """``write-started``: no Sphinx search index. The search page reads Pagefind's
    (:func:`write_index`) and no page loads ``searchindex.js``, which Sphinx would
    otherwise build as it writes each page (a few seconds of a full build) and write to
    the site. Sphinx still writes ``search.html``, which :func:`search_scripts` gives
    the book's script; an index left by an earlier build is deleted."""
    from sphinx.builders.html import StandaloneHTMLBuilder

    if not isinstance(builder, StandaloneHTMLBuilder):
        return
    prepare = builder.prepare_writing

    def prepare_writing(docnames: set[str]) -> None:
        prepare(docnames)
        builder.indexer = None  # Sphinx skips feeding and dumping an index it lacks

    # Nor does it load the last build's index (there is none: it would warn that the
    # index will be incomplete on every build that writes only some pages).
    builder.load_indexer = lambda docnames: None  # type: ignore[method-assign]
    builder.prepare_writing = prepare_writing  # type: ignore[method-assign]
    (Path(builder.outdir) / builder.searchindex_filename).unlink(missing_ok=True)


def write_index(app: Sphinx, outdir: Path) -> None:
    """``build-finished``: the Pagefind index of every section of the toc's pages in
    ``outdir/pagefind``, and the alias table beside it; skipped when the records are
    those of the index already there."""
    records = page_records(outdir, toc.pages(), outdir.parent / SECTIONS_MEMO)
    source = Path(app.srcdir) / f"{MIGRATION}.md"
    table = aliases(source.read_text(encoding="utf-8")) if source.is_file() else {}
    out = outdir / FOLDER
    digest = hashlib.sha256(
        json.dumps([r.document() for r in records]).encode()
        + json.dumps(table, sort_keys=True).encode()
        + _SOURCE_DIGEST.encode()
    ).hexdigest()
    stamp = outdir.parent / ".jaxguide-search-digest"
    if (
        (out / "pagefind.js").is_file()
        and stamp.is_file()
        and stamp.read_text(encoding="utf-8") == digest
    ):
        return
    count = write_records(records, table, out)
    write_atomic(stamp, digest.encode())
    logger.info(f"[jaxguide-build] search: {count} sections indexed in {FOLDER}/")


#: Each page's records, by the page's digest, from the last build (:func:`write_index`
#: parses only the pages that changed since).
SECTIONS_MEMO = ".jaxguide-search-records.json"


def page_records(outdir: Path, pages: list[str], memo_file: Path) -> list[Section]:
    """The records (:func:`sections`) of ``pages`` built in ``outdir``, in order: those of
    a page unchanged since the memo in ``memo_file`` was written are read from it, the
    others parsed (and the memo written again)."""
    memo = _read_memo(memo_file)
    fresh: dict[str, tuple[str, list[Section]]] = {}
    records: list[Section] = []
    for page in pages:
        built = outdir / f"{page}.html"
        if built.is_file():
            text = built.read_text(encoding="utf-8")
            key = hashlib.sha256(text.encode()).hexdigest()
            known = memo.get(page)
            found = known[1] if known and known[0] == key else sections(text, page)
            fresh[page] = (key, found)
            records += found
    if fresh != memo:
        pages_json = {
            page: [key, [_record_json(r) for r in found]] for page, (key, found) in fresh.items()
        }
        text = json.dumps({"code": _SOURCE_DIGEST, "pages": pages_json}, sort_keys=True)
        write_atomic(memo_file, text.encode())
    return records


def _read_memo(path: Path) -> dict[str, tuple[str, list[Section]]]:
    """The memo at ``path``; empty if there is none, it cannot be read, or it was written
    by other code than this module's."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["code"] != _SOURCE_DIGEST:
            return {}
        return {
            page: (key, [_record(r) for r in found]) for page, (key, found) in data["pages"].items()
        }
    except Exception:  # missing, damaged, or written by other code: parse again
        return {}


def _record_json(record: Section) -> dict[str, object]:
    """``record`` as JSON: its fields, the set of ids sorted."""
    return {**dataclasses.asdict(record), "ids": sorted(record.ids), "links": list(record.links)}


def _record(data: dict[str, Any]) -> Section:
    """The record :func:`_record_json` wrote."""
    return Section(**{**data, "ids": frozenset(data["ids"]), "links": tuple(data["links"])})


def write_records(records: list[Section], table: dict[str, list[str]], out: Path) -> int:
    """A fresh Pagefind index of ``records`` in ``out``, with the search page's tables
    beside it (the alias ``table``, the negated words, the questions' answers); returns
    the number of records Pagefind indexed. With no records (a book whose pages have no
    headed sections), there is no index: Pagefind refuses an empty site."""
    if out.exists():
        shutil.rmtree(out)
    if not records:
        return 0
    count = _write(records, out)
    entry = out / "pagefind-entry.json"
    indexed = json.loads(entry.read_text(encoding="utf-8")) if entry.is_file() else {}
    pages = sum(lang.get("page_count", 0) for lang in indexed.get("languages", {}).values())
    if not (out / "pagefind.js").is_file() or pages != count:
        raise RuntimeError(
            f"jaxguide_build.site: Pagefind indexed {pages} of {count} sections in {out}"
        )
    # The search page knows a result by its Pagefind id (its fragment's name) before it
    # loads the result's data: the answers table is written with those ids.
    ids = {url: fragment.name.split(".")[0] for fragment, url in fragment_urls(out)}
    by_id = {
        ids[q]: [ids[t] for t in targets if t in ids]
        for q, targets in answers(records).items()
        if q in ids
    }
    tables = {"aliases": table, "negated": negated(records), "answers": by_id}
    write_atomic(out / ALIASES, json.dumps(tables, sort_keys=True).encode())
    return count


#: The Pagefind release whose fragment files :func:`fragment_urls` was written for: their
#: layout is not a documented interface.
FRAGMENTS_TESTED = "1.5."


def fragment_urls(out: Path, release: str | None = None) -> list[tuple[Path, str]]:
    """Each fragment file of the Pagefind index in ``out`` with its record's url (gzip, a
    ``pagefind_dcd`` signature, then JSON with the metadata). On a release of Pagefind
    other than :data:`FRAGMENTS_TESTED` (``release``: the installed one by default), a
    RuntimeError says what to re-check instead of reading a layout that may have changed."""
    release = release or importlib.metadata.version("pagefind_bin")
    if not release.startswith(FRAGMENTS_TESTED):
        raise RuntimeError(
            f"jaxguide_build.site: Pagefind {release} is installed; the search page's answers "
            f"table reads the fragment files of Pagefind {FRAGMENTS_TESTED}x. Check that "
            "pagefind/fragment/*.pf_fragment are still gzip files of 'pagefind_dcd' and JSON "
            "with meta.url, then update FRAGMENTS_TESTED in tools/jaxguide_build/site/search.py."
        )
    found = []
    for fragment in sorted((out / "fragment").glob("*.pf_fragment")):
        data = gzip.decompress(fragment.read_bytes()).removeprefix(b"pagefind_dcd")
        found.append((fragment, json.loads(data)["meta"]["url"]))
    return found


def search_scripts(text: str, page: Path) -> str:
    """``text`` (the page ``page``) without Sphinx's search scripts. Jupyter Book puts
    every script of ``_static`` on every page: the book's search script
    (``_static/jaxguide-search.js``) stays on ``search.html`` alone."""
    text = _SEARCH_SCRIPTS.sub("", text)
    if page.name != "search.html":
        return _BOOK_SCRIPT.sub("", text)
    if not _BOOK_SCRIPT.search(text):
        text = text.replace("</head>", _BOOK_SEARCH + "</head>", 1)
    return text
