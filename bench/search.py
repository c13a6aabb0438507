"""How well the site's search lands on the answer: the queries of
``bench/search_queries.yml`` (each typed as a reader would for a real question of the
question bank, with the label of the section that answers it) run through the search
page of the built site, in headless Chromium, and each is scored by where the answer
comes: its page, and its section's anchor (the section or one of its subsections),
first, in the first three, lower, or absent from the results shown.

Serves ``_build/html`` (or ``--html``) on 127.0.0.1 with gzip, as GitHub Pages does
(``tools/jaxguide_build/serve.py``), opens ``search.html`` once and types each query
into its search box; the time to results is measured in the page, from the submit to
the results drawn (the first query also loads Pagefind and the index).

    .venv/bin/python bench/search.py                 # a table per query, then the totals
    .venv/bin/python bench/search.py --json out.json
    .venv/bin/python bench/search.py --tune          # the ranking settings, on a grid

Exit status 1 when a total misses its target (:data:`TARGETS`) or a query takes more
than a second.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from jaxguide_build import lighthouse, serve, toc
from jaxguide_build.environment import ROOT
from jaxguide_build.site import search

if TYPE_CHECKING:
    from bs4 import Tag

QUERIES = ROOT / "bench" / "search_queries.yml"
#: The issue's targets: shares of the queries.
TARGETS = {"page_top3": 0.90, "page_first": 0.75, "anchor_top3": 0.80}
#: A query's results must be drawn within this many milliseconds.
MAX_MS = 1000.0
#: How long a query may take before it counts as hung.
HANG_MS = 10_000

# Type the query into the search page's box, submit, wait for the results to be drawn.
RUN_QUERY = """async ([query, hang]) => {
  const input = document.querySelector('.bd-search-container form.bd-search input');
  const done = new Promise(resolve => document.addEventListener('jaxguide-search-done',
    e => { if (e.detail.query === query) resolve(e.detail); }));
  input.value = query;
  input.form.requestSubmit();
  const timeout = new Promise(resolve => setTimeout(() => resolve(null), hang));
  const found = await Promise.race([done, timeout]);
  if (found === null) return {hung: true, ms: hang, urls: []};
  if (found.error) throw new Error(`search for ${query}: ${found.error}`);
  return {hung: false, ms: found.ms, urls: found.results.map(r => r.url)};
}"""


@dataclass(frozen=True)
class Answer:
    page: str  # e.g. "sharding"
    urls: frozenset[str]  # the answering section's url and its subsections' (page.html#id)


def answers(html: Path, labels: set[str]) -> dict[str, Answer]:
    """Where each label of ``labels`` is in the built site ``html``: its page and the
    urls of its section and subsections, as the index links them
    (``page.html`` for a page's first section, ``page.html#id`` for the others)."""
    from bs4 import BeautifulSoup

    found: dict[str, Answer] = {}
    for page in toc.pages():
        path = html / f"{page}.html"
        if not path.is_file():
            continue
        article = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser").select_one(
            "article.bd-article"
        )
        if article is None:
            continue
        headed = search.headed_sections(article)
        first = headed[0] if headed else None

        def url(section: Tag, page: str = page, first: Tag | None = first) -> str:
            return f"{page}.html" if section is first else f"{page}.html#{section['id']}"

        for label in labels - found.keys():
            tag = article.find(id=label)
            if tag is None:
                continue
            section = tag if tag.name == "section" else tag.find_parent("section")
            while section is not None and section not in headed:
                section = section.find_parent("section")
            if section is None:
                continue
            inside = [s for s in section.find_all("section") if s in headed]
            found[label] = Answer(page, frozenset(url(s) for s in [section, *inside]))
    return found


def rank_of(urls: list[str], match) -> int | None:  # type: ignore[no-untyped-def]
    """1-based position of the first url for which ``match`` holds, or None."""
    return next((i for i, u in enumerate(urls, 1) if match(u)), None)


def score(queries: list[dict], runs: list[dict], where: dict[str, Answer]) -> list[dict]:
    """Per query: the page's and the anchor's rank in the results, and the time."""
    rows = []
    for q, run in zip(queries, runs):
        answer = where[q["answer"]]
        urls = [u.removeprefix("./") for u in run["urls"]]
        rows.append(
            {
                "query": q["query"],
                "answer": q["answer"],
                "page_rank": rank_of(urls, lambda u, a=answer: u.split("#")[0] == f"{a.page}.html"),
                "anchor_rank": rank_of(urls, lambda u, a=answer: u in a.urls),
                "ms": round(run["ms"], 1),
                "hung": run["hung"],
                "first_result": urls[0] if urls else None,
            }
        )
    return rows


def totals(rows: list[dict]) -> dict:
    n = len(rows)
    share = lambda f: round(sum(1 for r in rows if f(r)) / n, 3)  # noqa: E731
    ms = [r["ms"] for r in rows]
    return {
        "queries": n,
        "page_first": share(lambda r: r["page_rank"] == 1),
        "page_top3": share(lambda r: r["page_rank"] is not None and r["page_rank"] <= 3),
        "page_absent": share(lambda r: r["page_rank"] is None),
        "anchor_first": share(lambda r: r["anchor_rank"] == 1),
        "anchor_top3": share(lambda r: r["anchor_rank"] is not None and r["anchor_rank"] <= 3),
        "anchor_absent": share(lambda r: r["anchor_rank"] is None),
        "hung": sum(1 for r in rows if r["hung"]),
        "median_ms": round(statistics.median(ms), 1),
        "max_ms": round(max(ms), 1),
        "first_query_ms": ms[0],
    }


def misses(total: dict) -> list[str]:
    """What misses its target, one line each."""
    out = [
        f"{key} {total[key]:.1%} is under its target {target:.0%}"
        for key, target in TARGETS.items()
        if total[key] < target
    ]
    if total["hung"]:
        out.append(f"{total['hung']} queries hung")
    if total["max_ms"] > MAX_MS:
        out.append(f"a query took {total['max_ms']:.0f} ms, more than {MAX_MS:.0f}")
    return out


def run_queries(page, base: str, queries: list[str], settings: dict | None = None) -> list[dict]:  # type: ignore[no-untyped-def]
    """Open the search page in ``page`` and run ``queries`` through its search box."""
    page.goto(base + "search.html", wait_until="load")
    page.wait_for_function("() => window.jaxguideSearch !== undefined")
    if settings:
        page.evaluate("s => window.jaxguideSearch.configure(s)", settings)
    return [page.evaluate(RUN_QUERY, [q, HANG_MS]) for q in queries]


def load_queries(path: Path = QUERIES) -> list[dict]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


# The settings --tune tries (Pagefind's ranking parameters and the page's own): every
# combination, on the whole query set.
GRID: dict[str, list[float]] = {
    "coverage": [1, 2, 3],
    "title": [1.0, 5.0],
    "pageLength": [0.25, 0.75],
    "termFrequency": [0.5, 1.0],
    "termSaturation": [1.4],
}


def _settings(point: dict) -> dict:
    return {
        "coverage": point["coverage"],
        "ranking": {
            "pageLength": point["pageLength"],
            "termFrequency": point["termFrequency"],
            "termSaturation": point["termSaturation"],
            "termSimilarity": 1.0,
            "metaWeights": {"title": point["title"], "page": 0.0},
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--queries", type=Path, default=QUERIES)
    parser.add_argument("--json", type=Path, help="write the rows and totals here")
    parser.add_argument("--settings", type=json.loads, help="settings for the page (JSON)")
    parser.add_argument("--tune", action="store_true", help="try every setting of GRID")
    args = parser.parse_args()
    queries = load_queries(args.queries)
    where = answers(args.html, {q["answer"] for q in queries})
    unknown = sorted({q["answer"] for q in queries} - where.keys())
    if unknown:
        print(f"labels not found in {args.html}: {unknown}", file=sys.stderr)
        return 1
    if not (args.html / "pagefind" / "pagefind.js").is_file():
        print(f"no search index in {args.html}: build the book first", file=sys.stderr)
        return 1
    chromium = lighthouse.chromium_path()
    if chromium is None:
        print("no Chromium: `make browser-deps`, or set JAXGUIDE_CHROMIUM", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    base, server = serve.serve(args.html)
    texts = [q["query"] for q in queries]
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page()
            if args.tune:
                results = []
                for values in itertools.product(*GRID.values()):
                    point = dict(zip(GRID, values))
                    total = totals(
                        score(queries, run_queries(page, base, texts, _settings(point)), where)
                    )
                    results.append((point, total))
                    print(json.dumps({**point, **{k: total[k] for k in TARGETS}}), flush=True)
                key = lambda pt: pt[1]["anchor_top3"] + pt[1]["page_top3"] + pt[1]["page_first"]  # noqa: E731
                best = max(results, key=key)
                print("best:", json.dumps(best[0]), json.dumps(best[1]))
                return 0
            rows = score(queries, run_queries(page, base, texts, args.settings), where)
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    mark = lambda r: "-" if r is None else str(r)  # noqa: E731
    print("| query | answer | page | anchor | ms | first result |")
    print("|---|---|---:|---:|---:|---|")
    for r in rows:
        print(
            f"| {r['query']} | {r['answer']} | {mark(r['page_rank'])} | {mark(r['anchor_rank'])} "
            f"| {r['ms']:.0f}{' HUNG' if r['hung'] else ''} | {r['first_result']} |"
        )
    total = totals(rows)
    print()
    print(json.dumps(total, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "totals": total}, indent=2))
    problems = misses(total)
    for line in problems:
        print(f"MISS: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
