"""Sphinx extension: a rebuild after a one-chapter edit does work in
proportion to the edit, not to the book.

Two costs of every rebuild grew with the number of chapters, not with what changed.
Each fix below keeps Sphinx's result and only skips work whose result is already known:

1. **The environment carried every exercise's whole page.** sphinx-exercise keeps each
   exercise and solution node in ``env.sphinx_exercise_registry``; those nodes still
   point at their document, so pickling the environment pickled every chapter's
   doctree as well, loaded and saved again at every build. The
   registry keeps detached copies instead (:func:`detach_exercise_nodes`): what
   sphinx-exercise reads from them (attributes, title, subtitle) is all there.

2. **Figure numbers unpickled every chapter.** Sphinx numbers figures, tables, code
   blocks and (here) exercises by walking every page's doctree in toc order, at every
   build that changed a page. The walk only looks at sections, toctrees and the
   numbered nodes themselves; the patched ``assign_figure_numbers`` gives it a *skeleton* of
   each page holding only those, kept in the environment with the digest of the page's
   doctree and rebuilt when that changes (the edited page). The numbers are Sphinx's,
   computed by Sphinx's own walk.

Each fix reaches into a package's internals, so its code is here but its entry is in
:data:`jaxguide_build.patches.PATCHES` ("sphinx-exercise registry", "sphinx figure
numbers", "sphinx pickled doctrees"), under that table's rule for untested releases:
:func:`setup` installs them there before it applies them. (tests/test_incremental.py
checks each against the upstream behaviour on a built book.)
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any, cast

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.environment.collectors.toctree import TocTreeCollector

from . import patches

# ----------------------------------------------------------------------------- 1. exercises


def detached(node: nodes.Element) -> nodes.Element:
    """A deep copy of ``node`` with no parent and no document: pickling it pickles
    only the node and its children."""
    copy = node.deepcopy()
    for part in copy.findall():  # elements and text: each may hold its document
        part.document = None
    return copy


def detach_exercise_nodes(app: Sphinx, env: BuildEnvironment) -> list[str]:
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


def figtype(env: BuildEnvironment, node: nodes.Element) -> str | None:
    """The kind of number ``node`` gets (``"figure"``, ``"code-block"``, ...), or None:
    the test Sphinx 7.4's ``assign_figure_numbers`` applies to each element."""
    for domain in env.domains.values():
        kind = domain.get_enumerable_node_type(node)
        if domain.name == "std" and not domain.get_numfig_title(node):  # type: ignore[attr-defined]
            continue  # an uncaptioned figure, table or code block gets no number
        if kind:
            return kind
    return None


def _pruned(env: BuildEnvironment, element: nodes.Element) -> list[nodes.Element]:
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


def skeleton(env: BuildEnvironment, doctree: nodes.Element) -> nodes.Element:
    """What of ``doctree`` the figure-number walk visits, with nothing else in it."""
    root = nodes.Element()
    root.extend(_pruned(env, doctree))
    for part in root.findall():  # elements and text: each may hold its document
        part.document = None
    return root


def numbering_key(env: BuildEnvironment) -> str:
    """What decides which nodes are numbered and how a skeleton is made: Sphinx's
    release, each domain's class and enumerable nodes (with their figure type and title
    getter), and this module's code."""
    import sphinx

    def name(obj: object) -> str:
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


def _serialised(env: BuildEnvironment, docname: str) -> bytes:
    """The pickled doctree of ``docname``, as Sphinx's ``get_doctree`` reads it."""
    cache = getattr(env, "_pickled_doctree_cache", None)
    if cache is not None and docname in cache:
        return cache[docname]
    data = (Path(env.doctreedir) / f"{docname}.doctree").read_bytes()
    if cache is not None:
        cache[docname] = data
    return data


def skeleton_of(env: BuildEnvironment, docname: str, key: str | None = None) -> nodes.Element:
    """The skeleton of page ``docname``: the stored one while its doctree (and
    ``key``, :func:`numbering_key`) is unchanged, else made from the doctree and stored (in
    ``env.jaxguide_figure_skeletons``)."""
    store = env.__dict__.setdefault("jaxguide_figure_skeletons", {})
    key = numbering_key(env) if key is None else key
    digest = hashlib.sha256(_serialised(env, docname) + key.encode()).hexdigest()
    stored = store.get(docname)
    if stored is not None and stored[0] == digest:
        return pickle.loads(stored[1])
    # Sphinx's own method: env.get_doctree is this function while the walk runs.
    made = skeleton(env, type(env).get_doctree(env, docname))
    store[docname] = (digest, pickle.dumps(made, pickle.HIGHEST_PROTOCOL))
    return made


def patch_figure_numbers() -> None:
    """Make Sphinx's ``assign_figure_numbers`` walk page skeletons (:func:`skeleton_of`)
    instead of whole doctrees (once per process)."""
    original = TocTreeCollector.assign_figure_numbers
    if getattr(original, "jaxguide", False):
        return

    def assign_figure_numbers(self: TocTreeCollector, env: BuildEnvironment) -> list[str]:
        """Sphinx's own ``assign_figure_numbers``, walking page skeletons."""
        if not env.config.numfig:
            return original(self, env)
        store = env.__dict__.setdefault("jaxguide_figure_skeletons", {})
        for gone in set(store) - set(env.all_docs):
            del store[gone]
        before = env.__dict__.get("get_doctree")  # another extension's, if any
        key = numbering_key(env)
        env.get_doctree = lambda docname: skeleton_of(env, docname, key)  # type: ignore[method-assign]
        try:
            return original(self, env)
        finally:
            if before is None:
                del env.get_doctree
            else:
                env.get_doctree = before  # type: ignore[method-assign]

    patched = cast(Any, assign_figure_numbers)
    patched.jaxguide = True
    patched.original = original
    TocTreeCollector.assign_figure_numbers = assign_figure_numbers  # type: ignore[method-assign]


def setup(app: Sphinx) -> dict[str, Any]:
    patches.install(
        app, "sphinx-exercise registry", "sphinx figure numbers", "sphinx pickled doctrees"
    )
    app.connect("env-updated", detach_exercise_nodes)
    patch_figure_numbers()
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
