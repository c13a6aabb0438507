"""The shard_map chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import pytest

from bookcheck import images, page_text

pytestmark = pytest.mark.book


def test_shard_map(book):
    text = page_text(book, "shard_map")
    assert "inside, while tracing: block shape (2,)" in text and "outside: global shape (16,)" in text
    for d in range(8):
        assert f"device {d} holds [{2 * d}. {2 * d + 1}.]" in text
    assert "psum: 120.0" in text                         # sum(range(16)), replicated
    assert "does not match the specs of the input" in text  # Explicit-mesh trap
    assert "could not infer replication" in text          # check_vma
    # The three-way layer: all equal to the reference, and what each program contains.
    results = re.findall(r"(automatic|semi-automatic|manual) +equal to the reference: max \|diff\| = (\S+)", text)
    assert [r[0] for r in results] == ["automatic", "semi-automatic", "manual"], results
    assert all(float(r[1]) < 1e-5 for r in results), results
    assert "manual: {'all-reduce': 1}" in text
    assert len(images(book, "shard_map")) >= 2            # W's sharding + the ring picture
