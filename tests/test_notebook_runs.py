"""jaxguide_build.notebook_runs: the runner file that every run of a notebook outside the
build executes (copied into the wheel's environment or a chroot), and the longest-first
scheduler the four callers share (tests/wheelrun.py, tools/check_jax_floor.py,
tools/check_jax_newest.py, bench/accelerator_check.py)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from jaxguide_build import notebook_runs

#: What the runner may import at its top level: it runs where this package is absent.
STANDALONE = {"nbclient", "nbformat", "jupyter_client"} | set(sys.stdlib_module_names)


def test_the_runner_imports_nothing_of_the_repository_at_its_top_level():
    tree = ast.parse(Path(notebook_runs.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "a relative import at the top level"
            imported.add((node.module or "").split(".")[0])
    assert imported - STANDALONE == set()


def test_a_copy_of_the_runner_checks_where_jaxguide_and_jax_come_from(tmp_path):
    """``--installed`` stops a run whose jaxguide is not from a wheel (here it is this
    checkout's), ``--jax`` one on another JAX: before any kernel starts."""
    runner = notebook_runs.copy_runner(tmp_path)
    assert runner == tmp_path / notebook_runs.RUNNER_NAME
    nb = tmp_path / "nb.ipynb"
    base = notebook_runs.runner_command(
        sys.executable, runner, nb, tmp_path / "o", tmp_path, timeout=5
    )
    assert base == [sys.executable, str(runner), str(nb), str(tmp_path / "o"), str(tmp_path)] + [
        "--timeout",
        "5",
    ]
    for extra, message in [
        (["--installed"], "not from an installed wheel (site-packages)"),
        (["--jax", "0.0.1"], "not 0.0.1"),
    ]:
        done = subprocess.run(base + extra, capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 1 and message in done.stderr, done.stderr
    assert notebook_runs.runner_command("p", "r", "n", "o", "w", timeout=9.5, installed=True, jax="1.2") == [
        "p", "r", "n", "o", "w", "--timeout", "9", "--installed", "--jax", "1.2"
    ]  # fmt: skip


def test_runs_start_longest_first_at_most_parallel_at_a_time(tmp_path):
    # Each prints its name and when it began and ended (within its process's life).
    stamp = "import sys, time; print(sys.argv[1], time.time()); time.sleep(0.3); print(time.time())"

    def run(name: str, expected: float, code: str = "") -> notebook_runs.Run:
        command = [sys.executable, "-c", stamp + code, name]
        return notebook_runs.Run(name, command, expected)

    runs = [run("a", 1), run("b", 5, "; sys.exit(3)"), run("c", 1), run("d", 9)]
    ended = list(notebook_runs.run_longest_first(runs, tmp_path, 2))
    assert sorted((e.name, e.returncode) for e in ended) == [
        ("a", 0),
        ("b", 3),
        ("c", 0),
        ("d", 0),
    ]
    assert all(e.log.startswith(e.name + " ") and e.seconds >= 0.3 for e in ended)
    assert (tmp_path / "b.log").read_text() == next(e.log for e in ended if e.name == "b")
    life = {e.name: (float(e.log.split()[1]), float(e.log.split()[2])) for e in ended}
    # d and b (the longest) first; a and c only once one of them had ended.
    assert min(life["a"][0], life["c"][0]) > min(life["d"][1], life["b"][1])
    for name, (began, _) in life.items():  # never more than two at once
        assert sum(b <= began <= e for b, e in life.values()) <= 2, name
    # One at a time: in order, longest first, a tie by name.
    ended = list(notebook_runs.run_longest_first(runs, tmp_path, 1))
    assert [e.name for e in ended] == ["d", "b", "a", "c"]


def test_each_run_gets_its_own_environment_and_the_folder_asked_for(tmp_path):
    code = "import os; print(os.environ.get('WHO', 'none'), os.getcwd())"
    runs = [
        notebook_runs.Run("x", [sys.executable, "-c", code], 1, {"WHO": "x"}),
        notebook_runs.Run("y", [sys.executable, "-c", code], 1),
    ]
    ended = {
        e.name: e.log.split()
        for e in notebook_runs.run_longest_first(runs, tmp_path, 2, cwd=tmp_path)
    }
    assert ended == {"x": ["x", str(tmp_path)], "y": ["none", str(tmp_path)]}


def test_ipynb_code_bytes_counts_only_code(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("words " * 100), nbformat.v4.new_code_cell("x = 1")]
    )
    nbformat.write(nb, tmp_path / "a.ipynb")
    assert notebook_runs.ipynb_code_bytes(tmp_path / "a.ipynb") == len("x = 1")


def test_error_line_names_the_error_without_colours():
    out = "running\nTraceback ...\n  File x\n\x1b[31mJaxRuntimeError\x1b[39m: UNIMPLEMENTED: Side-effect ops\n"
    assert notebook_runs.error_line(out) == "JaxRuntimeError: UNIMPLEMENTED: Side-effect ops"
    assert notebook_runs.error_line("stopped\n") == "stopped"
    assert notebook_runs.error_line("") == "(no output)"


def test_the_work_folder_goes_unless_kept(tmp_path, capsys):
    for keep in (False, True):
        with notebook_runs.work_folder("jaxguide-test-", keep, tmp_path) as folder:
            (folder / "log").write_text("x")
        assert folder.parent == tmp_path and folder.exists() == keep
    assert capsys.readouterr().out == f"kept: {folder}\n"


@pytest.mark.builds
def test_notebooks_run_over_private_ipc_sockets_and_are_written_even_when_they_fail(
    tmp_path, monkeypatch
):
    """The runner, copied out and run by the scheduler: the kernel works in the folder
    asked for, over IPC sockets (never a TCP port another kernel started at the same
    moment could also pick), and is gone at the end with its socket folder. A notebook
    whose cell fails is written with its outputs up to the failure, and its run exits 1
    with the traceback."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the runners' sockets go there
    monkeypatch.setattr(tempfile, "tempdir", None)
    for folder in ("runner", "work", "out", "logs"):
        (tmp_path / folder).mkdir()
    runner = notebook_runs.copy_runner(tmp_path / "runner")
    code = (
        "import os; from ipykernel.kernelapp import IPKernelApp\n"
        "app = IPKernelApp.instance()\n"
        "print(app.transport, os.getcwd(), os.getpid())"
    )
    cells = {"good": [code], "bad": [code, "1 / 0", "print('never')"]}
    runs = []
    for name, sources in cells.items():
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
        nbformat.write(nb, tmp_path / "work" / f"{name}.ipynb")
        command = notebook_runs.runner_command(
            sys.executable,
            runner,
            tmp_path / "work" / f"{name}.ipynb",
            tmp_path / "out" / f"{name}.ipynb",
            tmp_path / "work",
            timeout=120,
        )
        runs.append(notebook_runs.Run(name, command, len(sources)))
    ended = {e.name: e for e in notebook_runs.run_longest_first(runs, tmp_path / "logs", 2)}
    assert ended["good"].returncode == 0 and "OK " in ended["good"].log, ended["good"].log
    assert ended["bad"].returncode == 1 and "ZeroDivisionError" in ended["bad"].log
    assert notebook_runs.error_line(ended["bad"].log).startswith("ZeroDivisionError")
    pids = []
    for name in cells:
        out = json.loads((tmp_path / "out" / f"{name}.ipynb").read_text())
        transport, cwd, pid = "".join(out["cells"][0]["outputs"][0]["text"]).split()
        assert (transport, cwd) == ("ipc", str(tmp_path / "work"))
        pids.append(pid)
    bad = json.loads((tmp_path / "out" / "bad.ipynb").read_text())["cells"]
    assert bad[1]["outputs"][0]["ename"] == "ZeroDivisionError" and bad[2]["outputs"] == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", "out", "runner", "work"], (
        "a kernel's socket folder was left behind"
    )
    for _ in range(50):  # the kernel processes are gone
        if not any(Path(f"/proc/{pid}").exists() for pid in pids):
            break
        time.sleep(0.1)
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids), "a kernel is still running"
