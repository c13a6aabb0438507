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

* files next to the chapter that its code names (data it reads, a module it imports).

A cell that is not Python (a ``%%bash`` cell, ``x?``) could import anything: such a
chapter depends on every ``jaxguide`` module.

When a chapter's fingerprint differs from the one stored with its cached outputs, its
cached execution is deleted and the page is marked outdated, so Sphinx re-reads it and
myst-nb executes it again. Fingerprints are stored in ``_build/jaxguide-fingerprints.json``
(written atomically) for every chapter whose outputs are cached, also after a failed
build; an unreadable store counts as empty.

Chapters that need executing are executed by jupyter-cache before Sphinx reads them (in
parallel when there are several); a chapter that fails there stops the build with a
short report (chapter, error, cell) and nothing else, and is not executed a second
time. Two builds into the same output folder do not run at once: the second waits for
the first.

The kernels the build starts (:class:`BuildKernelManager`, used by every
``nbclient.NotebookClient`` of the build) talk to the build over IPC sockets in a fresh
private folder each (``tempfile.mkdtemp``), not over TCP: no port is opened, two builds
never share a socket, and ipykernel has no reason to warn that TCP is unencrypted. They
also get JAX's persistent compilation cache, in a folder of the chapter's own under the
build's ``_build/.jax_cache``, through their environment only (the chapters do not
mention it, so a Colab reader never has it); a chapter whose code looks at compilation
itself, or runs several JAX processes at once (:data:`SHOWS_COMPILATION`), runs without
it.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import functools
import gc
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from jupyter_client import AsyncKernelManager
from nbclient import NotebookClient
from sphinx.errors import ExtensionError
from sphinx.util import logging

from jaxguide_cache import write_atomic

logger = logging.getLogger(__name__)
_AT_EXIT: set = set()  # what setup() registered with atexit (once per process)

# Packages every chapter's outputs can depend on, whatever it imports.
BASE_DISTRIBUTIONS = (
    "jax",
    "jaxlib",
    "numpy",
    "scipy",
    "ml_dtypes",
    "opt_einsum",
    "matplotlib",
    "rich",
    "ipykernel",
    "myst-nb",
)
PACKAGE = "jaxguide"
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
STORE = "jaxguide-fingerprints.json"


ALL = "*"  # stands for every jaxguide module: a cell whose imports cannot be known
CELL_OPTIONS = re.compile(r"\A---\n.*?^---\n", re.S | re.M)  # a YAML options block


def code_of(source: str) -> list[str]:
    """The code of each code cell of a MyST notebook, as Python where it is Python:
    cell options (``:key:`` lines or a ``---`` YAML block) and line magics dropped, and a
    cell magic's first line (``%%writefile prog.py``) dropped so its body is read."""
    cells = []
    for body in CODE_CELL.findall(source):
        body = CELL_OPTIONS.sub("", body)
        lines = [l for l in body.splitlines() if not l.startswith((":", "%", "!"))]
        cells.append("\n".join(lines))
    return cells


def imports_of(code: str | list[str]) -> tuple[set[str], set[str]]:
    """(top-level modules imported, jaxguide modules named) in a piece of code.

    ``jaxguide`` modules are named relative to the package: ``""`` for
    ``jaxguide/__init__.py``, ``"timing"`` for ``jaxguide.timing``. Attribute use such
    as ``jaxguide.timing.table`` counts too. ``code`` is one cell's code or a list of
    them; a cell that is not Python (a ``%%bash`` cell, ``x?``) could import anything,
    so it stands for every module (:data:`ALL`).
    """
    top, ours = set(), set()
    cells = [code] if isinstance(code, str) else code
    trees = []
    for cell in cells:
        try:
            trees.append(ast.parse(cell))
        except SyntaxError:
            ours.add(ALL)
    for node in (n for tree in trees for n in ast.walk(tree)):
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
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == PACKAGE
        ):
            ours.add(node.attr)
    return top, ours


class PackageGraph:
    """The jaxguide modules on disk (the ones the kernel imports) and their imports."""

    def __init__(self):
        spec = importlib.util.find_spec(PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(
                f"{PACKAGE} is not importable: install it (make env) before building."
            )
        self.root = Path(list(spec.submodule_search_locations)[0])
        self.files = {"": self.root / "__init__.py"}
        for path in sorted(self.root.glob("*.py")):
            if path.name != "__init__.py":
                self.files[path.stem] = path
        self.digests = {
            m: hashlib.sha256(p.read_bytes()).hexdigest() for m, p in self.files.items()
        }
        self.deps = {
            m: {d for d in cached_imports(p.read_text())[1] if d in self.files}
            for m, p in self.files.items()
        }

    def closure(self, modules: set[str]) -> set[str]:
        if ALL in modules:
            return set(self.files)
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


#: Results kept between builds (``_build/jaxguide-fresh-memo.json``), keyed by what they
#: are computed from: the imports of a piece of code by its digest, and the map from
#: top-level modules to distributions by the list of installed distributions. Reading
#: the metadata of every installed distribution and parsing every chapter again took
#: most of a no-change rebuild's own time.
_MEMO: dict = {"imports": {}, "distributions": {}}
MEMO = "jaxguide-fresh-memo.json"


def _installed() -> str:
    """A digest of the distributions installed on ``sys.path`` (names and versions, as
    their metadata folders are named): it changes when one is added, removed or
    upgraded."""
    names = []
    for entry in sys.path:
        try:
            names += [
                f"{entry}/{e}"
                for e in os.listdir(entry or ".")
                if e.endswith((".dist-info", ".egg-info"))
            ]
        except OSError:
            continue
    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()


def _distributions() -> dict[str, list[str]]:
    key = _installed()
    memo = _MEMO.setdefault("distributions", {})
    if key not in memo:
        memo.clear()
        memo[key] = importlib.metadata.packages_distributions()
    return memo[key]


def cached_imports(code: str | list[str]) -> tuple[set[str], set[str]]:
    """:func:`imports_of`, remembered by the digest of the code."""
    cells = [code] if isinstance(code, str) else code
    key = hashlib.sha256("\0".join(cells).encode()).hexdigest()
    memo = _MEMO.setdefault("imports", {})
    if key not in memo:
        top, ours = imports_of(cells)
        memo[key] = [sorted(top), sorted(ours)]
    top, ours = memo[key]
    return set(top), set(ours)


def load_memo(folder: Path) -> None:
    _MEMO.clear()
    _MEMO.update({"imports": {}, "distributions": {}})
    try:
        data = json.loads((folder / MEMO).read_text())
        if isinstance(data, dict):
            _MEMO.update({k: v for k, v in data.items() if k in _MEMO and isinstance(v, dict)})
    except (OSError, ValueError):
        pass  # no memo yet, or a damaged one: everything is computed afresh


def save_memo(folder: Path, used: set[str]) -> None:
    """Keep the memo's entries for the code seen in this build only."""
    imports = {k: v for k, v in _MEMO.get("imports", {}).items() if k in used}
    data = {"imports": imports, "distributions": _MEMO.get("distributions", {})}
    write_atomic(folder / MEMO, json.dumps(data, sort_keys=True).encode())


@functools.cache
def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def helper_files(source: str, folder: Path) -> dict[str, str]:
    """Files next to a chapter that its code names (a data file it reads, a module it
    imports): {name: sha256}. Other chapters and the toc are left out."""
    code = "\n".join(code_of(source))
    found = {}
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if (
            path.is_file()
            and not path.is_symlink()
            and path.suffix != ".md"
            and not path.name.startswith(".")
        ):
            if path.name in code or (
                path.suffix == ".py" and re.search(rf"\b{re.escape(path.stem)}\b", code)
            ):
                found[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def fingerprint(
    source: str, graph: PackageGraph, version=_version, folder: Path | None = None
) -> dict:
    """What a chapter's outputs depend on besides its code, with a digest of it all."""
    top, ours = cached_imports(code_of(source))
    distributions = set(BASE_DISTRIBUTIONS)
    mapping = _distributions()
    for module in top - {PACKAGE}:
        distributions.update(mapping.get(module, []))
    parts = {
        "python": sys.version.split()[0],
        "packages": {d: version(d) for d in sorted(distributions)},
        "jaxguide": {m or "__init__": graph.digests[m] for m in sorted(graph.closure(ours))},
        "helpers": helper_files(source, folder) if folder is not None else {},
    }
    parts["digest"] = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    return parts


def _explain(old: dict | None, new: dict) -> str:
    if not old:
        return "no fingerprint stored for its cached outputs"
    what = []
    if old.get("python") != new["python"]:
        what.append(f"Python {old.get('python')} -> {new['python']}")
    labels = {
        "packages": "package versions",
        "jaxguide": "jaxguide modules",
        "helpers": "files it reads",
    }
    for group, label in labels.items():
        a, b = old.get(group, {}), new.get(group, {})
        changed = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        if changed:
            what.append(f"{label} changed: {', '.join(changed)}")
    return "; ".join(what) or "fingerprint changed"


def _store_path(app) -> Path:
    return Path(app.outdir).parent / STORE


def read_store(path: Path) -> dict:
    """The stored fingerprints; an unreadable store counts as empty (every chapter is
    then checked against its cache anew), with a line in the log saying so."""
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, found {type(data).__name__}")
        return data
    except FileNotFoundError:
        return {}
    except (ValueError, OSError) as err:
        logger.info(f"[jaxguide-fresh] {path.name} is unreadable ({err}); treating it as empty")
        return {}


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
    folder = _store_path(app).parent
    load_memo(folder)
    graph = PackageGraph()
    old = read_store(_store_path(app))
    chapters = _chapters(env)
    app.env.jaxguide_chapters = {name: path for name, (path, _) in chapters.items()}
    new = {
        name: fingerprint(source, graph, folder=path.parent)
        for name, (path, source) in chapters.items()
    }
    used = [[p.read_text()] for p in graph.files.values()] + [
        code_of(source) for _, source in chapters.values()
    ]
    save_memo(folder, {hashlib.sha256("\0".join(c).encode()).hexdigest() for c in used})
    app.env.jaxguide_fingerprints = new
    stale = [d for d in new if (old.get(d) or {}).get("digest") != new[d]["digest"]]
    app.env.jaxguide_stale = stale
    if not stale:
        return []
    from jupyter_cache import get_cache

    cache = get_cache(app.env.mystnb_config.execution_cache_path)
    records = cache.list_cache_records()
    for docname in stale:
        path = Path(env.doc2path(docname)).resolve()
        dropped = {r.pk for r in records if str(Path(r.uri).resolve()) == str(path)}
        # The cache also matches a notebook by the hash of its code, whatever path it was
        # cached under (a build folder copied from another checkout): drop that one too.
        try:
            from myst_nb.core.read import read_myst_markdown_notebook

            dropped.add(
                cache.match_cache_notebook(read_myst_markdown_notebook(path.read_text())).pk
            )
        except Exception:  # KeyError: nothing cached under this hash
            pass
        for pk in dropped:
            cache.remove_cache(pk)
        if dropped or docname not in added:
            logger.info(
                f"[jaxguide-fresh] {docname}: re-executing ({_explain(old.get(docname), new[docname])})"
            )
    return [d for d in stale if d not in added and d not in changed]


def preexecute(app, env, added, changed, removed):
    """``env-get-outdated`` (runs after :func:`outdated`): execute every chapter that
    has no cached outputs, before Sphinx reads them, with jupyter-cache's parallel
    executor (one process per core) when ``jaxguide_parallel_execution`` is on and more
    than one needs it, else its serial one; myst-nb then finds their outputs in the
    cache. A chapter that fails stops the build with :func:`failure_report`'s short
    report (chapter, error, cell), one chapter or many, and is not executed again.
    """
    from jupyter_cache import get_cache

    # Only pages Sphinx is about to read can need executing: new, edited or stale ones.
    candidates = set(added) | set(changed) | set(getattr(app.env, "jaxguide_stale", ()))
    chapters = {d: p for d, p in app.env.jaxguide_chapters.items() if d in candidates}
    if not chapters:
        return []
    cache = get_cache(app.env.mystnb_config.execution_cache_path)
    paths = [str(p.resolve()) for p in chapters.values()]
    with reading_once():
        for path in paths:
            cache.add_nb_to_project(path, read_data={"type": "plugin", "name": "myst_nb_md"})
        pending = [r.uri for r in cache.list_unexecuted(filter_uris=paths)]
        if pending:
            _execute(app, cache, pending)
    return []


@contextlib.contextmanager
def reading_once():
    """Within this block, jupyter-cache parses each chapter once. It parses a chapter's
    Markdown into a notebook each time it is asked about it: three times before
    executing it (``list_unexecuted`` here, again in the executor, then to execute it).
    Each reader call returns a fresh copy of the notebook it parsed, while the file is
    unchanged (same modification time and size)."""
    import copy

    import jupyter_cache.cache.main as cache_main

    original = cache_main.get_reader
    parsed: dict[tuple, object] = {}

    def get_reader(data):
        reader = original(data)

        def read(uri):
            stat = os.stat(uri)
            key = (json.dumps(data, sort_keys=True), str(uri), stat.st_mtime_ns, stat.st_size)
            if key not in parsed:
                parsed[key] = reader(uri)
            return copy.deepcopy(parsed[key])

        return read

    cache_main.get_reader = get_reader
    try:
        yield
    finally:
        cache_main.get_reader = original


def _execute(app, cache, pending: list[str]) -> None:
    """Execute the chapters ``pending`` (their URIs) into ``cache``; stop the build with
    :func:`failure_report` if one fails."""
    import logging as std_logging

    from jupyter_cache.executors import load_executor

    names = ", ".join(sorted(Path(u).stem for u in pending))
    parallel = app.config.jaxguide_parallel_execution and len(pending) > 1
    if parallel:
        logger.info(f"[jaxguide-fresh] executing {len(pending)} chapters in parallel: {names}")
    else:
        logger.info(
            f"[jaxguide-fresh] executing {len(pending)} chapter{'s' * (len(pending) > 1)}: {names}"
        )
    kind = "local-parallel" if parallel else "local-serial"
    # jupyter-cache logs each failure with its whole coloured traceback; the report below
    # says it shorter, so its log stays out of the build's.
    # (The parallel executor sets the level of its workers' multiprocessing logger
    # from this logger's.)
    quiet = std_logging.getLogger("jaxguide_fresh.exec")
    quiet.propagate = False
    quiet.setLevel(std_logging.CRITICAL)
    if not quiet.handlers:
        quiet.addHandler(std_logging.NullHandler())
    executor = load_executor(kind, cache=cache, logger=quiet)
    result = executor.run_and_cache(
        filter_uris=pending, timeout=app.env.mystnb_config.execution_timeout, allow_errors=False
    )
    failed = result.excepted + result.errored
    if failed:
        # Report every failure now, from the run that made it, and stop: executing a
        # failing chapter a second time only to report it would double the wait. The
        # report is all the log says: raising an exception here would add ~60 lines of
        # Sphinx's and Jupyter Book's own traceback after it. The fingerprints of the
        # chapters that did execute are saved first (see save).
        reports = [
            failure_report(Path(uri).stem, cache.get_project_record(uri).traceback or "")
            for uri in failed
        ]
        report = "\n\n".join(reports)
        save(app, ExtensionError(report))
        print(
            f"\n{report}\n\nThe build stopped: fix the cell above and build again.",
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(1)


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def failure_report(chapter: str, traceback: str) -> str:
    """A failing cell's report, shortest first: the chapter, the error, then the cell.

    ``traceback`` is what nbclient recorded (its ``CellExecutionError`` text: the cell's
    source between dashed lines, then the traceback, ending with ``Name: message``).
    """
    text = ANSI.sub("", traceback).strip()
    parts = re.split(r"^-{10,}$", text, flags=re.M)
    cell = parts[1].strip("\n") if len(parts) >= 3 else ""
    lines = [l for l in text.splitlines() if l.strip()]
    error = next(
        (
            l.strip()
            for l in reversed(lines)
            if re.match(r"^\s*[\w.]+(Error|Exception|Exit|Interrupt)\b", l)
        ),
        lines[-1] if lines else "unknown error",
    )
    numbered = "\n".join(f"    {l}" for l in cell.splitlines()[:25])
    return f"[jaxguide-fresh] chapter '{chapter}' failed: {error}\n  in the cell:\n{numbered}"


def save(app, exception):
    """``build-finished``: remember the fingerprints the current outputs were made with,
    for every chapter whose outputs are in the execution cache, also when the build
    failed: a failure in one chapter does not make the others execute again next time.
    A chapter that failed has no cached outputs, so it keeps no fingerprint."""
    new = getattr(app.env, "jaxguide_fingerprints", None)
    if new is None:
        return
    store = _store_path(app)
    saved = read_store(store)
    if exception is None:
        saved = dict(new)
    else:
        from jupyter_cache import get_cache

        cache = get_cache(app.env.mystnb_config.execution_cache_path)
        for docname, path in getattr(app.env, "jaxguide_chapters", {}).items():
            try:
                cached = cache.get_cached_project_nb(str(path.resolve())) is not None
            except Exception:  # not in the project, or no cache record
                cached = False
            if cached and docname in new:
                saved[docname] = new[docname]
            else:
                saved.pop(docname, None)
    write_atomic(store, json.dumps(saved, indent=1, sort_keys=True).encode())


_LOCK = None


def lock_build(app, config) -> None:
    """``config-inited``: one build of an output folder at a time. A second build of the
    same checkout waits for the first (its cache, store and pages would be written by
    both at once); builds into different output folders do not wait for each other."""
    global _LOCK
    import fcntl

    folder = Path(app.outdir).parent
    folder.mkdir(parents=True, exist_ok=True)
    _LOCK = open(folder / ".jaxguide-build.lock", "w")
    try:
        fcntl.flock(_LOCK, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        logger.info(
            f"[jaxguide-fresh] another build of {folder} is running; waiting for it to finish"
        )
        fcntl.flock(_LOCK, fcntl.LOCK_EX)


#: Code that reads compilation itself: compile times (a benchmark's first call), compile
#: logs, compile events. A persistent-cache hit skips the compilation these show, so a
#: chapter whose code matches runs without the cache. So does a chapter that runs
#: several JAX processes at once (``jax.distributed``): JAX writes a cache entry in
#: place, and a process reading it at that moment would warn in the output.
SHOWS_COMPILATION = re.compile(
    r"first_call|log_compiles|explain_cache_misses|jax\.monitoring|compilation_cache|backend_compile"
    r"|jax\.distributed"
)

#: Environment the build adds to its kernels (set by :func:`kernel_settings`).
KERNEL_ENV: dict[str, str] = {}


def compilation_cache_env(folder: Path) -> dict[str, str]:
    """The environment that gives a kernel JAX's persistent compilation cache in
    ``folder``, caching every program however small or fast to compile."""
    return {
        "JAX_COMPILATION_CACHE_DIR": str(folder),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
        # Not JAX_COMPILATION_CACHE_MAX_SIZE: JAX needs `filelock` for it, and without
        # it warns in the cell's output and caches nothing. trim_cache bounds it instead.
    }


def trim_cache(folder: Path, keep_bytes: int = 1 << 30) -> None:
    """Delete the oldest entries of a compilation cache folder until it holds at most
    ``keep_bytes`` (entries of programs no chapter compiles any more pile up)."""
    if not folder.is_dir():
        return
    entries = sorted(
        (p.stat().st_mtime, p.stat().st_size, p) for p in folder.rglob("*") if p.is_file()
    )
    total = sum(size for _, size, _ in entries)
    for _, size, path in entries:
        if total <= keep_bytes:
            break
        path.unlink(missing_ok=True)
        total -= size


#: The chapter a kernel is started for (set by :func:`_executing`), or None.
EXECUTING: str | None = None


def notebook_env(nb, chapter: str | None = None) -> dict[str, str]:
    """What :data:`KERNEL_ENV` a notebook's kernel gets: all of it, with the
    compilation cache in a folder of the chapter's own (two chapters executing at once
    never write or read one entry at the same moment: JAX writes entries in place), or
    none of the cache if the notebook's code looks at compilation
    (:data:`SHOWS_COMPILATION`) or the chapter is not known."""
    code = "\n".join(
        c.get("source", "") for c in nb.get("cells", []) if c.get("cell_type") == "code"
    )
    env = dict(KERNEL_ENV)
    if SHOWS_COMPILATION.search(code) or ("JAX_COMPILATION_CACHE_DIR" in env and not chapter):
        return {
            k: v
            for k, v in env.items()
            if not k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE"))
        }
    if "JAX_COMPILATION_CACHE_DIR" in env:
        env["JAX_COMPILATION_CACHE_DIR"] = str(Path(env["JAX_COMPILATION_CACHE_DIR"]) / chapter)
    return env


def _executing(execute):
    """Wrap a jupyter-cache worker's ``execute(project_nb, data)`` so that the kernel it
    starts knows its chapter (a worker executes one notebook at a time)."""

    def wrapper(project_nb, data):
        global EXECUTING
        EXECUTING = Path(project_nb.uri).stem
        try:
            return execute(project_nb, data)
        finally:
            EXECUTING = None

    wrapper.jaxguide = True
    return staticmethod(wrapper)


class BuildKernelManager(AsyncKernelManager):
    """A kernel manager for the build's kernels: IPC sockets (and the connection file) in
    a fresh private folder, removed when the kernel shuts down, and extra environment
    variables (:attr:`extra_env`)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.extra_env: dict[str, str] = {}
        self.socket_dir = tempfile.mkdtemp(prefix="jaxguide-kernel-")
        self.transport = "ipc"
        self.ip = os.path.join(self.socket_dir, "k")
        self.connection_file = os.path.join(self.socket_dir, "kernel.json")

    async def _async_pre_start_kernel(self, **kw):
        if self.extra_env:
            kw["env"] = {**(kw.get("env") or os.environ), **self.extra_env}
        return await super()._async_pre_start_kernel(**kw)

    pre_start_kernel = _async_pre_start_kernel

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            shutil.rmtree(self.socket_dir, ignore_errors=True)

    cleanup_resources = _async_cleanup_resources


_create_kernel_manager = NotebookClient.create_kernel_manager


def create_kernel_manager(self):
    """``NotebookClient.create_kernel_manager`` for the build: a
    :class:`BuildKernelManager` (where nothing else was asked for), with the notebook's
    environment."""
    if self.kernel_manager_class is AsyncKernelManager:
        self.kernel_manager_class = BuildKernelManager
    km = _create_kernel_manager(self)
    if isinstance(km, BuildKernelManager):
        km.extra_env = notebook_env(self.nb, EXECUTING)
    return km


def kernel_settings(app, config) -> None:
    """``config-inited``: the build's kernels use :class:`BuildKernelManager`, with the
    compilation cache in this build's own output folder (``jaxguide_compilation_cache``)."""
    KERNEL_ENV.clear()
    # A claim that does not hold (jaxguide.claim) stops the build at its cell; in Colab it
    # prints what differs and carries on.
    KERNEL_ENV["JAXGUIDE_STRICT_CLAIMS"] = "1"
    if config.jaxguide_compilation_cache:
        folder = Path(app.outdir).parent / ".jax_cache"
        trim_cache(folder)
        KERNEL_ENV.update(compilation_cache_env(folder))
    NotebookClient.create_kernel_manager = create_kernel_manager
    from jupyter_cache.executors import basic

    for worker in (basic.ExecutionWorkerLocalSerial, basic.ExecutionWorkerLocalMProc):
        if not getattr(worker.execute, "jaxguide", False):
            worker.execute = _executing(worker.execute)


def clear_replaced_images(app):
    """``html-collect-pages`` (just before Sphinx copies the pages' images): delete the
    copies in ``_build/html/_images`` that differ from their source. The site extension
    shrinks those copies after each build; copying a figure of a re-written page over
    its shrunk copy made Sphinx log "will overwrite data" for every figure. The shrunk
    version comes back from the site extension's cache."""
    folder = Path(app.outdir) / getattr(app.builder, "imagedir", "_images")
    for src, dest in getattr(app.builder, "images", {}).items():
        target = folder / dest
        try:
            if target.read_bytes() != (Path(app.srcdir) / src).read_bytes():
                target.unlink()
        except OSError:
            continue  # no copy yet, or no source: Sphinx reports a missing one itself
    return []


def setup(app):
    app.add_config_value("jaxguide_parallel_execution", False, "env")
    app.add_config_value("jaxguide_compilation_cache", False, "")
    app.connect("config-inited", lock_build)
    # The build leaves a large graph of objects (the environment, the doctrees) that
    # Python's garbage collector walks again while the process exits: about 0.5 s of a
    # 2.4 s rebuild. Freezing them at exit skips that walk; memory goes back to the OS
    # with the process either way. (atexit: a build run inside another program, such as
    # a test, keeps its normal collection until that program exits.)
    if gc.freeze not in _AT_EXIT:
        atexit.register(gc.freeze)
        _AT_EXIT.add(gc.freeze)
    app.connect("config-inited", kernel_settings)
    app.connect("env-get-outdated", outdated)
    app.connect("env-get-outdated", preexecute, priority=600)
    app.connect("build-finished", save)
    app.connect("html-collect-pages", clear_replaced_images)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
