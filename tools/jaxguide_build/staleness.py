"""Sphinx extension: never serve stale chapter outputs (what to execute again).

myst-nb's ``execute_notebooks: cache`` reuses a chapter's cached outputs while the
*code cells* of the chapter are unchanged. But outputs also depend on code that is
not in the chapter: the ``jaxguide`` modules it imports and the packages it runs on.
A change to either would leave old outputs on the site.

For every chapter this extension computes a fingerprint (:func:`fingerprint`) of

* the source of each ``jaxguide`` module the chapter imports, followed transitively
  through the imports between ``jaxguide`` modules (importing any of them runs
  ``jaxguide/__init__.py`` and what it imports);
* the Python version and the versions of the packages the chapter runs on: JAX and
  its runtime dependencies, jaxguide's own, and the distribution of every top-level
  module the chapter imports;
* files next to the chapter that its code names (data it reads, a module it imports);
* the environment the build gives the chapter's kernel
  (:func:`jaxguide_build.jupyter_kernels.fingerprinted_env`: strict claims, the
  compilation cache's settings), less the path of the cache's folder;
* the ``JAX_*`` and ``XLA_*`` variables the kernel inherits from the build's shell
  (:func:`inherited_env`: ``XLA_FLAGS``, ``JAX_ENABLE_X64``, ...), which change what
  JAX computes and prints. A part of its own, present only when one is set, so that a
  shell without any leaves every digest as it was before this part existed.

A cell that is not Python (a ``%%bash`` cell, ``x?``) could import anything: such a
chapter depends on every ``jaxguide`` module.

When a chapter's fingerprint differs from the one stored with its cached outputs, its
cached execution is deleted and the page is marked outdated (:func:`outdated`), so
:mod:`jaxguide_build.execution` executes it again before Sphinx reads it. Fingerprints
are stored in ``_build/jaxguide-fingerprints.json`` (written atomically, :func:`save`)
for every chapter whose outputs are cached, also after a failed build; an unreadable
store counts as empty.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

from .cache import write_atomic
from .environment import installed_version
from .jupyter_kernels import fingerprinted_env

logger = logging.getLogger(__name__)


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
    cell magic's first line (``%%writefile prog.py``) dropped so its body is read.

    >>> code_of("# A page\\n\\n```{code-cell} ipython3\\n:tags: [remove-cell]\\n%xmode Minimal\\n"
    ...         "import numpy as np\\nfrom jaxguide import timing\\n```\\n")
    ['import numpy as np\\nfrom jaxguide import timing']
    """
    cells: list[str] = []
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

    >>> top, ours = imports_of(["import numpy as np\\nfrom jaxguide import timing", "x?"])
    >>> sorted(top), sorted(ours)
    (['jaxguide', 'numpy'], ['', '*', 'timing'])
    """
    top: set[str] = set()
    ours: set[str] = set()
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

    def __init__(self) -> None:
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
            m: {d for d in cached_imports(p.read_text(encoding="utf-8"))[1] if d in self.files}
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


#: Results kept between builds (``_build/jaxguide-imports-memo.json``), keyed by what they
#: are computed from: the imports of a piece of code by its digest, and the map from
#: top-level modules to distributions by the list of installed distributions. Reading
#: the metadata of every installed distribution and parsing every chapter again took
#: most of a no-change rebuild's own time.
_MEMO: dict[str, dict[str, Any]] = {"imports": {}, "distributions": {}}


MEMO = "jaxguide-imports-memo.json"


def _installed() -> str:
    """A digest of the distributions installed on ``sys.path`` (names and versions, as
    their metadata folders are named): it changes when one is added, removed or
    upgraded."""
    names: list[str] = []
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
        data = json.loads((folder / MEMO).read_text(encoding="utf-8"))
        if isinstance(data, dict):
            _MEMO.update({k: v for k, v in data.items() if k in _MEMO and isinstance(v, dict)})
    except (OSError, ValueError):
        pass  # no memo yet, or a damaged one: everything is computed afresh


def save_memo(folder: Path, used: set[str]) -> None:
    """Keep the memo's entries for the code seen in this build only."""
    imports = {k: v for k, v in _MEMO.get("imports", {}).items() if k in used}
    data = {"imports": imports, "distributions": _MEMO.get("distributions", {})}
    write_atomic(folder / MEMO, json.dumps(data, sort_keys=True).encode())


def helper_files(source: str, folder: Path) -> dict[str, str]:
    """Files next to a chapter that its code names (a data file it reads, a module it
    imports): {name: sha256}. Other chapters and the toc are left out."""
    code = "\n".join(code_of(source))
    found: dict[str, str] = {}
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


#: The prefixes of the variables of the build's shell that a chapter's fingerprint
#: holds (:func:`inherited_env`).
INHERITED_PREFIXES = ("JAX_", "XLA_")


def inherited_env(shell: Mapping[str, str], kernel_env: Mapping[str, str]) -> dict[str, str]:
    """The ``JAX_*`` and ``XLA_*`` variables of ``shell`` (the build's environment) that
    a kernel inherits: those its own environment ``kernel_env`` does not set
    (:class:`~jaxguide_build.notebook_runs.BuildKernelManager` puts that on top).

    >>> shell = {"XLA_FLAGS": "--xla_cpu_use_thunk_runtime=false", "HOME": "/root",
    ...          "JAX_COMPILATION_CACHE_DIR": "/tmp/c"}
    >>> inherited_env(shell, {"JAX_COMPILATION_CACHE_DIR": "the chapter's own"})
    {'XLA_FLAGS': '--xla_cpu_use_thunk_runtime=false'}
    """
    return {
        k: v
        for k, v in sorted(shell.items())
        if k.startswith(INHERITED_PREFIXES) and k not in kernel_env
    }


def fingerprint(
    source: str,
    graph: PackageGraph,
    version: Callable[[str], str | None] = installed_version,
    folder: Path | None = None,
    env: dict[str, str] | None = None,
    shell: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What a chapter's outputs depend on besides its code, with a digest of it all.

    ``env`` is the build's kernel environment (by default the build's own,
    :data:`jaxguide_build.jupyter_kernels.KERNEL_ENV`), ``shell`` the environment the
    kernel inherits the rest from (by default this process's, ``os.environ``). Each
    part names what changed when a digest differs:

    >>> chapter = "```{code-cell} ipython3\\nimport numpy as np\\n```\\n"
    >>> graph, version = PackageGraph(), lambda distribution: "1.0"
    >>> a = fingerprint(chapter, graph, version, env={"JAXGUIDE_STRICT_CLAIMS": "1"}, shell={})
    >>> sorted(a)
    ['digest', 'helpers', 'jaxguide', 'kernel_env', 'packages', 'python']
    >>> a["packages"]["numpy"], a["kernel_env"], a["jaxguide"]  # no jaxguide module
    ('1.0', {'JAXGUIDE_STRICT_CLAIMS': '1'}, {})
    >>> b = fingerprint(chapter, graph, version, env={}, shell={})
    >>> a["digest"] == b["digest"], _explain(a, b)
    (False, 'kernel environment changed: JAXGUIDE_STRICT_CLAIMS')
    >>> c = fingerprint(chapter, graph, version, env={}, shell={"JAX_ENABLE_X64": "1"})
    >>> c["inherited_env"], _explain(b, c)
    ({'JAX_ENABLE_X64': '1'}, "build's shell changed: JAX_ENABLE_X64")
    """
    top, ours = cached_imports(code_of(source))
    distributions = set(BASE_DISTRIBUTIONS)
    mapping = _distributions()
    for module in top - {PACKAGE}:
        distributions.update(mapping.get(module, []))
    kernel_env = fingerprinted_env(
        {"cells": [{"cell_type": "code", "source": c} for c in CODE_CELL.findall(source)]},
        env,
    )
    parts: dict[str, Any] = {
        "python": sys.version.split()[0],
        "packages": {d: version(d) for d in sorted(distributions)},
        "jaxguide": {m or "__init__": graph.digests[m] for m in sorted(graph.closure(ours))},
        "helpers": helper_files(source, folder) if folder is not None else {},
        "kernel_env": kernel_env,
    }
    inherited = inherited_env(os.environ if shell is None else shell, kernel_env)
    if inherited:  # absent when empty: the digests of a shell without any are unchanged
        parts["inherited_env"] = inherited
    parts["digest"] = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    return parts


def _explain(old: dict[str, Any] | None, new: dict[str, Any]) -> str:
    if not old:
        return "no fingerprint stored for its cached outputs"
    what: list[str] = []
    if old.get("python") != new["python"]:
        what.append(f"Python {old.get('python')} -> {new['python']}")
    labels = {
        "packages": "package versions",
        "jaxguide": "jaxguide modules",
        "helpers": "files it reads",
        "kernel_env": "kernel environment",
        "inherited_env": "build's shell",
    }
    for group, label in labels.items():
        a, b = old.get(group, {}), new.get(group, {})
        changed = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        if changed:
            what.append(f"{label} changed: {', '.join(changed)}")
    return "; ".join(what) or "fingerprint changed"


def _store_path(app: Sphinx) -> Path:
    return Path(app.outdir).parent / STORE


def read_store(path: Path) -> dict[str, Any]:
    """The stored fingerprints; an unreadable store counts as empty (every chapter is
    then checked against its cache anew), with a line in the log saying so."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, found {type(data).__name__}")
        return data
    except FileNotFoundError:
        return {}
    except (ValueError, OSError) as err:
        logger.info(f"[jaxguide-build] {path.name} is unreadable ({err}); treating it as empty")
        return {}


def _chapters(env: BuildEnvironment) -> dict[str, tuple[Path, str]]:
    """The pages that are notebooks: docname -> (path, source)."""
    found: dict[str, tuple[Path, str]] = {}
    for docname in sorted(env.found_docs):
        path = Path(env.doc2path(docname))
        source = path.read_text(encoding="utf-8") if path.suffix == ".md" else ""
        if "```{code-cell}" in source:
            found[docname] = (path, source)
    return found


def outdated(
    app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    """``env-get-outdated``: pages whose outputs depend on something that changed."""
    folder = _store_path(app).parent
    load_memo(folder)
    graph = PackageGraph()
    old = read_store(_store_path(app))
    chapters = _chapters(env)
    state: Any = app.env  # holds our jaxguide_* attributes and myst-nb's mystnb_config
    state.jaxguide_chapters = {name: path for name, (path, _) in chapters.items()}
    new = {
        name: fingerprint(source, graph, folder=path.parent)
        for name, (path, source) in chapters.items()
    }
    used = [[p.read_text(encoding="utf-8")] for p in graph.files.values()] + [
        code_of(source) for _, source in chapters.values()
    ]
    save_memo(folder, {hashlib.sha256("\0".join(c).encode()).hexdigest() for c in used})
    state.jaxguide_fingerprints = new
    stale = [d for d in new if (old.get(d) or {}).get("digest") != new[d]["digest"]]
    state.jaxguide_stale = stale
    if not stale:
        return []
    from jupyter_cache import get_cache

    cache = get_cache(state.mystnb_config.execution_cache_path)
    records = cache.list_cache_records()
    for docname in stale:
        path = Path(env.doc2path(docname)).resolve()
        dropped = {r.pk for r in records if str(Path(r.uri).resolve()) == str(path)}
        # The cache also matches a notebook by the hash of its code, whatever path it was
        # cached under (a build folder copied from another checkout): drop that one too.
        try:
            from myst_nb.core.read import read_myst_markdown_notebook

            dropped.add(
                cache.match_cache_notebook(
                    read_myst_markdown_notebook(path.read_text(encoding="utf-8"))
                ).pk
            )
        except KeyError:  # nothing cached under this hash (a parse error is not caught)
            pass
        for pk in dropped:
            cache.remove_cache(pk)
        if dropped or docname not in added:
            logger.info(
                f"[jaxguide-build] {docname}: re-executing ({_explain(old.get(docname), new[docname])})"
            )
    return [d for d in stale if d not in added and d not in changed]


def save(app: Sphinx, exception: BaseException | None) -> None:
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

        state: Any = app.env  # holds our jaxguide_* attributes and myst-nb's mystnb_config
        cache = get_cache(state.mystnb_config.execution_cache_path)
        for docname, path in getattr(state, "jaxguide_chapters", {}).items():
            try:
                cached = cache.get_cached_project_nb(str(path.resolve())) is not None
            except (KeyError, OSError):
                # Not in the project (KeyError), its file gone or unreadable (OSError, and
                # jupyter-cache's NbReadError, an OSError): no outputs to keep a
                # fingerprint for.
                cached = False
            if cached and docname in new:
                saved[docname] = new[docname]
            else:
                saved.pop(docname, None)
    write_atomic(store, json.dumps(saved, indent=1, sort_keys=True).encode())


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("env-get-outdated", outdated)
    app.connect("build-finished", save)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
