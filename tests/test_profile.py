"""jaxguide.profile: reading a jax.profiler trace, checked on planted traces against a
plain reference, and on a real trace captured here."""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from jaxguide.profile import (
    Event,
    autodiff_phase,
    entry_instructions,
    find_trace,
    read_events,
    scopes,
    time_by,
)


def _write(path: Path, events: list[dict], *, compress: bool = True) -> Path:
    data = json.dumps({"displayTimeUnit": "ns", "traceEvents": events}).encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def _random_events(rng: random.Random, n: int) -> list[dict]:
    events = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "cpu"}}]
    for i in range(n):
        e = {
            "ph": "X",
            "pid": 1,
            "tid": rng.choice([3, 4]),
            "ts": rng.uniform(0, 1000),
            "dur": rng.uniform(0, 50),
            "name": rng.choice(["dot", "fusion", "copy"]),
        }
        if rng.random() < 0.7:
            e["args"] = {"hlo_op": f"{e['name']}.{i}", "hlo_module": rng.choice(["jit_a", "jit_b"])}
            if rng.random() < 0.5:  # as XLA:CPU writes it: a string
                e["args"]["device_ordinal"] = str(rng.randint(0, 7))
        events.append(e)
    events.append({"ph": "i", "pid": 1, "tid": 3, "ts": 5.0, "name": "instant"})
    return events


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("compress", [True, False])
def test_read_events_and_time_by_match_a_plain_reference(tmp_path, seed, compress):
    rng = random.Random(seed)
    raw = _random_events(rng, rng.randint(5, 60))
    events = read_events(_write(tmp_path / "t.trace.json.gz", raw, compress=compress))
    complete = [e for e in raw if e["ph"] == "X"]
    assert len(events) == len(complete)
    assert [e.start_us for e in events] == sorted(e["ts"] for e in complete)
    assert all(isinstance(e, Event) for e in events)
    # Reference: durations summed per (module, name), by hand.
    ref: dict[str, float] = {}
    for e in complete:
        if "args" in e:
            key = f"{e['args']['hlo_module']}:{e['name']}"
            ref[key] = ref.get(key, 0.0) + e["dur"]
    got = time_by([e for e in events if e.hlo_op], lambda e: f"{e.hlo_module}:{e.name}")
    assert got.keys() == ref.keys()
    assert all(abs(got[k] - ref[k]) < 1e-9 for k in ref)
    assert list(got.values()) == sorted(got.values(), reverse=True)
    ev = events[0]
    assert ev.end_us == pytest.approx(ev.start_us + ev.duration_us)
    # The device of each event, by hand: its device_ordinal as an int, else None.
    by_start = sorted(complete, key=lambda e: e["ts"])
    want = [int(e.get("args", {}).get("device_ordinal", -1)) for e in by_start]
    assert [-1 if e.device is None else e.device for e in events] == want


def test_scopes_strip_the_jit_prefix_and_skip_lines_without_metadata():
    hlo = "\n".join(
        [
            "ENTRY %main (p: f32[2]) -> f32[2] {",
            '  %dot.1 = f32[2]{0} dot(%a, %b), metadata={op_name="jit(step)/jvp(layer0)/dot_general"}',
            '  ROOT %tanh.2 = f32[2]{0} tanh(%dot.1), metadata={op_name="jit(step)/sgd/tanh" x=1}',
            "  %copy.3 = f32[2]{0} copy(%tanh.2)",
            "}",
        ]
    )
    assert scopes(hlo) == {"dot.1": "jvp(layer0)/dot_general", "tanh.2": "sgd/tanh"}


def test_real_trace_ops_map_to_named_scopes(tmp_path):
    @jax.jit
    def f(x):
        with jax.named_scope("inner"):
            return jnp.tanh(x @ x)

    x = jnp.ones((64, 64))
    f(x).block_until_ready()
    with jax.profiler.trace(tmp_path):
        f(x).block_until_ready()
    ops = [e for e in read_events(find_trace(tmp_path)) if e.hlo_module == "jit_f"]
    assert ops, "the trace holds the program's operations"
    names = scopes(f.lower(x).compile().as_text())
    assert all(e.hlo_op in names for e in ops)
    assert {e.device for e in ops} == {x.devices().pop().id}
    assert any(names[e.hlo_op].startswith("inner/") for e in ops)


def test_find_trace_picks_the_newest(tmp_path):
    run = tmp_path / "plugins" / "profile"
    old = _write((run / "a").mkdir(parents=True) or run / "a" / "h.trace.json.gz", [])
    new = _write((run / "b").mkdir() or run / "b" / "h.trace.json.gz", [])
    now = time.time()
    os.utime(old, (now, now))
    os.utime(new, (now + 10, now + 10))
    assert find_trace(tmp_path) == new
    assert find_trace(str(tmp_path)) == new


def test_bad_arguments_are_explained(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"find_trace\(folder=.*no such folder"):
        find_trace(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="capture one with"):
        find_trace(tmp_path)
    with pytest.raises(TypeError, match=r"find_trace\(folder=3\): folder must be a path"):
        find_trace(3)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match=r"read_events\(path=.*no such file"):
        read_events(tmp_path / "none.json.gz")
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    with pytest.raises(ValueError, match=r"read_events\(path=.*not JSON"):
        read_events(bad)
    bad.write_text(json.dumps({"events": []}))
    with pytest.raises(ValueError, match="no 'traceEvents' list"):
        read_events(bad)
    with pytest.raises(TypeError, match=r"scopes\(hlo=.*hlo must be a str"):
        scopes(b"hlo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="hlo must not be empty"):
        scopes("")
    with pytest.raises(TypeError, match=r"time_by\(key=...\): key must be a function"):
        time_by([], "name")  # type: ignore[arg-type]


def _make_buffer_for_profile(shape):
    return jnp.full(shape, 3.0, jnp.float32)


def test_memory_profile_reads_a_known_buffer(tmp_path):
    # 3 * 2**18 bytes: a size no other live array of the test session is likely to have.
    kept = _make_buffer_for_profile((3, 65536))
    path = tmp_path / "memory.prof"
    jax.profiler.save_device_memory_profile(path)
    from jaxguide.profile import read_memory_profile

    found = read_memory_profile(path)
    assert [a.bytes for a in found] == sorted((a.bytes for a in found), reverse=True)
    mine = [a for a in found if any(f == "_make_buffer_for_profile" for f, _ in a.stack)]
    buffers = [a for a in mine if a.kind == "buffer"]
    assert buffers and buffers[0].bytes == kept.nbytes == 3 * 65536 * 4
    assert buffers[0].count == 1 and buffers[0].device.startswith("cpu")
    # Innermost frame first: this test's own frame lies outside the helper's.
    funcs = [f for f, _ in buffers[0].stack]
    assert funcs.index("_make_buffer_for_profile") < funcs.index(
        "test_memory_profile_reads_a_known_buffer"
    )
    del kept


def test_lowered_dots_match_the_jaxpr_and_see_converts():
    from collections import Counter

    from jaxguide.profile import lowered_dots

    def f(a, b):  # one bf16 x bf16 dot; the f32 x bf16 dot is lowered with a convert
        h = jnp.matmul(a.astype(jnp.bfloat16), b, preferred_element_type=jnp.float32)
        return h @ b.T.astype(jnp.float32), h @ b

    a = jnp.ones((4, 8))
    b = jnp.ones((8, 8), jnp.bfloat16)
    jaxpr = jax.make_jaxpr(f)(a, b).jaxpr
    traced = [e for e in jaxpr.eqns if e.primitive.name == "dot_general"]
    dots, converts = lowered_dots(jax.jit(f).lower(a, b).as_text())
    assert len(dots) == len(traced) == 3
    assert Counter(d.operands for d in dots) == {("bf16", "bf16"): 1, ("f32", "f32"): 2}
    assert all(d.result == "f32" and d.precision == "DEFAULT" for d in dots)
    # The bf16 operand of `h @ b` is widened by a convert JAX inserts when lowering.
    assert sum(d.converted_from.count("bf16") for d in dots) >= 1
    assert converts.get(("bf16", "f32"), 0) >= 1 and converts.get(("f32", "bf16"), 0) == 1
    with pytest.raises(ValueError, match="holds no StableHLO"):
        lowered_dots("%dot.1 = f32[2] dot(%a, %b)")
    with pytest.raises(TypeError, match="stablehlo must be a str"):
        lowered_dots(None)  # type: ignore[arg-type]


def test_saved_residuals_read_jaxs_list():
    import contextlib
    import io

    from jax.ad_checkpoint import print_saved_residuals

    from jaxguide.profile import saved_residuals

    def loss(w, x):
        return jnp.tanh(x.astype(jnp.bfloat16) @ w.astype(jnp.bfloat16)).sum()

    w, x = jnp.ones((8, 4)), jnp.ones((3, 8))
    kept = saved_residuals(loss, w, x)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_saved_residuals(loss, w, x)
    assert len(kept) == len(out.getvalue().splitlines())
    by_shape = {(r.dtype, r.shape): r for r in kept}
    # The bf16 copies of both arguments, each 2 bytes a number, counted by hand.
    assert by_shape["bf16", (3, 8)].nbytes == 3 * 8 * 2
    assert by_shape["bf16", (8, 4)].nbytes == 8 * 4 * 2
    assert not any(r.is_argument for r in kept)
    with pytest.raises(TypeError, match="fun must be a function"):
        saved_residuals("loss", w, x)  # type: ignore[arg-type]


def test_saved_residuals_refuses_a_line_in_a_format_it_does_not_know(monkeypatch):
    """A changed format of JAX's list is an error naming the line, not fewer residuals."""
    import jax.ad_checkpoint

    from jaxguide.profile import saved_residuals

    def printed(fun, *args):
        print("f32[3] output of sin from <stdin>:1 (f)")
        print("residual #2: f32[3]")

    monkeypatch.setattr(jax.ad_checkpoint, "print_saved_residuals", printed)
    with pytest.raises(RuntimeError, match="'residual #2: f32\\[3\\]'.*format changed"):
        saved_residuals(lambda x: x.sum(), jnp.ones(3))


def test_step_gaps_on_planted_steps():
    from jaxguide.profile import step_gaps

    rng = random.Random(1)
    events, busy, t = [], [], 0.0
    for k in range(4):
        host = t
        events.append(Event("train", host, 1.0, 1))
        start = host + (0.5 if k else 2.0)  # the host began steps 1-3 before the last ended
        ops = [(start + i, rng.uniform(0.5, 2.0)) for i in range(3)]
        events += [Event("op", s, d, 2, f"op.{i}", "jit_step") for i, (s, d) in enumerate(ops)]
        busy.append((start, max(s + d for s, d in ops)))
        t = busy[-1][1] - 0.2 if k % 2 else busy[-1][1] + 3.0
    events.append(Event("other", 0.0, 50.0, 3, "x.1", "jit_other"))
    g = step_gaps(reversed(events), module="jit_step", mark="train")
    assert g.busy == busy
    assert g.idle_us == pytest.approx(sum(b[0] - a[1] for a, b in zip(busy, busy[1:])))
    assert g.span_us == pytest.approx(busy[-1][1] - busy[0][0])
    assert g.ahead == 1  # only step 2's mark started before step 1 had ended
    assert g.busy_per_step_us == pytest.approx(sum(b - a for a, b in busy) / 4)
    with pytest.raises(ValueError, match="found 0 'step' marks"):
        step_gaps(events, module="jit_step", mark="step")
    with pytest.raises(ValueError, match="do not split evenly"):
        step_gaps(events[:-2], module="jit_step", mark="train")
    with pytest.raises(TypeError, match="module must be a str"):
        step_gaps(events, module=3, mark="train")  # type: ignore[arg-type]


def test_schedule_order_of_a_real_program():
    from jaxguide.profile import schedule_order

    hlo = jax.jit(lambda a, b: jnp.tanh(a @ b) @ b).lower(jnp.ones((8, 8)), jnp.ones((8, 8)))
    order = schedule_order(hlo.compile().as_text())
    assert [kind for kind, _ in order] == ["matmul", "matmul"]
    planted = (
        "HloModule m, is_scheduled=true\n\n%f { %d = f32[2] dot(f32[2] %a, f32[2] %b) }\n\n"
        "ENTRY %main {\n"
        "  %ags = (f32[2], f32[8]) all-gather-start(f32[2] %p)\n"
        "  %dot.3 = f32[2] dot(f32[2] %p, f32[2] %q)\n"
        "  %agd = f32[8] all-gather-done((f32[2], f32[8]) %ags)\n"
        "  ROOT %cp = f32[8] collective-permute(f32[8] %agd)\n}\n"
    )
    assert schedule_order(planted) == [
        ("all-gather-start", "ags"),
        ("matmul", "dot.3"),
        ("all-gather-done", "agd"),
        ("collective-permute", "cp"),
    ]
    with pytest.raises(ValueError, match="no ENTRY computation"):
        schedule_order("%d = f32[2] dot(f32[2] %a, f32[2] %b)")


def test_autodiff_phase_reads_forward_and_backward():
    assert autodiff_phase("jvp(layer1)/dot_general") == "layer1 forward"
    assert autodiff_phase("transpose(jvp(layer2))/dot_general") == "layer2 backward"
    # a fusion lists several op_names: the first decides
    assert autodiff_phase("transpose(jvp(l3))/mul;jvp(l3)/tanh") == "l3 backward"
    assert autodiff_phase("sgd/sub") == "sgd" and autodiff_phase("") == ""
    with pytest.raises(TypeError, match="op_name"):
        autodiff_phase(None)


def test_entry_instructions_of_a_real_gradient():
    """The entry computation's instructions, with opcodes and shapes; the weight
    gradient contracts the batch and is timed as a scope's backward pass."""

    def loss(w, x):
        with jax.named_scope("dense"):
            return jnp.tanh(x @ w).sum()

    w, x = jnp.ones((8, 4)), jnp.ones((16, 8))
    text = jax.jit(jax.grad(loss)).lower(w, x).compile().as_text()
    found = entry_instructions(text)
    names = scopes(text)
    # the parameters first, in program order; the root last, with the gradient's shape
    assert [op for op, _, _ in found.values()][:2] == ["parameter", "parameter"]
    assert list(found.values())[-1][1] == "f32[8,4]"
    assert all("{" not in shape for _, shape, _ in found.values())
    dw = [n for n, (_, _, attrs) in found.items() if "lhs_contracting_dims={0}" in attrs]
    assert dw and autodiff_phase(names[dw[0]]) == "dense backward"
    # fusion bodies are not entry instructions
    assert set(found) <= set(re.findall(r"^\s*(?:ROOT )?%([\w.\-]+) =", text, re.M))
    assert len(found) < len(re.findall(r"^\s*(?:ROOT )?%[\w.\-]+ =", text, re.M))
    with pytest.raises(ValueError, match="ENTRY"):
        entry_instructions("%a = f32[] parameter(0)")
