"""The question bank (book/questions.yml) and the page made from it (book/questions.md).

Checked on the sources, without a build: every entry's thread is an issue or a
discussion of the JAX, Flax, optax or orbax tracker (never a pull request, by the
pattern bookcheck.THREAD that tests/test_questions.py applies to the chapters' own
lists), no thread is in the
bank twice, every answer names a section label that exists in the book, every thread a
chapter lists among its own "Questions readers ask" is in the bank, the page lists
exactly the answered entries and is what tools/make_questions.py writes today, and the
bank has not shrunk below the size it reached.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
import yaml

import make_questions  # tools/ (pytest's pythonpath)
from bookcheck import THREAD
from jaxguide_build.environment import ROOT

# Floors: the bank as it was reached. Raise them as it grows; a lost entry fails here.
MIN_ENTRIES = 520
MIN_ANSWERED = 469
MIN_PER_TOPIC = 8

TARGET = re.compile(r"^\(([\w-]+)\)=\s*$", re.M)  # a MyST target, as `(sharding-uneven)=`


@pytest.fixture(scope="module")
def entries() -> list[make_questions.Entry]:
    return make_questions.load()


def book_labels() -> set[str]:
    return {m for p in (ROOT / "book").glob("*.md") for m in TARGET.findall(p.read_text())}


def test_every_thread_is_an_issue_or_discussion(entries):
    bad = [e.thread for e in entries if not THREAD.match(e.thread) or "/pull/" in e.thread]
    assert bad == []


def test_no_thread_twice(entries):
    twice = [t for t, n in Counter(e.thread for e in entries).items() if n > 1]
    assert twice == []


def test_every_answer_is_a_section_of_the_book(entries):
    labels = book_labels()
    missing = [(e.thread, e.answer) for e in entries if e.answered and e.answer not in labels]
    assert missing == []


def test_chapter_question_lists_are_in_the_bank(entries):
    """The threads the chapters themselves link are in the bank, marked answered."""
    bank = {e.thread: e for e in entries}
    for chapter in make_questions.topics():
        path = ROOT / "book" / f"{chapter}.md"
        if not path.is_file():
            continue
        text = path.read_text()
        start = text.find("## Questions readers ask")
        if start < 0:
            continue
        end = text.find("\n## ", start + 5)
        section = text[start:end] if end > 0 else text[start:]
        for url in re.findall(r"\]\((https://github\.com/[^)\s]+)\)", section):
            assert url in bank, f"{chapter}: {url} is not in book/questions.yml"
            assert bank[url].answered, f"{chapter} links {url}, which the bank marks not yet"


def test_listed_notes_are_true(entries):
    """An entry whose note says the chapter lists it is linked in that chapter's own
    "Questions readers ask" (a note is prose a reader sees, so it must stay true)."""
    homes = {
        label: path
        for path in (ROOT / "book").glob("*.md")
        for label in TARGET.findall(path.read_text())
    }
    wrong = []
    for e in entries:
        if "Listed in the chapter's own questions" not in (e.note or ""):
            continue
        text = homes[e.answer].read_text() if e.answer in homes else ""
        start = text.find("## Questions readers ask")
        end = text.find("\n## ", start + 5)
        section = text[start:end] if start >= 0 and end > 0 else text[start:] if start >= 0 else ""
        if f"]({e.thread})" not in section:
            wrong.append(e.thread)
    assert wrong == []


def test_page_lists_only_answered_entries(entries):
    page = make_questions.PAGE.read_text()
    listed = set(re.findall(r"^- .*\]\((https://github\.com/[^)\s]+)\)\)$", page, re.M))
    assert listed == {e.thread for e in entries if e.answered}
    assert len(listed) == sum(e.answered for e in entries)


def test_page_is_up_to_date():
    assert make_questions.main(["--check"]) == 0


@pytest.mark.parametrize("argv", [["--help"], ["--chek"]])
def test_help_and_a_mistyped_option_write_nothing(argv, monkeypatch):
    def render(*args: object) -> str:
        raise AssertionError(f"rendered the page for {argv}")

    monkeypatch.setattr(make_questions, "render", render)
    with pytest.raises(SystemExit) as exit:
        make_questions.main(argv)
    assert exit.value.code == (0 if argv == ["--help"] else 2)


def test_bank_has_not_shrunk(entries):
    answered = sum(e.answered for e in entries)
    assert len(entries) >= MIN_ENTRIES, len(entries)
    assert answered >= MIN_ANSWERED, answered
    per_topic = Counter(e.topic for e in entries)
    thin = {t: per_topic[t] for t in make_questions.topics() if 0 < per_topic[t] < MIN_PER_TOPIC}
    assert thin == {}


def test_nine_in_ten_are_answered(entries):
    """The bank's goal (issue 30): at least 90% of its threads answered by executed code;
    a new thread marked "not yet" must be balanced by an answer."""
    answered = sum(e.answered for e in entries)
    assert answered >= 0.9 * len(entries), f"{answered} of {len(entries)} answered"


def test_malformed_entries_are_refused(tmp_path):
    good = {
        "thread": "https://github.com/jax-ml/jax/issues/1",
        "question": "Why?",
        "topic": "numpy",
        "answer": "numpy-speed",
    }
    for change, words in [
        ({"thread": "https://github.com/jax-ml/jax/pull/1"}, "issue or discussion"),
        ({"thread": "https://github.com/pytorch/pytorch/issues/1"}, "issue or discussion"),
        ({"topic": "cooking"}, "unknown topic"),
        ({"answer": "Not Yet!"}, "section label"),
        ({"question": "two\nlines"}, "one line"),
        ({"colour": "red"}, "unknown keys"),
    ]:
        path = tmp_path / "bank.yml"
        path.write_text(yaml.safe_dump([{**good, **change}]))
        with pytest.raises(make_questions.BankError, match=words):
            make_questions.load(path)
    path.write_text(yaml.safe_dump([{k: v for k, v in good.items() if k != "answer"}]))
    with pytest.raises(make_questions.BankError, match="missing"):
        make_questions.load(path)


def test_error_text_is_code_whatever_its_backticks():
    assert make_questions.code("ValueError: x") == "`ValueError: x`"
    assert make_questions.code("use `out_sharding=`") == "`` use `out_sharding=` ``"
