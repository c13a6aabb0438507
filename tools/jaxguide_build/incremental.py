"""Sphinx extension (build tooling): a rebuild after a one-chapter edit does work in
proportion to the edit, not to the book.

Two costs of every rebuild grew with the number of chapters, not with what changed.
Each fix below keeps Sphinx's result and only skips work whose result is already known:

1. **The environment carried every exercise's whole page.** sphinx-exercise keeps each
   exercise and solution node in ``env.sphinx_exercise_registry``; those nodes still
   point at their document, so pickling the environment pickled every chapter's
   doctree as well (2.5 MB, ~0.2 s to load and ~0.1 s to save at every build). The
   registry keeps detached copies instead (:func:`detach_exercise_nodes`): what
   sphinx-exercise reads from them (attributes, title, subtitle) is all there.

2. **Figure numbers unpickled every chapter.** Sphinx numbers figures, tables, code
   blocks and (here) exercises by walking every page's doctree in toc order, at every
   build that changed a page. The walk only looks at sections, toctrees and the
   numbered nodes themselves; :func:`assign_figure_numbers` gives it a *skeleton* of
   each page holding only those, kept in the environment with the digest of the page's
   doctree and rebuilt when that changes (the edited page). The numbers are Sphinx's,
   computed by Sphinx's own walk.

Each fix reaches into a package's internals, so each is applied only to the release it
was written and tested for (:data:`TESTED`); with another release the build goes on
without that fix (and says so once), which is only slower.
(tests/test_tools.py checks each against the upstream behaviour on the built book.)
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: The releases each fix was written and tested for (a version prefix).
TESTED = {"sphinx": "7.4.", "sphinx-exercise": "1.2."}


def tested(distribution: str, version: str) -> bool:
    """Whether ``version`` of ``distribution`` is the release its fix was tested on."""
    return version.startswith(TESTED[distribution])


# ----------------------------------------------------------------------------- 1. exercises


def detached(node: nodes.Element) -> nodes.Element:
    """A deep copy of ``node`` with no parent and no document: pickling it pickles
    only the node and its children."""
    copy = node.deepcopy()
    for part in copy.findall():  # elements and text: each may hold its document
        part.document = None
    return copy


def detach_exercise_nodes(app, env) -> list[str]:
    """``env-updated`` (after reading, before the environment is pickled): replace the
    nodes of sphinx-exercise's registry that belong to a document by detached copies."""
    for entry in getattr(env, "sphinx_exercise_registry", {}).values():
        node = entry.get("node")
        if isinstance(node, nodes.Element) and _attached(node):
            entry["node"] = detached(node)
    return []


def _attached(node: nodes.Element) -> bool:
    """Whether ``node`` or a node inside it points at a parent or a document."""
    return node.parent is not None or any(
        getattr(part, "_document", None) is not None for part in node.findall()
    )


# ----------------------------------------------------------------------------- 2. figure numbers


def figtype(env, node: nodes.Element) -> str | None:
    """The kind of number ``node`` gets (``"figure"``, ``"code-block"``, ...), or None:
    the test Sphinx 7.4's ``assign_figure_numbers`` applies to each element."""
    for domain in env.domains.values():
        kind = domain.get_enumerable_node_type(node)
        if domain.name == "std" and not domain.get_numfig_title(node):
            continue  # an uncaptioned figure, table or code block gets no number
        if kind:
            return kind
    return None


def _pruned(env, element: nodes.Element) -> list[nodes.Element]:
    """Copies of ``element``'s children that Sphinx's figure-number walk can act on:
    sections, toctrees and numbered nodes (whole), and the elements that contain one."""
    kept: list[nodes.Element] = []
    for child in element.children:
        if not isinstance(child, nodes.Element):
            continue
        if isinstance(child, addnodes.toctree):
            kept.append(child.copy())  # the walk reads its entries, not its children
        elif not isinstance(child, nodes.section) and child["ids"] and figtype(env, child):
            kept.append(child.deepcopy())  # numbered; the walk goes on inside it too
        else:
            inner = _pruned(env, child)
            if inner:
                shell = child.copy()  # attributes only (a section's ids give its number)
                shell.extend(inner)
                kept.append(shell)
    return kept


def skeleton(env, doctree: nodes.Element) -> nodes.Element:
    """What of ``doctree`` the figure-number walk visits, with nothing else in it."""
    root = nodes.Element()
    root.extend(_pruned(env, doctree))
    for part in root.findall():  # elements and text: each may hold its document
        part.document = None
    return root


def _kinds(env) -> str:
    """What decides which nodes are numbered and how a skeleton is made: Sphinx's
    release, each domain's class and enumerable nodes (with their figure type and title
    getter), and this module's code."""
    import sphinx

    def name(obj) -> str:
        return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', repr(obj))}"

    domains = sorted(
        f"{domain.name}:{name(type(domain))}:"
        + ",".join(
            sorted(
                f"{name(cls)}={kind[0]}/{name(kind[1])}"
                for cls, kind in getattr(domain, "enumerable_nodes", {}).items()
            )
        )
        for domain in env.domains.values()
    )
    code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    return repr([sphinx.__version__, code, *domains])


def _serialised(env, docname: str) -> bytes:
    """The pickled doctree of ``docname``, as Sphinx's ``get_doctree`` reads it."""
    cache = getattr(env, "_pickled_doctree_cache", None)
    if cache is not None and docname in cache:
        return cache[docname]
    data = (Path(env.doctreedir) / f"{docname}.doctree").read_bytes()
    if cache is not None:
        cache[docname] = data
    return data


def skeleton_of(env, docname: str, kinds: str | None = None) -> nodes.Element:
    """The skeleton of page ``docname``: the stored one while its doctree (and
    ``kinds``, :func:`_kinds`) is unchanged, else made from the doctree and stored (in
    ``env.jaxguide_figure_skeletons``)."""
    store = env.__dict__.setdefault("jaxguide_figure_skeletons", {})
    kinds = _kinds(env) if kinds is None else kinds
    digest = hashlib.sha256(_serialised(env, docname) + kinds.encode()).hexdigest()
    stored = store.get(docname)
    if stored is not None and stored[0] == digest:
        return pickle.loads(stored[1])
    # Sphinx's own method: env.get_doctree is this function while the walk runs.
    made = skeleton(env, type(env).get_doctree(env, docname))
    store[docname] = (digest, pickle.dumps(made, pickle.HIGHEST_PROTOCOL))
    return made


def _patch_figure_numbers() -> None:
    from sphinx.environment.collectors.toctree import TocTreeCollector

    original = TocTreeCollector.assign_figure_numbers
    if getattr(original, "jaxguide", False):
        return

    def assign_figure_numbers(self, env) -> list[str]:
        """Sphinx's own ``assign_figure_numbers``, walking page skeletons."""
        if not env.config.numfig:
            return original(self, env)
        store = env.__dict__.setdefault("jaxguide_figure_skeletons", {})
        for gone in set(store) - set(env.all_docs):
            del store[gone]
        before = env.__dict__.get("get_doctree")  # another extension's, if any
        kinds = _kinds(env)
        env.get_doctree = lambda docname: skeleton_of(env, docname, kinds)  # this call only
        try:
            return original(self, env)
        finally:
            if before is None:
                del env.get_doctree
            else:
                env.get_doctree = before

    assign_figure_numbers.jaxguide = True  # type: ignore[attr-defined]
    assign_figure_numbers.original = original  # type: ignore[attr-defined]
    TocTreeCollector.assign_figure_numbers = assign_figure_numbers  # type: ignore[method-assign]


# ----------------------------------------------------------------------------- setup


def _version(distribution: str) -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ""


def setup(app):
    untested = []
    if tested("sphinx-exercise", _version("sphinx-exercise")):
        app.connect("env-updated", detach_exercise_nodes)
    else:
        untested.append("sphinx-exercise")
    if tested("sphinx", _version("sphinx")):
        _patch_figure_numbers()
    else:
        untested.append("sphinx")
    for name in untested:
        logger.info(
            f"[jaxguide-incremental] {name} {_version(name) or '(not installed)'} is not the "
            f"release {TESTED[name]}x its rebuild shortcut was tested on: building without it"
        )
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
