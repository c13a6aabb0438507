"""The multiprocess chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re
import signal

import numpy as np
import pytest

from bookcheck import ROOT, cell_output, errors, glued, load, output_text, page_text, source

pytestmark = pytest.mark.book

# What would tie an output to the machine that built it: absolute paths.
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:tmp|work|home|root|usr|var|opt)/")


def source_of_page(book) -> str:
    return (ROOT / "book" / "multiprocess.md").read_text()


def code_cells(book):
    nb = load(book.notebook("multiprocess"))
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


EXPECTED = np.arange(8.0).sum() + (np.arange(8.0) + 100).sum()  # both processes' rows


def lines(book, key: str) -> list[list[str]]:
    """What each launched process printed, line by line, as the build glued it."""
    return glued(book, "multiprocess")[key]


def test_multiprocess(book):
    g = glued(book, "multiprocess")
    world = g["world_lines"]
    assert len(world) == 2
    # Each process has its own local devices, and sees all 8.
    for p, devices in ((0, [0, 1, 2, 3]), (1, [2048, 2049, 2050, 2051])):
        assert world[p][:3] == [
            f"process {p} of 2",
            f"local devices:  {devices}",
            "global devices: [0, 1, 2, 3, 2048, 2049, 2050, 2051]",
        ]
        # Each device names its process; the local ones are this process's (#8010),
        # and Gloo carries the collectives between CPU processes (#11182).
        owners = [q for q in range(2) for _ in range(4)]
        assert world[p][3] == f"process_index:  {owners}"
        everyone = [0, 1, 2, 3, 2048, 2049, 2050, 2051]
        assert [d for d, q in zip(everyone, owners) if q == p] == devices
        assert world[p][4] == "CPU collectives: gloo"
    assert float(g["global_sum"]) == EXPECTED
    for out in world:
        assert f"shard_map psum: {EXPECTED}" in out and f"jit sum:        {EXPECTED}" in out
        assert "process_allgather: [[0, 0], [1, 10]]" in out
        # A process cannot read a global array's remote shards.
        assert any(
            line.startswith(
                "np.asarray(x): RuntimeError: Fetching value for `jax.Array` that spans "
                "non-addressable"
            )
            for line in out
        )
        # The compiled sum's collectives: one 4-byte all-reduce over 8 devices.
        (row,) = [line for line in out if line.startswith("all-reduce")]
        assert row.split() == ["all-reduce", "f32[]", "4", "B", "8"], row
    # The training run across processes (its match with one process, within the
    # tolerance, is the build's claim "mp_worst"): what each process printed.
    train = g["train_lines"]
    sizes = (2 * 64 + 64) + (64 * 64 + 64) + (64 * 3 + 3)  # the MLP (2, 64, 64, 3)
    assert g["grad_bytes"] == 4 * sizes and g["step_allreduce_bytes"] == 4 * sizes + 4
    for p in (0, 1):
        assert (
            f"process {p}: read x (64, 2), y (64,); global batch x (128, 2), y (128,)" in (train[p])
        )
        # Both processes compiled the same step program.
        assert (
            f"process {p}: step program: {{'all-reduce': 1}}, {4 * sizes + 4} bytes per "
            f"device; gradients: {4 * sizes} bytes"
        ) in train[p]
        assert [line.split(",")[0] for line in train[p][-4:]] == [
            f"process {p}: step {s}" for s in (5, 10, 15, 20)
        ]
    # The Gloo log census is gone (a native library's log lines teach nothing usable).
    assert "gloo_reports" not in g
    # The shell loop's four-process run (the exercise's): every process printed the
    # global sum.
    expected4 = sum((np.arange(8.0) + 100 * p).sum() for p in range(4))
    four = g["bash_lines"]
    assert len(four) == 4 and all(f"shard_map psum: {expected4}" in out for out in four)
    assert four[0][:6] == [
        "process 0 of 4",
        "local devices:  [0, 1]",
        "global devices: [0, 1, 2048, 2049, 4096, 4097, 6144, 6145]",
        f"process_index:  {[q for q in range(4) for _ in range(2)]}",
        "CPU collectives: gloo",
        "global shape: (16, 2) | shards held here, on devices [0, 1]",
    ]


def test_device_put_of_a_whole_array(book):
    """Every process passing the whole array to device_put gives the same shards as the
    per-process constructor; arrays that differ between processes are refused."""
    assert glued(book, "multiprocess")["same_shards"] == [True, True]
    # One array per local device, placed by addressable_devices_indices_map: the same.
    assert glued(book, "multiprocess")["single_shards"] == [True, True]
    for out in lines(book, "world_lines"):
        # Process 0's value reached every process.
        assert "broadcast_one_to_all: 1234" in out
        assert (
            "device_put, different arrays: AssertionError: <class 'numpy.ndarray'> passed to "
            "device_put is not the same on each process."
        ) in out


def test_initialize_after_the_backend_started_raises(book):
    [raised] = [
        e for e in errors(book, "multiprocess") if "jax.distributed.initialize(\n" in e.source
    ]
    assert raised.name == "RuntimeError", raised
    assert "must be called before any JAX calls" in raised.message
    assert "jax.devices" in raised.message  # what the prose says it names
    text = page_text(book, "multiprocess")
    assert "but also jax.devices()" in text.replace("`", "")


def test_reading_global_results(book):
    """Replicated results are readable; a sharded one is gathered with tiled=True (the
    untiled call refuses it) or read shard by shard."""
    read = lines(book, "read_lines")
    # Both processes' rows, gathered whole, in every process (computed independently).
    first_column = [float(v) for p in (0, 1) for v in np.arange(8.0)[::2] + 100 * p]
    # Fully replicated, fully addressable, as each process printed them: the sum is
    # replicated yet not fully addressable; z (split within each process, repeated
    # across them) is neither.
    flags = {"jnp.sum(x)": [True, False], "z": [False, False]}
    assert glued(book, "multiprocess")["read_flags"] == [flags, flags]
    for p, out in enumerate(read):
        [total] = [line for line in out if line.startswith("jnp.sum(x): ")]
        assert total.endswith(f"| float: {EXPECTED}")
        assert (
            "process_allgather(x): ValueError: Gathering global non-fully-addressable arrays "
            "only supports tiled=True"
        ) in out
        assert f"process_allgather(x, tiled=True): (8, 2) first column {first_column}" in out
        assert f"device_put(x, P()), then np.asarray: first column {first_column}" in out
        device, row = (0, [0.0, 1.0]) if p == 0 else (2048, [100.0, 101.0])
        assert (
            f"x.addressable_shards[0]: rows {4 * p}:{4 * p + 1} on device {device}, [{row}]"
        ) in out
        # An array split only within processes, repeated across them, is readable
        # although neither fully replicated nor fully addressable.
        [z] = [line for line in out if line.startswith("z: ")]
        assert z.endswith(f"| np.asarray(z): {np.arange(8.0).tolist()}")
        # The mesh's first axis crosses processes, its second stays inside one.
        assert "hybrid mesh ('dcn', 'ici'): [[0, 1, 2, 3], [2048, 2049, 2050, 2051]]" in out
        # Why process_is_granule: on CPU every device is in slice 0 (the prose says so).
        assert "slice_index of the devices: [0]" in out
    # An array on process 1's devices only: process 0 holds nothing of it or its sum.
    assert "w on process 1's devices: shards here 0 | sum: none here" in read[0]
    assert f"w on process 1's devices: shards here 4 | sum: {np.arange(4.0).sum()}" in read[1]
    # A jitted function cannot close over x (both processes say so).
    for out in lines(book, "world_lines"):
        assert any(
            line.startswith(
                "jit closing over x: RuntimeError: Closing over jax.Array that spans "
                "non-addressable (non process local) devices is not allowed"
            )
            for line in out
        )
    assert "neither fully replicated nor fully addressable" in page_text(book, "multiprocess")


def test_checkpoint_from_every_process(book):
    g = glued(book, "multiprocess")
    files = "['ocdbt.process_0', 'ocdbt.process_1']"
    saved = g["checkpoint_lines"]
    for p in (0, 1):
        assert f"process {p}: saved; per-process files: {files}" in saved[p]
    # Each process got back exactly the rows it supplied (arange(4) + 100 p).
    assert "process 0: restored its shards [[[0.0, 1.0]], [[2.0, 3.0]]]" in saved[0]
    assert "process 1: restored its shards [[[100.0, 101.0]], [[102.0, 103.0]]]" in saved[1]
    # The same checkpoint, restored whole in the notebook's one process and one device.
    here = g["restored_here"]
    assert here["saved"] == ((4, 2), "float32", [0, 1, 2048, 2049])
    assert here["devices"] == [0]
    np.testing.assert_array_equal(
        here["values"], np.concatenate([np.arange(4.0).reshape(2, 2) + 100 * p for p in (0, 1)])
    )


def test_hybrid_mesh_and_shell_launch(book):
    assert "printed `[0]`" in source_of_page(book)
    # The shell loop started four processes of two devices; each saw all 8.
    cell = next(c for c in code_cells(book) if source(c).startswith("%%bash"))
    assert "JAXGUIDE_PROCESS_ID=$ID" in source(cell)
    bash = lines(book, "bash_lines")
    assert len(bash) == 4
    for p, out in enumerate(bash):
        assert f"process {p} of 4" in out
        assert "global devices: [0, 1, 2048, 2049, 4096, 4097, 6144, 6145]" in out


def test_each_process_reads_only_its_rows(book):
    # The program really reads a memory map and indexes it with its own rows only,
    # and never builds the whole data set.
    train = next(c for c in code_cells(book) if source(c).startswith("%%writefile train.py"))
    program = source(train)
    assert 'np.load("spirals_x.npy", mmap_mode="r")' in program
    assert "x_file[mine]" in program and "data.spirals" not in program


def test_fate_sharing_through_heartbeats(book):
    """Process 1 was killed; process 0 was brought down by the coordination service
    (not by the launcher, which was told not to intervene), soon after."""
    g = glued(book, "multiprocess")
    assert g["crash_returncodes"] == [-signal.SIGABRT, -signal.SIGKILL]
    crash = g["hang_lines"]
    assert crash[0][-1] == "process 0: working for 60 s ..."
    assert crash[1][-1] == "process 1: killed (SIGKILL)"
    # Every time limit initialize takes, in signature order (the prose says "the first two").
    assert g["timeouts"] == {
        "initialization_timeout": 300,
        "heartbeat_timeout_seconds": 100,
        "shutdown_timeout_seconds": 300,
    }
    why, label, who = g["crash_stderr"]
    assert why.startswith("Terminating process because the JAX distributed service detected")
    assert label == "The following tasks are unhealthy (stopped sending heartbeats)" and who == "1"
    # At least a second (the 3 s heartbeat timeout).
    assert float(g["heartbeat_lag"]) >= 1
    # The false claims of old must not come back.


def test_failures_heartbeats_do_not_cover_and_no_machine_paths(book):
    g = glued(book, "multiprocess")
    # A peer that dies before joining: JAX itself ends the wait at initialization_timeout.
    assert g["early_returncodes"] == [-signal.SIGABRT, 1]
    assert g["early_lines"] == [
        ["process 0: waiting for process 1 to join ...", g["early_lines"][0][1]],
        ["process 1: loading shard 1 ..."],
    ]
    assert g["early_lines"][0][1].startswith("WAITING_SINCE ")
    ran, waited = g["early_split"]
    assert 1 < waited < min(ran, 60)  # past the 1 s limit, far from the 300 s default
    assert g["early_seconds"] == f"{ran:.1f} s" and g["early_waited"] == f"{waited:.1f} s"
    # The page shows the lines without the timing marker; process 0's join timed out.
    shown = cell_output(book, "multiprocess", 'drop=("WAITING_SINCE",)')
    assert "WAITING_SINCE" not in shown
    assert g["early_deadline"].startswith("DEADLINE_EXCEEDED")
    early = next(c for c in code_cells(book) if source(c).startswith("%%writefile fail_early.py"))
    assert "initialization_timeout=1" in source(early) and "import jax" in source(early)
    # A peer alive but skipping a collective: process 0 waits in the second sum until the
    # collective's own limit (2 s, set in XLA_FLAGS) raises; it catches it.
    hang = g["hang_lines"]
    assert g["hang_reduce_scatter"] == [True, True]
    assert hang[0][1] == "process 0: first sum together: 8.0"
    # The reduce-scatter process 1 joined 3 s late: process 0 waited for it, past the
    # 2 s limit, and it went through (jax-ml/jax#40831: the flag does not reach it).
    assert hang[0][2] == (
        f"process 0: psum_scatter, process 1 late: done after {g['scatter_waited']} s"
    )
    assert hang[0][3] == "process 0: summing again ..."
    assert hang[0][4].startswith(f"process 0: JaxRuntimeError after {g['hang_caught']} s:")
    assert "Timed out waiting 2000ms" in hang[0][4]
    # The next sum both joined failed in both: the Gloo links were closed for good
    # (the prose names both reasons).
    next0, next1 = glued(book, "multiprocess")["hang_next_failed"]
    assert next0.startswith("JaxRuntimeError") and "pair closure" in next0
    assert next1.startswith("JaxRuntimeError") and "closed by peer" in next1
    # Only that ordered group of devices is broken: the same 4 devices in another
    # order (another Gloo group) sum the ones of both processes, 2 x (2, 2), in both.
    reordered = float(np.ones((2 * 2, 2)).sum())
    assert float(g["hang_reordered"]) == reordered
    assert hang[0][5:] == [
        f"process 0: next sum together: {next0}",
        f"process 0: sum, devices reordered: {reordered}",
        "process 0: working for 60 s ...",
    ]
    assert hang[1][1] == "process 1: first sum together: 8.0"
    assert hang[1][2].startswith("process 1: psum_scatter, process 1 late: done after ")
    assert hang[1][3:] == [
        "process 1: busy elsewhere ...",
        f"process 1: next sum together: {next1}",
        f"process 1: sum, devices reordered: {reordered}",
        "process 1: killed (SIGKILL)",
    ]
    assert float(g["hang_caught"]) > 0
    # No output shows where the build ran: no absolute path, no runner frame.
    for cell in code_cells(book):
        for out in cell.get("outputs", []):
            shown = output_text(out)
            assert not MACHINE_PATH.search(shown), shown
            assert "_runner" not in shown and "runpy" not in shown, shown


def test_programs_are_written_to_a_fresh_folder_with_relative_names(book):
    """Hermetic: %%writefile prints the same 'Writing x.py' in every build, because each
    build writes into its own new temporary folder."""
    cells = code_cells(book)
    writes = [c for c in cells if source(c).startswith("%%writefile")]
    assert len(writes) >= 4
    for c in writes:
        name = source(c).splitlines()[0].split()[1]
        assert "/" not in name and "{" not in name, name
        assert "".join(output_text(o) for o in c["outputs"]).strip() == f"Writing {name}"
    setup = "\n".join(source(c) for c in cells)
    assert "tempfile.mkdtemp(" in setup and "os.chdir(" in setup
    assert "gettempdir()" not in setup and "rmtree" not in setup


def test_network_against_fast_links(book):
    """The DCN ratios come from the published figures: per chip, one way."""
    g = glued(book, "multiprocess")
    v5e = (4.5e10 * 4) / (2.5e10 / 8)  # 4 ICI links; a host's network over its 8 chips
    h100 = (2.5e10 * 18) / 5e10  # 18 NVLink links; one 400 Gb/s card per GPU
    assert float(g["dcn_v5e"]) == round(v5e)
    assert float(g["dcn_h100"]) == round(h100)


def test_other_launchers_in_one_paragraph(book):
    # The Ray section is a paragraph now: no launch of its own, and the history it
    # cites and the packaged launcher are linked.
    assert "launcher_results" not in glued(book, "multiprocess")
    assert not any("concurrent.futures" in source(c) for c in code_cells(book))
    page = source_of_page(book)
    assert "mesh-transformer-jax/issues/187" in page and "JaxTrainer" in page


#: Sentences taken out of this chapter's prose, and why: they must not come back
#: (tests/test_chapters.py looks for each in the page's prose, not its outputs).
RETIRED = {
    "wait forever in": "cut in 0ae1f01: multiprocess: fresh mkdtemp folder and relative names; each...",
    "others wait forever": "cut in 0ae1f01: multiprocess: fresh mkdtemp folder and relative names; each...",
    "cannot communicate": "a sentence a review found wrong or unbacked",
    "is already in use": "the book's own launcher error is gone",
}
