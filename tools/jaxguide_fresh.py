"""Sphinx extension (build tooling, not part of the jaxguide package): never serve
stale chapter outputs.

myst-nb's ``execute_notebooks: cache`` reuses a chapter's cached outputs while the
*code cells* of the chapter are unchanged. But outputs also depend on code that is
not in the chapter: the ``jaxguide`` modules it imports and the packages it runs on.
A change to either would leave old outputs on the site.

For every chapter this extension computes a fingerprint of

* the source of each ``jaxguide`` module the chapter imports, followed transitively
  through the imports between ``jaxguide`` modules (importing any of them runs
  ``jaxguide/__init__.py`` and what it imports);
* the Python version and the versions of the packages the chapter runs on: JAX and
  its runtime dependencies, jaxguide's own, and the distribution of every top-level
  module the chapter imports.

When a chapter's fingerprint differs from the one stored with the last successful
build, its cached execution is deleted and the page is marked outdated, so Sphinx
re-reads it and myst-nb executes it again. Fingerprints are stored in
``_build/jaxguide-fingerprints.json`` after a build succeeds.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import re
import sys
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

# Packages every chapter's outputs can depend on, whatever it imports.
BASE_DISTRIBUTIONS = (
    "jax", "jaxlib", "numpy", "scipy", "ml_dtypes", "opt_einsum", "matplotlib", "rich",
    "ipykernel", "myst-nb",
)
PACKAGE = "jaxguide"
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
STORE = "jaxguide-fingerprints.json"


def code_of(source: str) -> str:
    """The code cells of a MyST notebook, joined (cell options and magics dropped)."""
    cells = []
    for body in CODE_CELL.findall(source):
        lines = [l for l in body.splitlines() if not l.startswith((":", "%", "!"))]
        cells.append("\n".join(lines))
    return "\n".join(cells)


def imports_of(code: str) -> tuple[set[str], set[str]]:
    """(top-level modules imported, jaxguide modules named) in a piece of code.

    ``jaxguide`` modules are named relative to the package: ``""`` for
    ``jaxguide/__init__.py``, ``"timing"`` for ``jaxguide.timing``. Attribute use such
    as ``jaxguide.timing.table`` counts too.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set(), {""}
    top, ours = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top.add(alias.name.split(".")[0])
                if alias.name.split(".")[0] == PACKAGE:
                    ours.add(".".join(alias.name.split(".")[1:2]))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            top.add(parts[0])
            if parts[0] == PACKAGE:
                ours.add(".".join(parts[1:2]))
                if len(parts) == 1:  # from jaxguide import timing, benchmark
                    ours.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level > 0 and node.module:
            ours.add(node.module.split(".")[0])  # relative import inside the package
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == PACKAGE:
            ours.add(node.attr)
    return top, ours


class PackageGraph:
    """The jaxguide modules on disk (the ones the kernel imports) and their imports."""

    def __init__(self):
        spec = importlib.util.find_spec(PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"{PACKAGE} is not importable: install it (make env) before building.")
        self.root = Path(list(spec.submodule_search_locations)[0])
        self.files = {"": self.root / "__init__.py"}
        for path in sorted(self.root.glob("*.py")):
            if path.name != "__init__.py":
                self.files[path.stem] = path
        self.digests = {m: hashlib.sha256(p.read_bytes()).hexdigest() for m, p in self.files.items()}
        self.deps = {m: {d for d in imports_of(p.read_text())[1] if d in self.files} for m, p in self.files.items()}

    def closure(self, modules: set[str]) -> set[str]:
        todo = {m for m in modules if m in self.files}
        if todo:
            todo.add("")  # importing any submodule runs the package's __init__
        seen: set[str] = set()
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo |= self.deps[m] - seen
        return seen


@functools.lru_cache(maxsize=None)
def _distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


@functools.lru_cache(maxsize=None)
def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def fingerprint(source: str, graph: PackageGraph, version=_version) -> dict:
    """What a chapter's outputs depend on besides its code, with a digest of it all."""
    top, ours = imports_of(code_of(source))
    distributions = set(BASE_DISTRIBUTIONS)
    mapping = _distributions()
    for module in top - {PACKAGE}:
        distributions.update(mapping.get(module, []))
    parts = {
        "python": sys.version.split()[0],
        "packages": {d: version(d) for d in sorted(distributions)},
        "jaxguide": {m or "__init__": graph.digests[m] for m in sorted(graph.closure(ours))},
    }
    parts["digest"] = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    return parts


def _explain(old: dict | None, new: dict) -> str:
    if not old:
        return "no fingerprint stored for its cached outputs"
    what = []
    if old.get("python") != new["python"]:
        what.append(f"Python {old.get('python')} -> {new['python']}")
    for group in ("packages", "jaxguide"):
        a, b = old.get(group, {}), new[group]
        changed = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        if changed:
            label = "package versions" if group == "packages" else "jaxguide modules"
            what.append(f"{label} changed: {', '.join(changed)}")
    return "; ".join(what) or "fingerprint changed"


def _store_path(app) -> Path:
    return Path(app.outdir).parent / STORE


def _chapters(env) -> dict[str, tuple[Path, str]]:
    """The pages that are notebooks: docname -> (path, source)."""
    found = {}
    for docname in sorted(env.found_docs):
        path = Path(env.doc2path(docname))
        source = path.read_text() if path.suffix == ".md" else ""
        if "```{code-cell}" in source:
            found[docname] = (path, source)
    return found


def outdated(app, env, added, changed, removed):
    """``env-get-outdated``: pages whose outputs depend on something that changed."""
    graph = PackageGraph()
    store = _store_path(app)
    old = json.loads(store.read_text()) if store.is_file() else {}
    chapters = _chapters(env)
    app.env.jaxguide_chapters = {name: path for name, (path, _) in chapters.items()}
    new = {name: fingerprint(source, graph) for name, (_, source) in chapters.items()}
    app.env.jaxguide_fingerprints = new
    stale = [d for d in new if (old.get(d) or {}).get("digest") != new[d]["digest"]]
    app.env.jaxguide_stale = stale
    if not stale:
        return []
    from jupyter_cache import get_cache

    cache = get_cache(app.env.mystnb_config.execution_cache_path)
    records = cache.list_cache_records()
    for docname in stale:
        path = str(Path(env.doc2path(docname)).resolve())
        dropped = [r.pk for r in records if str(Path(r.uri).resolve()) == path]
        for pk in dropped:
            cache.remove_cache(pk)
        if dropped or docname not in added:
            logger.info(f"[jaxguide-fresh] {docname}: re-executing ({_explain(old.get(docname), new[docname])})")
    return [d for d in stale if d not in added and d not in changed]


def preexecute(app, env, added, changed, removed):
    """``env-get-outdated`` (runs after :func:`outdated`): when
    ``jaxguide_parallel_execution`` is on, execute every chapter that has no cached
    outputs with jupyter-cache's parallel executor (one process per core), before
    Sphinx reads them; myst-nb then finds their outputs in the cache. A chapter that
    fails here is not cached, so myst-nb executes it again and reports the error.
    """
    if not app.config.jaxguide_parallel_execution:
        return []
    import logging as std_logging

    from jupyter_cache import get_cache
    from jupyter_cache.executors import load_executor

    # Only pages Sphinx is about to read can need executing: new, edited or stale ones.
    candidates = set(added) | set(changed) | set(getattr(app.env, "jaxguide_stale", ()))
    chapters = {d: p for d, p in app.env.jaxguide_chapters.items() if d in candidates}
    if len(chapters) < 2:
        return []
    cache = get_cache(app.env.mystnb_config.execution_cache_path)
    paths = [str(p.resolve()) for p in chapters.values()]
    for path in paths:
        cache.add_nb_to_project(path, read_data={"type": "plugin", "name": "myst_nb_md"})
    pending = [r.uri for r in cache.list_unexecuted(filter_uris=paths)]
    if len(pending) < 2:
        return []
    names = ", ".join(sorted(Path(u).stem for u in pending))
    logger.info(f"[jaxguide-fresh] executing {len(pending)} chapters in parallel: {names}")
    executor = load_executor("local-parallel", cache=cache, logger=std_logging.getLogger("jaxguide_fresh.exec"))
    result = executor.run_and_cache(
        filter_uris=pending, timeout=app.env.mystnb_config.execution_timeout, allow_errors=False
    )
    for uri in result.excepted + result.errored:
        logger.info(f"[jaxguide-fresh] {Path(uri).name} failed in the parallel run; executing it again to report")
    return []


def save(app, exception):
    """``build-finished``: remember the fingerprints the current outputs were made with."""
    if exception is None and getattr(app.env, "jaxguide_fingerprints", None) is not None:
        _store_path(app).write_text(json.dumps(app.env.jaxguide_fingerprints, indent=1, sort_keys=True))


def setup(app):
    app.add_config_value("jaxguide_parallel_execution", False, "env")
    app.connect("env-get-outdated", outdated)
    app.connect("env-get-outdated", preexecute, priority=600)
    app.connect("build-finished", save)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
