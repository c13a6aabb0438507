"""Generate book/questions.md, the index of real questions, from book/questions.yml.

    .venv/bin/python tools/make_questions.py          # write book/questions.md
    .venv/bin/python tools/make_questions.py --check  # exit 1 if it is missing or stale

The bank (``book/questions.yml``) holds one entry per thread of the JAX, Flax, optax or
orbax tracker, found by searching the trackers for the APIs and errors each chapter
teaches::

    - thread: https://github.com/jax-ml/jax/issues/1234   # an issue or a discussion
      question: Why does ... ?            # one line, in the asker's terms
      topic: sharding                     # the chapter it belongs to
      error: "ValueError: ..."            # optional: the exact error text
      answer: sharding-uneven             # the label of the section whose executed
                                          # code answers it, or "not yet"
      note: How the section answers it, or what is missing (optional, one line).

The page is never edited by hand. It lists only the answered entries, grouped by topic
in the book's reading order, each with its thread, the question, the error text in code
formatting (so that the site's search finds a question by its error message) and a
``{ref}`` link to the answering section; its introduction gives the counts of the whole
bank. Entries are checked (:func:`load`) before anything is written: a malformed entry
stops the generator with a message naming it.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from jaxguide_build import toc
from jaxguide_build.environment import ROOT

BANK = ROOT / "book" / "questions.yml"
PAGE = ROOT / "book" / "questions.md"

NOT_YET = "not yet"
THREAD = re.compile(
    r"^https://github\.com/(?P<repo>jax-ml/jax|google/flax|google-deepmind/optax|google/orbax)"
    r"/(?P<kind>issues|discussions)/(?P<number>\d+)$"  # a question someone asked: no PRs
)
LABEL = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
KEYS = {"thread", "question", "topic", "error", "answer", "note"}
REQUIRED = ("thread", "question", "topic", "answer")
#: Topics that have no page of their own (yet) besides the book's chapters.
EXTRA_TOPICS = {"accelerators": "Running on GPUs and TPUs"}
#: Pages of the toc that are not topics of the bank.
NOT_TOPICS = {"index", "report", "questions"}


class BankError(ValueError):
    """An entry of book/questions.yml is malformed."""


@dataclass(frozen=True)
class Entry:
    thread: str
    question: str
    topic: str
    answer: str
    error: str | None = None
    note: str | None = None

    @property
    def answered(self) -> bool:
        return self.answer != NOT_YET

    @property
    def short(self) -> str:
        """``jax-ml/jax#1234``, the way the chapters name a thread."""
        m = THREAD.match(self.thread)
        assert m is not None
        return f"{m['repo']}#{m['number']}"


def topics() -> dict[str, str]:
    """Every topic, in reading order, with its title (a chapter's first heading)."""
    out: dict[str, str] = {}
    for page in toc.pages(ROOT / "_toc.yml", ROOT / "book"):
        if page in NOT_TOPICS:
            continue
        text = (ROOT / "book" / f"{page}.md").read_text(encoding="utf-8")
        heading = re.search(r"^# (.+)$", text, re.M)
        out[page] = heading.group(1).strip() if heading else page
    for name, title in EXTRA_TOPICS.items():
        out.setdefault(name, title)
    return out


def _one_line(entry: dict, key: str, where: str) -> str:
    value = entry[key]
    if not isinstance(value, str) or not value.strip():
        raise BankError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    if "\n" in value.strip():
        raise BankError(f"{where}: {key!r} must be one line")
    return " ".join(value.split())


def load(path: Path = BANK) -> list[Entry]:
    """The bank's entries, checked: known keys, one-line text, an issue or discussion
    thread (never a pull request), a known topic, and a section label or "not yet"."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise BankError(f"{path.name}: expected a list of entries, got {type(data).__name__}")
    known = topics()
    entries = []
    for i, raw in enumerate(data):
        where = f"{path.name} entry {i + 1}"
        if not isinstance(raw, dict):
            raise BankError(f"{where}: expected a mapping, got {raw!r}")
        where = f"{where} ({raw.get('thread', 'no thread')})"
        if unknown := set(raw) - KEYS:
            raise BankError(f"{where}: unknown keys {sorted(unknown)}")
        if missing := [k for k in REQUIRED if k not in raw]:
            raise BankError(f"{where}: missing {missing}")
        fields = {k: _one_line(raw, k, where) for k in raw}
        if not THREAD.match(fields["thread"]):
            raise BankError(
                f"{where}: the thread must be an issue or discussion of jax-ml/jax, "
                "google/flax, google-deepmind/optax or google/orbax"
            )
        if fields["topic"] not in known:
            raise BankError(f"{where}: unknown topic {fields['topic']!r}; one of {list(known)}")
        if fields["answer"] != NOT_YET and not LABEL.match(fields["answer"]):
            raise BankError(f"{where}: answer must be a section label or {NOT_YET!r}")
        entries.append(Entry(**fields))
    return entries


def code(text: str) -> str:
    """``text`` as inline code, whatever backticks it holds."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "0 %"


def render(entries: list[Entry]) -> str:
    titles = topics()
    answered = [e for e in entries if e.answered]
    lines = [
        "(questions)=",
        "# Questions readers ask: the index",
        "",
        "<!-- Generated by tools/make_questions.py from book/questions.yml: do not edit. -->",
        "",
        f"The question bank in `book/questions.yml` holds {len(entries)} real questions, "
        "one per thread of the JAX, Flax, optax and orbax trackers, found by searching "
        "them for the APIs and errors each chapter teaches. "
        f"{len(answered)} of them ({percent(len(answered), len(entries))}) are answered "
        "by a section whose executed code shows the case or its mechanism; this page "
        "lists those, by topic. Search the site for the words of your error message to "
        "land on its question here.",
        "",
        "| Topic | Questions in the bank | Answered here |",
        "| --- | ---: | ---: |",
    ]
    for topic, title in titles.items():
        found = [e for e in entries if e.topic == topic]
        if found:
            done = sum(e.answered for e in found)
            lines.append(f"| {title} | {len(found)} | {done} |")
    lines.append(f"| All | {len(entries)} | {len(answered)} |")
    for topic, title in titles.items():
        group = [e for e in answered if e.topic == topic]
        if not group:
            continue
        lines += ["", f"(questions-{topic.replace('_', '-')})=", f"## {title}", ""]
        for e in group:
            lines.append(f"- {e.question} ([{e.short}]({e.thread}))")
            if e.error:
                lines.append(f"  {code(e.error)}")
            note = f" {e.note}" if e.note else ""
            lines.append(f"  Answered in {{ref}}`{e.answer}`.{note}")
    return "\n".join(lines) + "\n"


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line; ``--help`` (or an unknown option) exits before anything is
    written.

    >>> parse(["--check"]).check, parse([]).check
    (True, False)
    """
    parser = argparse.ArgumentParser(
        prog="make_questions.py",
        description="Write book/questions.md from book/questions.yml.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if book/questions.md is missing or stale",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    check = parse(sys.argv[1:] if argv is None else argv).check
    try:
        text = render(load())
    except BankError as err:
        print(f"make_questions: {err}", file=sys.stderr)
        return 1
    if check:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text:
            print(
                f"{PAGE.relative_to(ROOT)} is missing or stale: run "
                ".venv/bin/python tools/make_questions.py",
                file=sys.stderr,
            )
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
