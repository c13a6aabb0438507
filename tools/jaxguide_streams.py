"""Sphinx extension (build tooling): merge a cell's stream output chunks exactly.

A kernel sends ``print`` output in chunks whose boundaries depend on when its output
thread flushes, which is a race: ``print("a", "b")`` may arrive as ``"a"`` and
``" b\\n"``. myst-nb 1.4's ``nb_merge_streams`` joins chunks by stripping each one
and adding a newline, so a flush in the middle of a line splits it on the page, and
the same code renders differently from one build to the next. This replaces that
merge with exact concatenation; ``\\r``/``\\b`` handling and the stdout-before-stderr
order are kept from myst-nb's own function, which runs on the merged text.
"""

from __future__ import annotations

import myst_nb.core.render as render
from myst_nb.core.utils import coalesce_streams as _myst_nb_coalesce


def coalesce_streams(outputs):
    merged, first = [], {}
    for output in outputs:
        if output["output_type"] == "stream" and output["name"] in first:
            first[output["name"]]["text"] += output["text"]
            continue
        if output["output_type"] == "stream":
            output = output.copy()
            first[output["name"]] = output
        merged.append(output)
    # One chunk per stream is left: myst-nb's function now only cleans it up.
    return _myst_nb_coalesce(merged)


def setup(app):
    render.coalesce_streams = coalesce_streams
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
