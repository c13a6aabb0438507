"""Lighthouse on the built site (build tooling, not part of the jaxguide package).

Runs the locked Lighthouse from npm (``package.json``; ``make lighthouse-deps`` installs
it into ``node_modules/``) with its default mobile profile (simulated slow 4G, 4x CPU
slowdown) against pages served by :mod:`jaxguide_build.serve` (gzip, as GitHub Pages serves
them), in Debian's Chromium (``--headless=new``, no background networking). Used by
``bench/lighthouse.py`` (every page, three runs each) and ``tests/test_browser.py``
(the landing page, the heaviest chapter and the search page, in one :func:`run_many`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from .environment import ROOT

LIGHTHOUSE = ROOT / "node_modules" / "lighthouse" / "cli" / "index.js"
#: Runs several pages in one Node process and one Chromium (:func:`run_many`).
BATCH = Path(__file__).with_name("lighthouse_batch.mjs")
CATEGORIES = ("performance", "accessibility", "best-practices")
#: Lighthouse's settings for every run, by their Node API names (:func:`run_many` hands
#: them to ``lighthouse_batch.mjs``; :func:`run` passes each as the CLI's ``--kebab-case``
#: option). Chromium's flags and the categories are added by each.
SETTINGS: dict[str, object] = {
    "output": "json",
    "disableFullPageScreenshot": True,
    "maxWaitForLoad": 60000,
}
CHROME_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-first-run",
    "--mute-audio",
]


def chromium_path() -> str | None:
    """``JAXGUIDE_CHROMIUM``, else ``chromium`` on the PATH, else Debian's path."""
    found = os.environ.get("JAXGUIDE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return found if Path(found).is_file() else None


def node_path() -> str | None:
    return shutil.which("node")


def missing() -> str | None:
    """Why Lighthouse cannot run here (and how to fix it), or ``None`` when it can."""
    if node_path() is None:
        return "no `node` on the PATH: install Node.js (and npm), then `make lighthouse-deps`"
    if not LIGHTHOUSE.is_file():
        return "Lighthouse is not installed: run `make lighthouse-deps` (npm ci, package-lock.json)"
    if chromium_path() is None:
        return "no Chromium: `make browser-deps`, or set JAXGUIDE_CHROMIUM"
    return None


def version() -> str:
    """The installed Lighthouse's version (``node_modules/lighthouse/package.json``)."""
    package = LIGHTHOUSE.parent.parent / "package.json"
    if not package.is_file():
        return "not installed"
    return str(json.loads(package.read_text(encoding="utf-8"))["version"])


@dataclass(frozen=True)
class Result:
    """One Lighthouse run of one page: category scores (0-100) and the metrics the
    performance score weighs (milliseconds; CLS unitless), plus bytes transferred."""

    url: str
    performance: int
    accessibility: int
    best_practices: int
    fcp_ms: float
    lcp_ms: float
    tbt_ms: float
    si_ms: float
    cls: float
    bytes: int
    failing: tuple[str, ...]  # accessibility and best-practices audits that failed

    def as_dict(self) -> dict:
        return asdict(self)


def summarise(report: dict) -> Result:
    """The scores and metrics of a Lighthouse JSON report (``lhr``)."""
    if report.get("runtimeError"):
        raise RuntimeError(f"Lighthouse: {report['runtimeError']}")
    cats, audits = report["categories"], report["audits"]

    def score(cat: str) -> int:
        value = cats[cat]["score"]
        if value is None:
            raise RuntimeError(f"Lighthouse gave no {cat} score for {report['finalDisplayedUrl']}")
        return round(100 * value)

    def metric(audit: str) -> float:
        value = audits[audit].get("numericValue")
        return float(value) if value is not None else float("nan")

    failing = tuple(
        f"{cat}: {ref['id']}"
        for cat in ("accessibility", "best-practices")
        for ref in cats[cat]["auditRefs"]
        if ref.get("weight", 0) > 0 and audits[ref["id"]].get("score") not in (None, 1)
    )
    return Result(
        url=report["finalDisplayedUrl"],
        performance=score("performance"),
        accessibility=score("accessibility"),
        best_practices=score("best-practices"),
        fcp_ms=metric("first-contentful-paint"),
        lcp_ms=metric("largest-contentful-paint"),
        tbt_ms=metric("total-blocking-time"),
        si_ms=metric("speed-index"),
        cls=metric("cumulative-layout-shift"),
        bytes=int(metric("total-byte-weight")),
        failing=failing,
    )


def run(url: str, *, keep: Path | None = None, timeout: float = 180, attempts: int = 2) -> Result:
    """Lighthouse's mobile run of ``url`` (performance, accessibility, best practices);
    the JSON report is written to ``keep`` when given. A run that fails (Chromium did not
    start, Lighthouse reported a runtime error such as no first paint within its time
    limit) is tried again, up to ``attempts`` times in all."""
    why = missing()
    if why:
        raise RuntimeError(why)
    for attempt in range(1, attempts + 1):
        try:
            return _run_once(url, keep=keep, timeout=timeout)
        except (RuntimeError, subprocess.TimeoutExpired):
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


def run_many(
    urls: list[str], *, keep: list[Path | None] | None = None, timeout: float = 600
) -> list[Result]:
    """:func:`run` on each of ``urls`` in turn, in one Node process and one Chromium
    (``lighthouse_batch.mjs``): the CLI spends about 5 s of each run starting Node,
    loading its configuration and launching Chromium. Each page still gets a tab of its
    own with its origin's cache and storage cleared, as :func:`run` gives it. ``keep``
    (one path or ``None`` per URL) keeps the JSON reports. A page whose run fails is run
    again on its own with :func:`run`, with a warning that says why."""
    if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
        raise TypeError(f"urls must be a list of URL strings, got {urls!r}")
    keep = [None] * len(urls) if keep is None else list(keep)
    if len(keep) != len(urls):
        raise ValueError(f"keep has {len(keep)} paths for {len(urls)} URLs: give one per URL")
    why = missing()
    if why:
        raise RuntimeError(why)
    with tempfile.TemporaryDirectory(prefix="jaxguide-lh-") as tmp:
        outs = [Path(k) if k else Path(tmp) / f"report-{i}.json" for i, k in enumerate(keep)]
        spec = Path(tmp) / "spec.json"
        spec.write_text(
            json.dumps(
                {
                    "chromePath": str(chromium_path()),
                    "chromeFlags": CHROME_FLAGS,
                    "settings": {**SETTINGS, "onlyCategories": list(CATEGORIES)},
                    "jobs": [{"url": u, "out": str(o)} for u, o in zip(urls, outs)],
                }
            ),
            encoding="utf-8",
        )
        for out in outs:
            out.unlink(missing_ok=True)
        env = {**os.environ, "TMPDIR": tmp}
        proc = subprocess.run(
            [str(node_path()), str(BATCH), str(spec)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
        results = []
        for url, out, kept in zip(urls, outs, keep):
            try:
                if not out.is_file():
                    tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
                    raise RuntimeError(f"no report for {url} (exit {proc.returncode}):\n{tail}")
                results.append(summarise(json.loads(out.read_text(encoding="utf-8"))))
            except (RuntimeError, ValueError, KeyError) as err:
                # Said, not hidden: a batch that always fails would double every run.
                warnings.warn(f"Lighthouse batch: {err}; running {url} on its own", stacklevel=2)
                results.append(run(url, keep=kept))
        return results


def _cli_option(name: str, value: object) -> str:
    """A Node API setting as the CLI spells it: ``maxWaitForLoad`` 60000 is
    ``--max-wait-for-load=60000``, ``disableFullPageScreenshot`` True is
    ``--disable-full-page-screenshot``."""
    flag = "--" + re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()
    return flag if value is True else f"{flag}={value}"


def _run_once(url: str, *, keep: Path | None, timeout: float) -> Result:
    with tempfile.TemporaryDirectory(prefix="jaxguide-lh-") as tmp:
        out = Path(keep) if keep else Path(tmp) / "report.json"
        cmd = [
            str(node_path()),
            str(LIGHTHOUSE),
            url,
            "--quiet",
            f"--output-path={out}",
            f"--only-categories={','.join(CATEGORIES)}",
            f"--chrome-flags={' '.join(CHROME_FLAGS)}",
            *(_cli_option(name, value) for name, value in SETTINGS.items()),
        ]
        env = {**os.environ, "CHROME_PATH": str(chromium_path()), "TMPDIR": tmp}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        if proc.returncode != 0 or not out.is_file():
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
            raise RuntimeError(f"Lighthouse failed on {url} (exit {proc.returncode}):\n{tail}")
        return summarise(json.loads(out.read_text(encoding="utf-8")))


_IMAGE_SRC = re.compile(r'<img\b[^>]*\bsrc="([^"]+)"')


def page_bytes(html_dir: Path, name: str) -> int:
    """What ``name.html`` weighs in the build: the page and the images it shows (the
    stylesheets and scripts every page shares are left out)."""
    page = html_dir / f"{name}.html"
    text = page.read_text(encoding="utf-8")
    images = {(page.parent / src.split("?")[0]).resolve() for src in _IMAGE_SRC.findall(text)}
    return page.stat().st_size + sum(p.stat().st_size for p in images if p.is_file())


def heaviest(html_dir: Path, names: list[str], n: int) -> list[str]:
    """The ``n`` heaviest of ``names`` by :func:`page_bytes`, heaviest first."""
    return sorted(names, key=lambda name: page_bytes(html_dir, name), reverse=True)[:n]
