"""Lighthouse's mobile scores for every page of the built book, as a Markdown table.

Serves ``_build/html`` (or ``--html``) on 127.0.0.1 with gzip, as GitHub Pages does
(``tools/jaxguide_build/serve.py``), runs the locked Lighthouse (``make lighthouse-deps``)
with its default mobile profile (simulated slow 4G, 4x CPU slowdown) in Debian's
Chromium, ``--runs`` times per page (three by default), one run at a time, and prints
the medians: performance, first contentful paint, total blocking time, largest
contentful paint, bytes transferred, accessibility and best practices. The load
average is printed before and after, since Lighthouse's simulated throttling scales the
main-thread time it observes: on a loaded machine every score is pessimistic.

    .venv/bin/python bench/lighthouse.py                    # every page, three runs each
    .venv/bin/python bench/lighthouse.py training scaling   # some pages
    .venv/bin/python bench/lighthouse.py --runs 1 --json out.json

Exit status 1 when a page's median performance is under ``--min-performance`` (90) or
its accessibility or best practices under 100.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from jaxguide_build import lighthouse, serve, toc
from jaxguide_build.environment import ROOT


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def pages(html: Path) -> list[str]:
    """Every page of the book: the toc's, then the search page and the index."""
    names = toc.pages() + ["search", "genindex"]
    return [n for n in names if (html / f"{n}.html").is_file()]


def median_row(name: str, runs: list[lighthouse.Result]) -> dict:
    med = lambda key: statistics.median(getattr(r, key) for r in runs)  # noqa: E731
    return {
        "page": name,
        "runs": len(runs),
        "performance": med("performance"),
        "performance_runs": [r.performance for r in runs],
        "fcp_ms": med("fcp_ms"),
        "tbt_ms": med("tbt_ms"),
        "lcp_ms": med("lcp_ms"),
        "cls": med("cls"),
        "bytes": med("bytes"),
        "accessibility": min(r.accessibility for r in runs),
        "best_practices": min(r.best_practices for r in runs),
        "failing": sorted({f for r in runs for f in r.failing}),
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| page | performance (runs) | FCP | TBT | LCP | bytes | accessibility | best practices |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        runs = ", ".join(str(p) for p in r["performance_runs"])
        lines.append(
            f"| {r['page']} | {r['performance']:g} ({runs}) | {r['fcp_ms'] / 1000:.2f} s "
            f"| {r['tbt_ms']:.0f} ms | {r['lcp_ms'] / 1000:.2f} s | {r['bytes'] / 1000:.0f} kB "
            f"| {r['accessibility']} | {r['best_practices']} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", help="page names (default: every page)")
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--min-performance", type=int, default=90)
    parser.add_argument("--json", type=Path, help="write every run's results here")
    args = parser.parse_args()
    why = lighthouse.missing()
    if why:
        print(f"cannot run Lighthouse: {why}", file=sys.stderr)
        return 2
    if not (args.html / "index.html").is_file():
        print(f"no built site in {args.html}: run `make book` first", file=sys.stderr)
        return 2
    names = args.pages or pages(args.html)
    base, server = serve.serve(args.html)
    start, load_before = time.monotonic(), load()
    print(
        f"Lighthouse {lighthouse.version()}, {args.runs} run(s) x {len(names)} page(s), "
        f"load average before: {load_before}",
        file=sys.stderr,
    )
    rows, raw = [], {}
    try:
        for name in names:  # a page's runs in one Node process and one Chromium
            runs = lighthouse.run_many([f"{base}{name}.html"] * args.runs)
            rows.append(median_row(name, runs))
            raw[name] = [r.as_dict() for r in runs]
            print(f"  {name}: {[r.performance for r in runs]} (load {load()})", file=sys.stderr)
    finally:
        server.shutdown()
        server.server_close()
    seconds = time.monotonic() - start
    print(table(rows))
    print(
        f"\nMedians of {args.runs} run(s) per page, Lighthouse {lighthouse.version()} mobile "
        f"(simulated slow 4G, 4x CPU slowdown), served with gzip; {seconds:.0f} s; "
        f"load average (1, 5, 15 min) before {load_before}, after {load()}."
    )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "runs": raw, "seconds": seconds}, indent=2))
    bad = [
        r["page"]
        for r in rows
        if r["performance"] < args.min_performance
        or r["accessibility"] < 100
        or r["best_practices"] < 100
    ]
    for r in rows:
        if r["failing"]:
            print(f"{r['page']}: failing audits {r['failing']}", file=sys.stderr)
    if bad:
        print(f"under the bar: {bad}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
