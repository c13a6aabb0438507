"""tools/check_jax_newest.py: the parts that need neither root nor a download (the full
run makes a Debian root and executes every chapter, so it is run by hand)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

import check_jax_newest  # tools/ (pytest's pythonpath)
from jaxguide.page import failed_claims
from jaxguide_build.environment import ROOT
from jaxguide_build.outputs import printed


def test_arguments_and_their_defaults():
    args = check_jax_newest.parse_args([])
    assert args.root == check_jax_newest.default_root()
    assert args.root.parts[-2:] == ("jaxguide", "trixie")
    assert (args.chapters, args.parallel, args.keep, args.mirror) == (None, 2, False, None)
    args = check_jax_newest.parse_args(
        ["--root", "r", "--chapters", "numpy", "random", "--parallel", "1", "--keep"]
    )
    assert args.root == Path("r").absolute()
    assert (args.chapters, args.parallel, args.keep) == (["numpy", "random"], 1, True)


def test_parallel_below_one_is_refused(capsys):
    with pytest.raises(SystemExit):
        check_jax_newest.parse_args(["--parallel", "0"])
    assert "--parallel: must be a whole number of at least 1" in capsys.readouterr().err


def test_unknown_chapters_are_refused_before_root_or_network(monkeypatch):
    monkeypatch.setattr(check_jax_newest, "preflight", pytest.fail)  # never reached
    with pytest.raises(SystemExit, match=r"unknown chapters \['no_such_chapter'\]"):
        check_jax_newest.main(["--chapters", "numpy", "no_such_chapter"])


def test_chapters_keep_the_books_order_and_have_notebooks():
    chapters = check_jax_newest.select_chapters(["random", "numpy"])
    assert chapters == ["numpy", "random"]
    assert all((ROOT / "notebooks" / f"{c}.ipynb").is_file() for c in chapters)


def test_without_root_it_says_to_use_sudo(monkeypatch):
    monkeypatch.setattr(check_jax_newest.os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit, match="needs root.*sudo"):
        check_jax_newest.preflight(Path("/nonexistent"), need_debootstrap=True)


def test_missing_debootstrap_names_the_package_to_install(monkeypatch):
    monkeypatch.setattr(check_jax_newest.os, "geteuid", lambda: 0)
    monkeypatch.setattr(
        check_jax_newest.shutil, "which", lambda tool: None if tool == "debootstrap" else tool
    )
    with pytest.raises(SystemExit, match=r"apt-get install debootstrap`"):
        check_jax_newest.preflight(Path("/nonexistent"), need_debootstrap=True)
    check_jax_newest.preflight(Path("/nonexistent"), need_debootstrap=False)  # root exists


def test_debootstrap_command():
    assert check_jax_newest.debootstrap_command(Path("/r"), "http://m/debian") == [
        "debootstrap",
        "--variant=minbase",
        "--include=python3,python3-venv,python3-pip,ca-certificates",
        "trixie",
        "/r",
        "http://m/debian",
    ]


def test_the_debian_mirror_is_read_from_either_apt_format():
    deb822 = (
        "Types: deb\n# a comment: with a colon\nURIs: http://deb.debian.org/debian\n"
        "Suites: bookworm bookworm-updates\nComponents: main\n\n"
        "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n"
    )
    security_first = (
        "Types: deb\nURIs: http://security.debian.org/debian-security\nSuites: s\n\n"
        "Types: deb-src\nURIs: http://src.example/debian\nSuites: s\n\n"
        "Types: deb\nEnabled: no\nURIs: http://off.example/debian\nSuites: s\n\n"
        "Types: deb\nURIs: http://ftp.de.debian.org/debian/\nSuites: s\n"
    )
    one_line = (
        "# deb http://commented.example/debian bookworm main\n"
        "deb [signed-by=/k.gpg arch=amd64] https://mirror.example/debian bookworm main\n"
    )
    mirror = check_jax_newest.debian_mirror
    assert mirror([("debian.sources", deb822)]) == "http://deb.debian.org/debian"
    assert mirror([("x.sources", security_first)]) == "http://ftp.de.debian.org/debian"
    assert mirror([("sources.list", one_line)]) == "https://mirror.example/debian"
    not_debian = "deb https://deb.nodesource.com/node_20.x nodistro main\n"
    assert mirror([("node.list", not_debian)]) is None


def test_commands_run_inside_the_root_with_only_its_own_environment():
    command = check_jax_newest.inside(Path("/r"), ["python", "-c", "pass"])
    assert command[:5] == ["unshare", "--mount", "--pid", "--fork", "--kill-child"]
    script, root = command[7], command[9]
    assert root == "/r"
    assert 'mount -t proc proc "$r/proc"' in script and 'exec chroot "$r" "$@"' in script
    rest = command[10:]
    assert rest[:2] == ["/usr/bin/env", "-i"] and rest[-3:] == ["python", "-c", "pass"]
    assert "HOME=/root" in rest and "PIP_CERT=/etc/ssl/certs/ca-certificates.crt" in rest


def executed_notebook() -> dict:
    """A notebook as nbclient leaves it: claims that held and did not, a warning."""
    held = "✓ speedup: 3.1 (above 2)\n"
    differs = (
        "✗ same_draw: False, where the book's build (JAX 0.10.2) found it True; this run "
        "(JAX 0.12.0) differs, so the prose near this cell describes the book's build, not "
        "this run. Carrying on.\n"
    )
    cells = [
        nbformat.v4.new_markdown_cell("✗ not an output"),
        nbformat.v4.new_code_cell(
            "claim(...)",
            outputs=[
                nbformat.v4.new_output("stream", name="stdout", text=held + differs),
                nbformat.v4.new_output(
                    "stream",
                    name="stderr",
                    text="/x.py:3: DeprecationWarning: jax.foo is deprecated\n  foo()\n",
                ),
            ],
        ),
        nbformat.v4.new_code_cell(
            "x",
            outputs=[
                nbformat.v4.new_output(
                    "execute_result", data={"text/plain": "✗ key2: 1, where ...; this run (JAX"}
                ),
                nbformat.v4.new_output(
                    "stream",
                    name="stderr",
                    text="/x.py:3: DeprecationWarning: jax.foo is deprecated\n",
                ),
            ],
        ),
    ]
    return nbformat.from_dict(nbformat.v4.new_notebook(cells=cells))


def test_differing_claims_are_read_from_every_output_without_their_standard_tail():
    # What the check reports under a chapter (bench/accelerator_check.py reads them the
    # same way); tests/test_page.py shows the reader against claim's own lines.
    assert failed_claims(printed(executed_notebook())) == [
        "✗ same_draw: False, where the book's build (JAX 0.10.2) found it True",
        "✗ key2: 1, where ...",
    ]
    assert failed_claims(printed({})) == []


def test_warnings_are_collected_once_each():
    assert check_jax_newest.warnings_printed(executed_notebook()) == [
        "DeprecationWarning: jax.foo is deprecated"
    ]
