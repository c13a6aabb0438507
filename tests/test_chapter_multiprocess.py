"""The multiprocess chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bookcheck import ROOT, cell_output, glued, load, output_text, page_text, source, tags

pytestmark = pytest.mark.book

# What would tie an output to the machine that built it: absolute paths.
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:tmp|work|home|root|usr|var|opt)/")


def source_of_page(book) -> str:
    return (ROOT / "book" / "multiprocess.md").read_text()


def code_cells(book):
    nb = load(book.notebook("multiprocess"))
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def test_multiprocess(book):
    text = page_text(book, "multiprocess")
    g = glued(book, "multiprocess")
    # Both processes' outputs are on the page, each with its own local devices.
    for p, devices in ((0, "[0, 1, 2, 3]"), (1, "[2048, 2049, 2050, 2051]")):
        assert f"── process {p} (exit 0) ── process {p} of 2 local devices: {devices}" in text
    expected = np.arange(8.0).sum() + (np.arange(8.0) + 100).sum()
    assert float(g["global_sum"]) == expected
    assert (
        text.count(f"shard_map psum: {expected}") >= 2 and text.count(f"jit sum: {expected}") >= 2
    )
    assert text.count("process_allgather: [[0, 0], [1, 10]]") >= 2
    # A process cannot read a global array's remote shards: the error is printed by both.
    assert (
        text.count(
            "np.asarray(x): RuntimeError: Fetching value for `jax.Array` that spans non-addressable"
        )
        >= 2
    )
    # The training run across processes matched the single-process one, asserted on the page.
    assert re.search(
        r"two processes x 4 devices vs one process: largest loss difference over 100 steps (\S+) \(tolerance 1e-05\)",
        text,
    )
    assert float(g["mp_worst"]) <= 1e-5
    for p in (0, 1):
        assert f"process {p}: step 100, loss" in text
    # The Gloo log census is gone (a native library's log lines teach nothing usable).
    assert "gloo_reports" not in g and "Gloo connection reports" not in text
    # The compiled sum's collectives, from both processes: one 4-byte all-reduce over 8 devices.
    assert (
        len(
            re.findall(
                r"collective operands \(per device\) bytes group all-reduce f32\[\] 4 B 8 ", text
            )
        )
        >= 2
    )
    # The compiled training step: one all-reduce of the gradients plus the loss.
    sizes = (2 * 64 + 64) + (64 * 64 + 64) + (64 * 3 + 3)  # the MLP (2, 64, 64, 3)
    assert g["grad_bytes"] == 4 * sizes and g["step_allreduce_bytes"] == 4 * sizes + 4
    # Process 1 printed the same step program (only process 0's is glued).
    assert text.count(f"step program: {{'all-reduce': 1}}, {4 * sizes + 4} bytes per device") == 2
    # The exercise's four-process run, and process 0's first lines only.
    assert "all 4 processes: global sum 4912.0" in text
    assert (
        "process 0's first lines: process 0 of 4 local devices: [0, 1] global devices: "
        "[0, 1, 2048, 2049, 4096, 4097, 6144, 6145] global shape: (16, 2)" in text
    )


def test_device_put_of_a_whole_array(book):
    """Every process passing the whole array to device_put gives the same shards as the
    per-process constructor; arrays that differ between processes are refused."""
    text = page_text(book, "multiprocess")
    assert text.count("device_put(everything, rows): the same shards here True") == 2
    refusal = (
        "device_put, different arrays: AssertionError: <class 'numpy.ndarray'> passed to "
        "device_put is not the same on each process."
    )
    assert text.count(refusal) == 2


def test_initialize_after_the_backend_started_raises(book):
    cells = code_cells(book)
    cell = next(
        c
        for c in cells
        if "jax.distributed.initialize(\n" in source(c) and "raises-exception" in tags(c)
    )
    errors = [o for o in cell["outputs"] if o["output_type"] == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "RuntimeError", errors
    assert "must be called before any JAX calls" in errors[0]["evalue"]
    assert "jax.devices" in errors[0]["evalue"]  # what the prose says it names
    text = page_text(book, "multiprocess")
    assert "but also jax.devices()" in text.replace("`", "")


def test_reading_global_results(book):
    """Replicated results are readable; a sharded one is gathered with tiled=True (the
    untiled call refuses it) or read shard by shard."""
    text = page_text(book, "multiprocess")
    expected = np.arange(8.0).sum() + (np.arange(8.0) + 100).sum()
    assert (
        text.count(
            f"jnp.sum(x): fully replicated True | fully addressable False | float: {expected}"
        )
        == 2
    )
    refusal = (
        "process_allgather(x): ValueError: Gathering global non-fully-addressable arrays "
        "only supports tiled=True"
    )
    assert text.count(refusal) >= 2
    # Both processes' rows, gathered whole, in every process (computed independently).
    first_column = [float(v) for p in (0, 1) for v in np.arange(8.0)[::2] + 100 * p]
    assert text.count(f"process_allgather(x, tiled=True): (8, 2) first column {first_column}") >= 2
    assert "x.addressable_shards[0]: rows 0:1 on device 0, [[0.0, 1.0]]" in text
    assert text.count(f"device_put(x, P()), then np.asarray: first column {first_column}") >= 2
    assert "x.addressable_shards[0]: rows 4:5 on device 2048, [[100.0, 101.0]]" in text
    # A jitted function cannot close over x (both processes say so)...
    assert (
        text.count(
            "jit closing over x: RuntimeError: Closing over jax.Array that spans "
            "non-addressable (non process local) devices is not allowed"
        )
        >= 2
    )
    # ...but an array split only within processes, repeated across them, is readable
    # although neither fully replicated nor fully addressable (the prose says so).
    z_line = (
        "z: fully replicated False | fully addressable False "
        f"| np.asarray(z): {np.arange(8.0).tolist()}"
    )
    assert text.count(z_line) >= 2, "the z line is missing"
    assert "neither fully replicated nor fully addressable" in text
    # An array on process 1's devices only: process 0 holds nothing of it or its sum.
    assert "w on process 1's devices: shards here 0 | sum: none here" in text
    assert f"w on process 1's devices: shards here 4 | sum: {np.arange(4.0).sum()}" in text


def test_checkpoint_from_every_process(book):
    text = page_text(book, "multiprocess")
    files = "['ocdbt.process_0', 'ocdbt.process_1']"
    for p in (0, 1):
        assert f"process {p}: saved; per-process files: {files}" in text
    # Each process got back exactly the rows it supplied (arange(4) + 100 p).
    assert "process 0: restored its shards [[[0.0, 1.0]], [[2.0, 3.0]]]" in text
    assert "process 1: restored its shards [[[100.0, 101.0]], [[102.0, 103.0]]]" in text
    # The same checkpoint, restored whole in the notebook's one process and one device.
    restored = cell_output(book, "multiprocess", "checkpointer.metadata(path)")
    assert "saved: (4, 2) float32 from devices [0, 1, 2048, 2049]" in restored
    assert "restored onto device [0]" in restored
    rows = [[float(v) for v in line.strip(" []").split()] for line in restored.splitlines()[-4:]]
    np.testing.assert_array_equal(
        rows, np.concatenate([np.arange(4.0).reshape(2, 2) + 100 * p for p in (0, 1)])
    )


def test_hybrid_mesh_and_shell_launch(book):
    text = page_text(book, "multiprocess")
    # The mesh's first axis crosses processes, its second stays inside one.
    assert text.count("hybrid mesh ('dcn', 'ici'): [[0, 1, 2, 3], [2048, 2049, 2050, 2051]]") == 2
    # Why process_is_granule: on CPU every device is in slice 0 (the prose says so).
    assert text.count("slice_index of the devices: [0]") == 2
    assert "printed `[0]`" in source_of_page(book)
    # The shell loop started both processes; each printed the global sum.
    cell = next(c for c in code_cells(book) if source(c).startswith("%%bash"))
    shown = "".join(output_text(o) for o in cell["outputs"])
    expected = np.arange(8.0).sum() + (np.arange(8.0) + 100).sum()
    assert shown.count(f"jit sum:        {expected}") == 2, shown
    assert "JAXGUIDE_PROCESS_ID=$ID" in source(cell)


def test_each_process_reads_only_its_rows(book):
    text = page_text(book, "multiprocess")
    for p in (0, 1):
        assert f"process {p}: read x (64, 2), y (64,); global batch x (128, 2), y (128,)" in text
    # The program really reads a memory map and indexes it with its own rows only,
    # and never builds the whole data set.
    train = next(c for c in code_cells(book) if source(c).startswith("%%writefile train.py"))
    program = source(train)
    assert 'np.load("spirals_x.npy", mmap_mode="r")' in program
    assert "x_file[mine]" in program and "data.spirals" not in program


def test_fate_sharing_through_heartbeats(book):
    """Process 1 was killed; process 0 was brought down by the coordination service
    (not by the launcher, which was told not to intervene), soon after."""
    text = page_text(book, "multiprocess")
    assert (
        "── process 0 (killed by SIGABRT) ── process 0: joined a system of 4 devices process 0: working for 60 s ..."
        in text
    )
    assert "── process 1 (killed by SIGKILL) ──" in text
    assert "process 0: finished" not in text
    # Every time limit initialize takes, in signature order (the prose says "the first two").
    assert (
        "initialization_timeout 300 s by default heartbeat_timeout_seconds 100 s by default "
        "shutdown_timeout_seconds 300 s by default" in text
    )
    assert "Terminating process because the JAX distributed service detected fatal errors" in text
    assert "The following tasks are unhealthy (stopped sending heartbeats): 1" in text
    printed = re.search(
        r"process 0 ended (\d+\.\d) s after process 1 \(heartbeat timeout: 5 s\)", text
    )
    assert printed, "the measured lag is not on the page"
    seconds = float(printed[1])
    assert 2 <= seconds < 60, seconds  # about the heartbeat timeout, far from forever
    glued_lag = glued(book, "multiprocess")["heartbeat_lag"]
    assert abs(float(glued_lag) - seconds) <= 0.55, glued_lag
    # The false claim of old must not come back.
    assert "wait forever in" not in text and "others wait forever" not in text


def test_failures_heartbeats_do_not_cover_and_no_machine_paths(book):
    text = page_text(book, "multiprocess")
    # A peer that dies before joining: JAX itself ends the wait at initialization_timeout.
    assert (
        "── process 0 (killed by SIGABRT) ── process 0: waiting for process 1 to join ..."
        " ── process 1 (exit 1) ── process 1: loading shard 1 ..." in text
    )
    assert "process 0's stderr: DEADLINE_EXCEEDED" in text
    ran = re.search(r"process 0 ran (\d+\.\d) s in all", text)
    assert ran and 3 <= float(ran[1]) < 60, ran  # the 3 s limit, not the 300 s default
    glued_early = glued(book, "multiprocess")["early_seconds"]
    assert abs(float(glued_early.split()[0]) - float(ran[1])) <= 0.55, glued_early
    # The split the prose states: most of the run inside initialize, past its 3 s limit
    split = re.search(
        r"in all: (\d+\.\d) s starting Python and JAX, then (\d+\.\d) s in initialize", text
    )
    assert split, "the split of process 0's time is not on the page"
    startup, waited = float(split[1]), float(split[2])
    assert waited >= 3 and waited > startup and abs(startup + waited - float(ran[1])) <= 0.15
    glued_waited = glued(book, "multiprocess")["early_waited"]
    assert abs(float(glued_waited.split()[0]) - waited) <= 0.55, glued_waited
    shown = cell_output(book, "multiprocess", 'drop=("WAITING_SINCE",)')
    assert "WAITING_SINCE" not in shown and "waiting for process 1 to join" in shown
    early = next(c for c in code_cells(book) if source(c).startswith("%%writefile fail_early.py"))
    assert "initialization_timeout=3" in source(early) and "import jax" in source(early)
    # A peer alive but skipping a collective: only the launcher's deadline ends it.
    assert "timed out after 8 s; process(es) [0, 1] of 2 were still running" in text
    # ...after both ran one sum together (the group was connected): process 0 waits in
    # the second sum, process 1 is elsewhere, and both were stopped by the launcher.
    assert (
        "── process 0 (stopped) ── process 0: first sum together: 8.0 process 0: summing again ..."
        " ── process 1 (stopped) ── process 1: first sum together: 8.0"
        " process 1: busy elsewhere ..." in text
    )
    assert "is already in use" not in text  # the book's own launcher error is gone
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
