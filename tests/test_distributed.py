"""jaxguide.distributed: the launcher's success path, its three failure paths (crash,
timeout, taken port) with nothing left running, and a real two-process JAX system."""

from __future__ import annotations

import os
import socket
import textwrap
import time

import pytest

from jaxguide import distributed
from jaxguide.distributed import LaunchError


def program(tmp_path, name: str, code: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return path


def gone(pid: int) -> bool:
    """True when no process with this pid exists (it was stopped and reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0); it is not running, but it has not been reaped.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] == "Z"


# A process that also starts a grandchild, to check the whole process group is stopped.
SPAWNS = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("child", child.pid, flush=True)
pid = int(os.environ["JAXGUIDE_PROCESS_ID"])
here = os.path.dirname(os.path.abspath(__file__))
open(os.path.join(here, f"started{{pid}}"), "w").close()


def wait_for(other):  # until process `other` has started its grandchild
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(here, f"started{{other}}")):
        assert time.monotonic() < deadline, f"process {{other}} never started"
        time.sleep(0.01)
{body}
"""


def child_pids(results) -> list[int]:
    return [
        int(line.split()[1])
        for r in results
        for line in r.output.splitlines()
        if line.startswith("child ")
    ]


def test_launch_runs_every_process_and_returns_outputs_in_order(tmp_path):
    path = program(
        tmp_path,
        "env.py",
        """
        import os, time
        pid = int(os.environ["JAXGUIDE_PROCESS_ID"])
        time.sleep(0.3 * (2 - pid))            # later ids finish first: the order must not depend on it
        print(pid, os.environ["JAXGUIDE_NUM_PROCESSES"], os.environ["JAXGUIDE_LOCAL_DEVICES"],
              os.environ["JAXGUIDE_COORDINATOR"], os.environ["EXTRA"],
              os.environ["JAX_PLATFORMS"])
    """,
    )
    results = distributed.launch(
        path, n_processes=3, devices_per_process=2, timeout=60, env={"EXTRA": "x"}
    )
    assert [r.process_id for r in results] == [0, 1, 2]
    assert all(r.returncode == 0 for r in results)
    fields = [r.output.split() for r in results]
    assert [f[:3] for f in fields] == [["0", "3", "2"], ["1", "3", "2"], ["2", "3", "2"]]
    coordinators = {f[3] for f in fields}
    assert len(coordinators) == 1 and coordinators.pop().startswith("127.0.0.1:")
    assert all(f[4] == "x" for f in fields)
    # The simulated devices are CPU devices: on a GPU machine the processes must not
    # all start on its GPU.
    assert all(f[5] == "cpu" for f in fields)
    assert all(gone(r.pid) for r in results)
    # env replaces the platform, as it does any variable.
    chosen = distributed.launch(
        path, n_processes=1, timeout=60, env={"EXTRA": "y", "JAX_PLATFORMS": "cuda,cpu"}
    )
    assert chosen[0].output.split()[4:] == ["y", "cuda,cpu"]
    text = distributed.format_outputs(results)
    assert text.index("── process 0 (exit 0) ──") < text.index("── process 2 (exit 0) ──")


def test_a_crash_stops_the_others_and_names_the_process(tmp_path):
    path = program(
        tmp_path,
        "crash.py",
        SPAWNS.format(
            body="""
if pid == 1:
    wait_for(0)  # on a loaded machine process 0 may start later than this one
    print("about to fail", flush=True)
    raise RuntimeError("shard 1 is corrupt")
time.sleep(600)
"""
        ),
    )
    start = time.perf_counter()
    with pytest.raises(LaunchError, match="process 1 of 2 exited with code 1") as info:
        distributed.launch(path, n_processes=2, timeout=120)
    assert time.perf_counter() - start < 30  # did not wait for the sleeping process
    message = str(info.value)
    assert "about to fail" in message and "RuntimeError: shard 1 is corrupt" in message
    results = info.value.results
    assert [r.returncode for r in results] == [None, 1]  # process 0 was stopped
    assert all(gone(r.pid) for r in results)
    assert len(child_pids(results)) == 2
    time.sleep(0.2)
    assert all(gone(pid) for pid in child_pids(results))  # grandchildren too


def test_a_timeout_stops_everything(tmp_path):
    path = program(
        tmp_path,
        "hang.py",
        SPAWNS.format(
            body="""
print("process", pid, "waiting", flush=True)
time.sleep(600)
"""
        ),
    )
    start = time.perf_counter()
    with pytest.raises(
        LaunchError, match=r"timed out after 5 s; process\(es\) \[0, 1\] of 2"
    ) as info:
        # 5 s: long enough for both to print on a loaded machine, short for a test
        distributed.launch(path, n_processes=2, timeout=5)
    assert time.perf_counter() - start < 20
    assert "process 0 waiting" in str(info.value)
    results = info.value.results
    assert [r.returncode for r in results] == [None, None]
    assert all(gone(r.pid) for r in results)
    time.sleep(0.2)
    assert all(gone(pid) for pid in child_pids(results))


def test_a_taken_port_is_refused_before_anything_starts(tmp_path):
    marker = tmp_path / "started"
    path = program(tmp_path, "touch.py", f"open({str(marker)!r}, 'w').close()")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(LaunchError, match=f"port {port} on 127.0.0.1 is already in use"):
            distributed.launch(path, n_processes=2, port=port)
    assert not marker.exists()
    # A free port given explicitly is used.
    free = distributed.free_port()
    results = distributed.launch(
        program(tmp_path, "port.py", "import os; print(os.environ['JAXGUIDE_COORDINATOR'])"),
        n_processes=1,
        port=free,
    )
    assert results[0].output.strip() == f"127.0.0.1:{free}"


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            {"program": "missing.py"},
            FileNotFoundError,
            r"launch\(program='missing.py'\): no program file .*missing.py; pass the path",
        ),
        ({"program": 42}, TypeError, "a path to a .py file or a module name"),
        (
            {"program": "ok.py", "n_processes": 0},
            ValueError,
            r"launch\(n_processes=0\): n_processes must be an int >= 1",
        ),
        (
            {"program": "ok.py", "n_processes": 2.0},
            TypeError,
            r"launch\(n_processes=2.0\): n_processes must be an int",
        ),
        (
            {"program": "ok.py", "devices_per_process": 0},
            ValueError,
            r"launch\(devices_per_process=0\)",
        ),
        (
            {"program": "ok.py", "timeout": -1},
            ValueError,
            r"launch\(timeout=-1.0\): timeout must be > 0",
        ),
        (
            {"program": "ok.py", "timeout": float("nan")},
            ValueError,
            r"launch\(timeout=nan\): timeout must be a finite",
        ),
        (
            {"program": "ok.py", "port": 70000},
            ValueError,
            r"launch\(port=70000\): port must be a TCP port in \[1, 65535\]",
        ),
        (
            {"program": "ok.py", "port": 0},
            ValueError,
            r"launch\(port=0\): port must be an int >= 1",
        ),
        (
            {"program": "ok.py", "port": "8476"},
            TypeError,
            r"launch\(port='8476'\): port must be an int",
        ),
        (
            {"program": "ok.py", "stop_on_failure": 1},
            TypeError,
            r"launch\(stop_on_failure=1\): stop_on_failure must be True or False",
        ),
    ],
)
def test_bad_arguments(tmp_path, monkeypatch, kwargs, error, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.py").write_text("pass")
    with pytest.raises(error, match=message):
        distributed.launch(**kwargs)


def test_a_module_can_be_launched(tmp_path):
    (tmp_path / "mymod.py").write_text(
        "import os; print('module', os.environ['JAXGUIDE_PROCESS_ID'])"
    )
    results = distributed.launch("mymod", n_processes=2, env={"PYTHONPATH": str(tmp_path)})
    assert [r.output.strip() for r in results] == ["module 0", "module 1"]


def test_two_processes_form_one_jax_system(tmp_path):
    path = program(
        tmp_path,
        "jaxsys.py",
        """
        from jaxguide import distributed
        me, n = distributed.initialize_from_env()
        import jax, numpy as np
        from jax.sharding import NamedSharding, PartitionSpec as P
        from jax.experimental import multihost_utils
        mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
        x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), np.full((2,), me + 1.0))
        total = jax.jit(jax.shard_map(lambda b: jax.lax.psum(b.sum(), "x"), mesh=mesh, in_specs=P("x"), out_specs=P()))(x)
        print("devices", jax.local_device_count(), jax.device_count(), "psum", float(total),
              "gather", multihost_utils.process_allgather(np.array([me])).ravel().tolist())
        jax.distributed.shutdown()
    """,
    )
    results = distributed.launch(path, n_processes=2, devices_per_process=2, timeout=180)
    for r in results:
        assert "devices 2 4 psum 6.0 gather [0, 1]" in r.output, r.output  # 2*1 + 2*2 = 6


def test_initialize_from_env_outside_a_launch(monkeypatch):
    for name in distributed.ENV.values():
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RuntimeError, match="start this program with jaxguide.distributed.launch"):
        distributed.initialize_from_env()


def test_python_prints_and_native_output_are_kept_apart(tmp_path):
    """Native code writing to file descriptor 1 (as Gloo does, from its own threads)
    lands in stderr, so what the program prints stays in order and unmixed."""
    path = program(
        tmp_path,
        "mixed.py",
        """
        import os, sys, threading
        def native():
            for _ in range(200):
                os.write(1, b"[native] chatter\\n")
        t = threading.Thread(target=native)
        t.start()
        for i in range(200):
            print("line", i)
        t.join()
        print("to stderr", file=sys.stderr)
    """,
    )
    (result,) = distributed.launch(path, n_processes=1, timeout=60)
    assert result.output.splitlines() == [f"line {i}" for i in range(200)]
    assert result.stderr.count("[native] chatter") == 200 and "to stderr" in result.stderr


def test_stop_on_failure_false_lets_every_process_end_its_own_way(tmp_path):
    """With stop_on_failure=False a failure does not stop the others: all results come
    back (no LaunchError), with each exit code, and a signal is named in the summary."""
    path = program(
        tmp_path,
        "own_way.py",
        """
        import os, signal, time
        pid = int(os.environ["JAXGUIDE_PROCESS_ID"])
        if pid == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(1.0)                      # outlives process 1's death
        print("process 0 finished")
    """,
    )
    results = distributed.launch(path, n_processes=2, timeout=60, stop_on_failure=False)
    assert [r.returncode for r in results] == [0, -9]
    assert results[0].output.strip() == "process 0 finished"
    assert results[0].seconds > results[1].seconds
    text = distributed.format_outputs(results)
    assert "── process 0 (exit 0) ──" in text and "── process 1 (killed by SIGKILL) ──" in text
    # A timeout still stops everything.
    hang = program(tmp_path, "hang2.py", "import time; time.sleep(600)")
    with pytest.raises(LaunchError, match="timed out"):
        distributed.launch(hang, n_processes=2, timeout=2, stop_on_failure=False)
    with pytest.raises(
        TypeError, match=r"launch\(stop_on_failure='no'\): stop_on_failure must be True or False"
    ):
        distributed.launch(path, n_processes=1, stop_on_failure="no")


def test_a_crash_report_names_the_program_not_the_machine(tmp_path, monkeypatch):
    """The traceback in a LaunchError has the program's frames only, with names
    relative to the working directory: no runner or runpy frame, no absolute path."""
    monkeypatch.chdir(tmp_path)
    program(
        tmp_path,
        "boom.py",
        """
        def load():
            raise FileNotFoundError("data/shard-1.npz")
        load()
    """,
    )
    with pytest.raises(LaunchError) as info:
        distributed.launch("boom.py", n_processes=1, timeout=60)
    message = str(info.value)
    assert 'File "boom.py", line 4, in <module>' in message
    assert 'File "boom.py", line 3, in load' in message
    assert message.rstrip().endswith("FileNotFoundError: data/shard-1.npz")
    assert str(tmp_path) not in message and "_runner" not in message and "runpy" not in message
    assert info.value.results[0].returncode == 1
