"""The multiprocess chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bookcheck import glued, page_text

pytestmark = pytest.mark.book


def test_multiprocess(book):
    text = page_text(book, "multiprocess")
    g = glued(book, "multiprocess")
    # Both processes' outputs are on the page, each with its own local devices.
    for p, devices in ((0, "[0, 1, 2, 3]"), (1, "[2048, 2049, 2050, 2051]")):
        assert f"── process {p} (exit 0) ── process {p} of 2 local devices: {devices}" in text
    expected = np.arange(8.0).sum() + (np.arange(8.0) + 100).sum()
    assert g["global_sum"] == f"{expected:g}"
    assert text.count(f"shard_map psum: {expected}") >= 2 and text.count(f"jit sum: {expected}") >= 2
    assert text.count("process_allgather: [[0, 0], [1, 10]]") >= 2
    # The training run across processes matched the single-process one, asserted on the page.
    assert re.search(r"two processes x 4 devices vs one process: largest loss difference over 100 steps (\S+) \(tolerance 1e-05\)", text)
    assert float(g["mp_worst"]) <= 1e-5
    for p in (0, 1):
        assert f"process {p}: step 100, loss" in text
    # The launcher's three failure paths, each a LaunchError the prose names.
    assert "process 1 of 2 exited with code 1" in text and "FileNotFoundError: data/shard-1.npz" in text
    assert "timed out after 3 s" in text
    assert "is already in use" in text
    assert "all 4 processes: global sum 4912.0" in text
