"""tools/check_jax_floor.py: the parts that need no download (the full run needs PyPI
and executes every chapter, so it is run by hand; see CONTRIBUTING.md, "The oldest and
the newest JAX, and accelerators")."""

from __future__ import annotations

import tomllib

import pytest

import check_jax_floor
from jaxguide_build.environment import ROOT


def test_floor_is_read_from_pyproject():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"jax>={check_jax_floor.floor()}" in deps


def test_unknown_chapters_are_refused_before_anything_is_installed():
    with pytest.raises(SystemExit, match="unknown chapters"):
        check_jax_floor.main(["--chapters", "no_such_chapter"])


def test_a_failed_step_of_the_environment_stops_with_what_it_said(tmp_path, monkeypatch):
    """The environment comes from jaxguide_build.environment.wheel_environment (shared
    with tests/wheelrun.py); a command of it that fails stops the check with the
    command and the end of its error output, not a traceback."""
    from jaxguide_build import environment

    script = tmp_path / "uv"
    script.write_text("#!/bin/sh\necho 'no such version' >&2\nexit 2\n")
    script.chmod(0o755)
    monkeypatch.setattr(environment, "uv", lambda: str(script))
    with pytest.raises(
        SystemExit,
        match=r"check_jax_floor: .*uv build --quiet --wheel \.\.\. "
        r"failed:\nno such version",
    ):
        check_jax_floor.environment(tmp_path, "0.1")
    monkeypatch.setattr(environment, "uv", lambda: str(tmp_path / "missing"))
    with pytest.raises(SystemExit, match="check_jax_floor: "):
        check_jax_floor.environment(tmp_path, "0.1")
