import jax
import jaxlib

from jaxguide import provenance


def test_provenance_describes_the_running_jax():
    p = provenance()
    assert (p.jax_version, p.jaxlib_version) == (jax.__version__, jaxlib.__version__)
    assert p.backend == jax.default_backend() and p.device_count == jax.device_count()
    assert p.seconds > 0 and p.executed_at.endswith("UTC")
    html = p._repr_html_()
    assert html.startswith('<div class="jaxguide-provenance">')
    assert f"JAX {jax.__version__}, jaxlib {jaxlib.__version__}" in html
