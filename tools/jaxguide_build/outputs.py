"""Two executions of a chapter compared as a reader sees them (cell outputs, apart from
timings and build-only cells). Used by the tests (tests/bookcheck.py: the book's build
against the notebooks run from a wheel) and by bench/accelerator_check.py (the CPU build
against a run on an accelerator). Also what a notebook's cells printed (:func:`printed`:
tools/check_jax_newest.py and bench/accelerator_check.py read the claims that did not
hold in it, with ``jaxguide.page.failed_claims``)."""

from __future__ import annotations

import hashlib
import json
import re

#: An ANSI colour code (nbclient and IPython colour tracebacks and warnings).
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def source(cell: dict) -> str:
    """A notebook cell's source as one string."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def tags(cell: dict) -> list[str]:
    """A notebook cell's tags."""
    return cell.get("metadata", {}).get("tags", [])


def printed(nb: dict, stream: str | None = None) -> list[str]:
    """The lines a notebook's code cells printed: one stream (``"stdout"``,
    ``"stderr"``) or, for None, the plain text of every output."""
    lines = []
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if out.get("output_type") == "stream":
                text = out.get("text", "") if stream in (None, out.get("name")) else ""
            elif stream is None:
                text = out.get("data", {}).get("text/plain", "")
            else:
                text = ""
            lines += "".join(text).splitlines()
    return lines


MEASURED = "measured"
# IPython names each cell's code /tmp/ipykernel_<pid>/<hash>.py; JAX error messages quote
# it. The pid differs between runs, and it is no part of what the page teaches.
KERNEL_FILE_RE = re.compile(r"/tmp/ipykernel_\d+/\d+\.py")


def comparable_outputs(nb: dict) -> list[tuple[str, dict]]:
    """What a reader sees of every code cell's outputs in an executed notebook, keyed by
    the cell's source, in order; compared between two executions of the same chapter.

    Left out: cells tagged ``measured`` (timings) or ``remove-cell`` (build-only cells
    such as the provenance box), and glue payloads (values stored for the prose, which
    exist only where myst-nb runs). How the kernel happened to split a stream into chunks
    varies between runs, so each stream is joined into one text; images are compared by
    their bytes.
    """
    result = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or {MEASURED, "remove-cell"} & set(tags(cell)):
            continue
        streams: dict[str, str] = {}
        shown: list[str] = []
        for out in cell.get("outputs", []):
            kind = out["output_type"]
            if kind == "stream":
                text = out.get("text", "")
                streams[out["name"]] = streams.get(out["name"], "") + (
                    "".join(text) if isinstance(text, list) else text
                )
            elif kind == "error":
                shown.append(f"{out['ename']}: {out.get('evalue', '')}")
            elif "scrapbook" not in out.get("metadata", {}):
                data = out.get("data", {})
                if "image/png" in data:
                    png = data["image/png"]
                    shown.append(
                        "<image "
                        + hashlib.sha256(
                            ("".join(png) if isinstance(png, list) else png).encode()
                        ).hexdigest()[:16]
                        + ">"
                    )
                else:
                    plain = data.get("text/plain", "")
                    shown.append("".join(plain) if isinstance(plain, list) else plain)
        outputs = {"streams": streams, "shown": shown}
        # A notebook hides a solution's code behind a Colab form title: same code.
        code = re.sub(r"\A# @title [^\n]*\n", "", source(cell))
        result.append((code, json.loads(KERNEL_FILE_RE.sub("<kernel cell>", json.dumps(outputs)))))
    return result


def output_differences(book_nb: dict, other_nb: dict) -> list[str]:
    """Cells whose outputs differ between the book's execution of a chapter and another
    execution of it (cells only one side has, such as a notebook's set-up cell, are
    skipped). Returns readable lines; empty when the two agree.

    >>> def run(text):  # a notebook of one cell that printed ``text``
    ...     out = {"output_type": "stream", "name": "stdout", "text": text}
    ...     return {"cells": [{"cell_type": "code", "source": "print(x)", "outputs": [out]}]}
    >>> output_differences(run("1.0\\n"), run("1.0\\n"))
    []
    >>> for line in output_differences(run("1.0\\n"), run("2.0\\n")):
    ...     print(line)
    cell 0 ('print(x)') differs at: ...'{"streams": {"stdout": "1.0\\\\n"}, "shown": []}' vs ...'{"streams": {"stdout": "2.0\\\\n"}, "shown": []}'
    """
    book = comparable_outputs(book_nb)
    other = [c for c in comparable_outputs(other_nb) if any(c[0] == b[0] for b in book)]
    found = []
    if [s for s, _ in book] != [s for s, _ in other]:
        found.append(
            f"the cells differ: {len(book)} code cells in the book, {len(other)} matching in the other"
        )
    for i, ((src, a), (_, b)) in enumerate(zip(book, other)):
        if a != b:
            first = src.strip().splitlines()[0][:60] if src.strip() else ""
            ta, tb = json.dumps(a, ensure_ascii=False), json.dumps(b, ensure_ascii=False)
            at = next((k for k, (x, y) in enumerate(zip(ta, tb)) if x != y), min(len(ta), len(tb)))
            lo = max(0, at - 80)
            found.append(
                f"cell {i} ({first!r}) differs at: ...{ta[lo : at + 120]!r} vs ...{tb[lo : at + 120]!r}"
            )
    return found
