"""Run a JAX program as several processes on this machine, the way a cluster would.

:func:`launch` starts ``n_processes`` Python processes on 127.0.0.1, each told (through
environment variables) the coordinator address, the number of processes, its own id
and how many CPU devices to simulate. The program calls ``jax.distributed.initialize``
with them (or :func:`initialize_from_env`) and the processes form one JAX system. The
launcher picks a free port, collects each process's output (what Python printed,
apart from native libraries' logs), and stops every process when one fails (unless
``stop_on_failure=False``: then JAX's own fate sharing decides) or the time is up, so
nothing is left running.

Example (the program is a file; its processes print and exit):
    >>> import pathlib, tempfile
    >>> from jaxguide import distributed
    >>> program = pathlib.Path(tempfile.mkdtemp()) / "hello.py"
    >>> _ = program.write_text("import os; print('hello from', os.environ['JAXGUIDE_PROCESS_ID'])")
    >>> [r.output.strip() for r in distributed.launch(program, n_processes=2, timeout=60)]
    ['hello from 0', 'hello from 1']
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING

from jaxguide._checks import boolean, positive_int, real, strings

if TYPE_CHECKING:
    # launch runs jaxguide._runner by name (``python -m``), which no import shows; this
    # one, never run, shows it to the build's staleness check, so that a chapter that
    # launches is executed again when _runner changes (tests/test_staleness.py).
    from jaxguide import _runner as _runner

__all__ = [
    "LaunchError",
    "ProcessResult",
    "free_port",
    "launch",
    "initialize_from_env",
    "format_outputs",
    "ENV",
]

HOST = "127.0.0.1"
# The environment variables launch() sets in every process.
ENV = {
    "coordinator": "JAXGUIDE_COORDINATOR",
    "num_processes": "JAXGUIDE_NUM_PROCESSES",
    "process_id": "JAXGUIDE_PROCESS_ID",
    "local_devices": "JAXGUIDE_LOCAL_DEVICES",
}


class LaunchError(RuntimeError):
    """A launched process failed, the run timed out, or it could not start.

    ``results`` holds what every process printed (and its exit code, ``None`` for a
    process that was stopped).
    """

    def __init__(self, message: str, results: list[ProcessResult] | None = None):
        super().__init__(message)
        self.results = results or []


@dataclasses.dataclass(frozen=True)
class ProcessResult:
    """One process of a :func:`launch`: its id, operating-system pid, exit code
    (``None`` if it was stopped), what Python printed (``output``), and apart from it
    ``stderr``: tracebacks, warnings, and whatever native libraries wrote (XLA's logs,
    Gloo's connection messages)."""

    process_id: int
    pid: int
    returncode: int | None
    output: str
    stderr: str
    seconds: float

    def tail(self, lines: int = 12) -> str:
        """The last lines of standard output, then of standard error."""
        out = self.output.rstrip().splitlines()[-lines:]
        err = self.stderr.rstrip().splitlines()[-lines:]
        return "\n".join(out + err)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now.

    Returns:
        The port number (another program may take it before you use it).

    Example:
        >>> 1024 <= free_port() <= 65535
        True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return True
    return False


def _check_int(name: str, value: object) -> int:
    return positive_int("launch", name, value, example=2)


def _read(f: IO[bytes]) -> str:
    f.seek(0)
    return f.read().decode("utf-8", errors="replace")


def _command(program: str | os.PathLike[str]) -> list[str]:
    # jaxguide._runner runs the program with Python's prints on stdout and native
    # libraries' output on stderr (see that module).
    runner = [sys.executable, "-u", "-m", "jaxguide._runner"]
    if isinstance(program, (str, os.PathLike)) and str(program).endswith(".py"):
        path = Path(program)
        if not path.is_file():
            raise FileNotFoundError(
                f"launch(program={str(program)!r}): no program file {path}; pass the path "
                "of an existing .py file, or a module name."
            )
        return runner + ["file", str(path.absolute())]
    if (
        isinstance(program, str)
        and program
        and all(part.isidentifier() for part in program.split("."))
    ):
        return runner + ["module", program]
    raise TypeError(
        f"launch(program=...): expected a path to a .py file or a module name such as 'pkg.module', got {program!r}."
    )


def _stop(procs: list[subprocess.Popen]) -> None:
    """Kill every process's whole group (what it started too, even after it exited) and reap it."""
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # start_new_session: the group id is the pid
        except (ProcessLookupError, PermissionError):
            pass
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not time out
            pass


def launch(
    program: str | os.PathLike[str],
    n_processes: int = 2,
    *,
    devices_per_process: int = 4,
    timeout: float = 120.0,
    port: int | None = None,
    env: dict[str, str] | None = None,
    stop_on_failure: bool = True,
) -> list[ProcessResult]:
    """Run ``program`` as ``n_processes`` processes on 127.0.0.1 and wait for all of them.

    Args:
        program: a ``.py`` file, or a module name run as ``python -m module``.
        n_processes: how many processes (JAX's ``num_processes``).
        devices_per_process: CPU devices each process should simulate (passed in
            ``JAXGUIDE_LOCAL_DEVICES``; the program sets ``jax_num_cpu_devices``).
        timeout: seconds before every process is stopped and :class:`LaunchError` raised.
        port: the coordinator's port on 127.0.0.1; ``None`` picks a free one. A port
            already in use is refused before anything starts.
        env: extra environment variables for the processes. The processes run on
            the CPU backend (``JAX_PLATFORMS=cpu``), since the devices they simulate
            are CPU devices: on a machine with a GPU, the processes would otherwise
            all start on that one GPU. A ``JAX_PLATFORMS`` in ``env`` replaces it.
        stop_on_failure: if ``True`` (the default), the first process that exits
            with an error stops all the others and raises :class:`LaunchError`. If
            ``False``, the launcher does not interfere: it waits until every process
            has exited (or ``timeout``) and returns all the results, failures
            included, so you can see what JAX itself does when a process dies.

    Returns:
        One :class:`ProcessResult` per process, in process-id order.

    Raises:
        LaunchError: a process exited with an error (the others are stopped at once),
            the run took longer than ``timeout``, or ``port`` is taken. The message
            names the process and shows its last lines of output and error.
        TypeError: a count or ``port`` that is not an int, a ``timeout`` that is
            not a number, or a ``stop_on_failure`` that is not a bool.
        ValueError: a count below 1, a ``port`` outside ``[1, 65535]``, or a
            ``timeout`` that is not a positive finite number.

    Example (each process prints what it was told):
        >>> import pathlib, tempfile
        >>> program = pathlib.Path(tempfile.mkdtemp()) / "told.py"
        >>> _ = program.write_text(
        ...     "import os; from jaxguide.distributed import ENV\\n"
        ...     "print(*(os.environ[ENV[k]] for k in ('process_id', 'num_processes')))")
        >>> [r.output.strip() for r in launch(program, 3, devices_per_process=2)]
        ['0 3', '1 3', '2 3']
    """
    command = _command(program)
    boolean("launch", "stop_on_failure", stop_on_failure)
    n = _check_int("n_processes", n_processes)
    devices = _check_int("devices_per_process", devices_per_process)
    real(
        "launch",
        "timeout",
        timeout,
        minimum=0.0,
        exclusive=True,
        hint=" Pass a number of seconds such as 120.",
    )
    port = free_port() if port is None else _checked_port(port)
    base_env = {**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})}
    base_env.update(
        {
            ENV["coordinator"]: f"{HOST}:{port}",
            ENV["num_processes"]: str(n),
            ENV["local_devices"]: str(devices),
            "PYTHONUNBUFFERED": "1",
        }
    )
    # What Python prints and what native code writes go to separate files: libraries
    # such as Gloo write from their own threads, and a shared file would interleave
    # their lines with the program's, differently on every run.
    run = _Run(
        outs=[tempfile.TemporaryFile(mode="w+b") for _ in range(n)],
        errs=[tempfile.TemporaryFile(mode="w+b") for _ in range(n)],
    )
    try:
        for i in range(n):
            run.procs.append(
                subprocess.Popen(
                    command,
                    env={**base_env, ENV["process_id"]: str(i)},
                    stdout=run.outs[i],
                    stderr=run.errs[i],
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        return _supervise(run, timeout, stop_on_failure)
    finally:
        _stop(run.procs)
        for f in run.outs + run.errs:
            f.close()


def _checked_port(port: int) -> int:
    """``port``, checked to be a TCP port that nothing on :data:`HOST` listens on."""
    port = _check_int("port", port)
    if port > 65535:
        raise ValueError(
            f"launch(port={port}): port must be a TCP port in [1, 65535]; pass port=None "
            "to pick a free one."
        )
    if _port_taken(port):
        raise LaunchError(
            f"launch: port {port} on {HOST} is already in use, so the coordinator cannot listen there; "
            "pass port=None to pick a free port, or stop what is using it."
        )
    return port


@dataclasses.dataclass
class _Run:
    """The processes of one :func:`launch`, their output files, and when each ended
    (seconds from the start)."""

    outs: list[IO[bytes]]
    errs: list[IO[bytes]]
    procs: list[subprocess.Popen] = dataclasses.field(default_factory=list)
    start: float = dataclasses.field(default_factory=time.perf_counter)
    ended: dict[int, float] = dataclasses.field(default_factory=dict)

    def results(self) -> list[ProcessResult]:
        out = []
        for i, p in enumerate(self.procs):
            output, stderr = (_read(f) for f in (self.outs[i], self.errs[i]))
            code = p.returncode if i in self.ended else None
            seconds = self.ended.get(i, time.perf_counter() - self.start)
            out.append(ProcessResult(i, p.pid, code, output, stderr, seconds))
        return out


def _supervise(run: _Run, timeout: float, stop_on_failure: bool) -> list[ProcessResult]:
    """Wait for every process of ``run``; stop them all on the first failure (when
    ``stop_on_failure``) or after ``timeout`` seconds, and raise :class:`LaunchError`."""
    n = len(run.procs)
    while True:
        for i, p in enumerate(run.procs):
            if p.poll() is not None and i not in run.ended:
                run.ended[i] = time.perf_counter() - run.start
        failed = [i for i, p in enumerate(run.procs) if p.returncode not in (None, 0)]
        if failed and stop_on_failure:
            _stop(run.procs)
            res = run.results()
            first = res[failed[0]]
            raise LaunchError(
                f"launch: process {first.process_id} of {n} exited with code {first.returncode}; "
                f"the other processes were stopped. Its last output:\n"
                f"{first.tail()}",
                res,
            )
        if len(run.ended) == n:
            return run.results()
        if time.perf_counter() - run.start > timeout:
            _stop(run.procs)
            res = run.results()
            waiting = [r.process_id for r in res if r.process_id not in run.ended]
            last = res[waiting[0]]
            raise LaunchError(
                f"launch: timed out after {timeout:g} s; process(es) {waiting} of {n} were still running "
                f"and have been stopped. Last output of process {last.process_id}:\n{last.tail() or '(nothing)'}",
                res,
            )
        time.sleep(0.05)


def format_outputs(results: list[ProcessResult], *, drop: tuple[str, ...] = ()) -> str:
    """Every process's standard output under a header, in process order.

    The header says how the process ended: ``exit N``, ``killed by SIGKILL`` (or
    another signal), or ``stopped`` (by the launcher). Timings are left out
    (``ProcessResult.seconds`` has them), so the text is the same on every run of a
    deterministic program.

    Args:
        results: what :func:`launch` returned (or ``LaunchError.results``).
        drop: lines starting with one of these prefixes are left out.

    Returns:
        The text, one block per process.

    Raises:
        TypeError: ``drop`` is not a tuple of strings.

    Example:
        >>> r = ProcessResult(0, 123, 0, "hello\\nDEBUG x\\n", "", 0.1)
        >>> print(format_outputs([r], drop=("DEBUG",)))
        ── process 0 (exit 0) ──
        hello
    """
    drop = strings(
        "format_outputs",
        "drop",
        drop,
        what="a tuple of line prefixes (str)",
        example="('DEBUG',)",
        kinds=tuple,
    )
    blocks = []
    for r in results:
        lines = [line for line in r.output.splitlines() if not line.startswith(drop)]
        if r.returncode is None:
            status = "stopped"
        elif r.returncode < 0:  # ended by a signal: name it
            try:
                status = f"killed by {signal.Signals(-r.returncode).name}"
            except ValueError:
                status = f"killed by signal {-r.returncode}"
        else:
            status = f"exit {r.returncode}"
        blocks.append(f"── process {r.process_id} ({status}) ──\n" + "\n".join(lines))
    return "\n".join(blocks)


def initialize_from_env() -> tuple[int, int]:
    """In a process started by :func:`launch`: simulate its CPU devices and join the
    others with ``jax.distributed.initialize``. Call it before any other JAX call.

    Returns:
        ``(process_id, num_processes)``.

    Raises:
        RuntimeError: the process was not started by :func:`launch` (its
            ``JAXGUIDE_*`` environment variables are missing).

    Example (a program :func:`launch` runs calls it first; anywhere else it refuses):
        >>> initialize_from_env()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        RuntimeError: initialize_from_env: [...] not set; start this program with jaxguide.distributed.launch.
    """
    import jax

    missing = [v for v in ENV.values() if v not in os.environ]
    if missing:
        raise RuntimeError(
            f"initialize_from_env: {missing} not set; start this program with jaxguide.distributed.launch."
        )
    jax.config.update("jax_num_cpu_devices", int(os.environ[ENV["local_devices"]]))
    process_id, n = int(os.environ[ENV["process_id"]]), int(os.environ[ENV["num_processes"]])
    jax.distributed.initialize(
        coordinator_address=os.environ[ENV["coordinator"]], num_processes=n, process_id=process_id
    )
    return process_id, n
