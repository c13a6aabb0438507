import logging

import jax
import jax.numpy as jnp
import pytest

from jaxguide.jaxlogs import capture_jax_logs, scrub


def test_scrub_removes_run_dependent_parts():
    msg = (
        "TRACING CACHE MISS at /tmp/ipykernel_123/456.py:3:4 (f):\n"
        "  never seen function:\n    f id=140 defined at x.py:1\n"
        "Finished tracing f for jit in 1.5e-05 sec"
    )
    out = scrub(msg)
    assert "<cell>:3:4" in out and "id=" not in out
    assert out.endswith("in <t> sec")
    assert scrub("nothing to change") == "nothing to change"


def test_capture_collects_jax_logs_and_nothing_reaches_stderr(capsys):
    x = jnp.ones(3)
    with jax.log_compiles(True), capture_jax_logs() as logs:
        jax.jit(lambda v: v + 1)(x)
    assert any(line.startswith("Compiling jit(<lambda>)") for line in logs)
    assert capsys.readouterr().err == ""
    log = logging.getLogger("jax")
    assert log.propagate  # restored
    n = len(logs)
    with jax.log_compiles(True):  # outside the block: not captured
        logging.getLogger("jax").propagate = False
        jax.jit(lambda v: v + 2)(x)
        logging.getLogger("jax").propagate = True
    assert len(logs) == n


def test_capture_restores_existing_handlers():
    log = logging.getLogger("jax.test_jaxlogs")
    seen = []

    class H(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    h = H()
    log.addHandler(h)
    try:
        with capture_jax_logs("jax.test_jaxlogs") as logs:
            log.warning("inside")
        log.warning("after")
    finally:
        log.removeHandler(h)
    assert logs == ["inside"] and seen == ["after"]


def test_capture_level_filters():
    with capture_jax_logs("jax.test_level", level=logging.ERROR) as logs:
        logging.getLogger("jax.test_level").warning("dropped")
        logging.getLogger("jax.test_level").error("kept")
    assert logs == ["kept"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"logger": 3}, r"capture_jax_logs\(logger=3\): logger must be a str"),
        (
            {"level": "WARNING"},
            r"capture_jax_logs\(level=...\): level must be an int logging level, got str",
        ),
        ({"level": True}, r"capture_jax_logs\(level=...\): level must be an int logging level"),
    ],
)
def test_capture_checks_arguments(kwargs, message):
    with pytest.raises(TypeError, match=message):
        with capture_jax_logs(**kwargs):
            pass


def test_scrub_checks_argument():
    with pytest.raises(TypeError, match=r"scrub\(message=...\): message must be a str, got int"):
        scrub(3)
