"""Every chapter ends with "Questions readers ask": real questions from the public issue
trackers of JAX, Flax, optax and orbax, each linked to its thread and to the section of
the book that answers it.

The format, in a chapter's source::

    (<chapter>-questions)=
    ## Questions readers ask

    - Why is my first call slow? ([jax-ml/jax#1234](https://github.com/jax-ml/jax/issues/1234))
      {ref}`answered in "Compilation happens once" <label-of-that-section>`

Checked on the built book: at least six questions, each with one thread from an allowed
tracker (an issue or a discussion: a pull request is not a question) and at least one link
into the book whose page and anchor exist, and no thread listed twice on one page.
"""

from __future__ import annotations

import functools
from pathlib import Path
from urllib.parse import urldefrag

import pytest

import bookcheck
from bookcheck import THREAD, executed_chapters, parsed_page

pytestmark = pytest.mark.book

MIN_QUESTIONS = 6


def faq_chapters() -> list[str]:
    """Every executed chapter has the section (the landing page and the report do not)."""
    return executed_chapters()


def questions(book, chapter: str) -> list:
    soup = parsed_page(book, chapter)
    # Sphinx writes a label's id with hyphens: (shard-map-questions)= for shard_map.
    label = f"{chapter.replace('_', '-')}-questions"
    section = soup.find(id=label)
    assert section is not None, f"{chapter}: no section labelled ({label})="
    if section.name != "section":  # the label's target may sit just before the section
        section = section.find_parent("section") or section.find_next("section")
    heading = section.find(["h1", "h2", "h3"])
    assert heading is not None and "Questions readers ask" in heading.get_text(), chapter
    lists = section.find_all("ul", recursive=False) or section.select("ul")
    assert lists, f"{chapter}: the questions section has no list"
    return lists[0].find_all("li", recursive=False)


def anchor_exists(html: Path, href: str, page: Path) -> bool:
    target, fragment = urldefrag(href)
    path = (page.parent / target).resolve() if target else page
    if not path.is_file():
        return False
    if not fragment:
        return True
    return fragment in ids_on(path)


@functools.cache
def ids_on(path: Path) -> frozenset[str]:
    """Every element id on a built page (parsed once: pages are large, links many)."""
    soup = bookcheck._soup(bookcheck._stamp(path))  # the parse the other tests share
    return frozenset(tag["id"] for tag in soup.find_all(id=True))


@pytest.mark.parametrize("chapter", faq_chapters())
def test_questions_readers_ask(book, chapter):
    items = questions(book, chapter)
    assert len(items) >= MIN_QUESTIONS, f"{chapter}: {len(items)} questions, want {MIN_QUESTIONS}"
    page = book.html / f"{chapter}.html"
    threads = []
    for item in items:
        hrefs = [a.get("href", "") for a in item.find_all("a")]
        external = [h for h in hrefs if h.startswith("http")]
        internal = [h for h in hrefs if not h.startswith("http")]
        text = " ".join(item.get_text(" ").split())
        assert len(external) == 1 and THREAD.match(external[0]), (
            f"{chapter}: {text!r} needs exactly one link to a real thread, got {external}"
        )
        threads.append(external[0])
        assert internal, f"{chapter}: {text!r} links to no section of the book"
        for href in internal:
            assert anchor_exists(book.html, href, page), f"{chapter}: {text!r}: {href} is broken"
    assert len(set(threads)) == len(threads), f"{chapter}: a thread is listed twice"
