"""jaxguide_build.cache: files written whole or not at all, and a content cache that
never serves a damaged entry."""

import pytest


def test_write_atomic_leaves_no_partial_file(tmp_path, monkeypatch):
    import os

    from jaxguide_build import cache

    target = tmp_path / "store.json"
    cache.write_atomic(target, b"old")

    def crash(src, dst):
        raise KeyboardInterrupt  # interrupted between writing and renaming

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        cache.write_atomic(target, b"new")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["store.json"]


def test_a_damaged_cache_entry_is_never_used(tmp_path):
    from jaxguide_build.cache import ContentCache

    cache = ContentCache(tmp_path, ".png")
    assert cache.get("k") is None
    cache.put("k", b"\x89PNG full image")
    assert cache.get("k") == b"\x89PNG full image"
    (entry,) = tmp_path.glob("k.*.png")
    entry.write_bytes(b"\x89PNG fu")  # truncated by an interrupted build
    assert cache.get("k") is None and not entry.exists()
