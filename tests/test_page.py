import jax
import jaxlib
import pytest

from jaxguide import provenance


def test_provenance_describes_the_running_jax():
    import datetime
    import time

    from jaxguide import page

    before = time.perf_counter() - page._STARTED
    p = provenance()
    after = time.perf_counter() - page._STARTED
    assert before <= p.seconds <= after  # seconds since import jaxguide, now
    now = datetime.datetime.now(datetime.UTC)
    assert p.executed_at in {
        (now - datetime.timedelta(minutes=m)).strftime("%Y-%m-%d %H:%M UTC") for m in (0, 1)
    }
    assert (p.jax_version, p.jaxlib_version) == (jax.__version__, jaxlib.__version__)
    assert p.backend == jax.default_backend() and p.device_count == jax.device_count()
    html = p._repr_html_()
    assert html.startswith('<div class="jaxguide-provenance">')
    assert f"JAX {jax.__version__}, jaxlib {jaxlib.__version__}" in html


def test_glue_checks_its_arguments():
    from jaxguide import glue

    with pytest.raises(ValueError, match=r"glue\(key=''\): key must not be empty"):
        glue("", 1)
    with pytest.raises(TypeError, match=r"glue\(key=3\): key must be a str"):
        glue(3, 1)
    with pytest.raises(TypeError, match=r"glue\(display=1\): display must be True or False"):
        glue("k", 1, display=1)


def test_glue_outside_a_book_build_prints_only_when_asked(monkeypatch, capsys):
    import builtins

    from jaxguide import glue

    real_import = builtins.__import__

    def no_myst_nb(name, *args, **kwargs):
        if name == "myst_nb":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_myst_nb)
    glue("speed", "4.2× faster")
    assert capsys.readouterr().out == ""
    glue("speed", "4.2× faster", display=True)
    assert capsys.readouterr().out == "speed = 4.2× faster\n"
