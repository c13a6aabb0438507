import jax
import jaxlib

from jaxguide import provenance


def test_provenance_describes_the_running_jax():
    import datetime
    import time

    from jaxguide import page

    before = time.perf_counter() - page._STARTED
    p = provenance()
    after = time.perf_counter() - page._STARTED
    assert before <= p.seconds <= after          # seconds since import jaxguide, now
    now = datetime.datetime.now(datetime.timezone.utc)
    assert p.executed_at in {
        (now - datetime.timedelta(minutes=m)).strftime("%Y-%m-%d %H:%M UTC") for m in (0, 1)
    }
    assert (p.jax_version, p.jaxlib_version) == (jax.__version__, jaxlib.__version__)
    assert p.backend == jax.default_backend() and p.device_count == jax.device_count()
    html = p._repr_html_()
    assert html.startswith('<div class="jaxguide-provenance">')
    assert f"JAX {jax.__version__}, jaxlib {jaxlib.__version__}" in html
