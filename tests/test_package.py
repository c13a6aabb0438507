"""The package itself: submodules load on attribute access, import stays light,
the version comes from the installed metadata, and the package is marked typed."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

import jaxguide

SUBMODULES = sorted(
    p.stem for p in Path(jaxguide.__file__).parent.glob("*.py") if not p.stem.startswith("_")
)


def test_every_public_submodule_is_listed_for_lazy_access():
    assert sorted(jaxguide._SUBMODULES) == SUBMODULES


def test_package_docstring_names_every_submodule():
    import re

    named = set(re.findall(r":mod:`jaxguide\.(\w+)`", jaxguide.__doc__ or ""))
    assert named == set(SUBMODULES), (
        f"missing {set(SUBMODULES) - named}, extra {named - set(SUBMODULES)}"
    )


def test_submodules_load_on_attribute_access_without_starting_jax():
    code = (
        "import sys, jaxguide\n"
        "assert 'jax' not in sys.modules, 'import jaxguide started JAX'\n"
        "assert 'jaxguide.sharding' not in sys.modules\n"
        "from jax.sharding import PartitionSpec as P\n"
        "print(jaxguide.sharding.notation(P('x', None)))\n"
        "assert jaxguide.sharding is sys.modules['jaxguide.sharding']\n"
        "assert 'sharding' in dir(jaxguide)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "A[I_x, J]"


@pytest.mark.parametrize("name", SUBMODULES)
def test_each_submodule_is_an_attribute(name):
    assert getattr(jaxguide, name).__name__ == f"jaxguide.{name}"


def test_unknown_attributes_still_raise_attribute_error():
    with pytest.raises(AttributeError, match="module 'jaxguide' has no attribute 'shardng'"):
        jaxguide.shardng  # noqa: B018


def test_version_comes_from_installed_metadata():
    assert jaxguide.__version__ == importlib.metadata.version("jaxguide")


def test_package_ships_py_typed():
    assert (Path(jaxguide.__file__).parent / "py.typed").is_file()


def _public_functions():
    import importlib
    import inspect

    for module in jaxguide._SUBMODULES:
        mod = importlib.import_module(f"jaxguide.{module}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                yield f"{module}.{name}", obj


PUBLIC = dict(_public_functions())


def test_there_are_public_functions_to_check():
    assert {"models.mlp", "train.fit", "page.glue", "checkpoints.save_checkpoint"} <= PUBLIC.keys()


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_functions_are_typed_and_documented(name):
    import inspect

    fn = PUBLIC[name]
    sig = inspect.signature(fn)
    untyped = [p.name for p in sig.parameters.values() if p.annotation is inspect.Parameter.empty]
    assert not untyped, f"{name}: parameters without a type: {untyped}"
    assert sig.return_annotation is not inspect.Signature.empty, f"{name}: no return type"
    doc = inspect.getdoc(fn) or ""
    needed = ["Returns:"] + (["Args:"] if sig.parameters else [])
    assert all(k in doc for k in needed), f"{name}: docstring lacks {needed}"
    # A runnable example of its own (README: every function has one), not only its module's.
    assert ">>>" in doc, f"{name}: no example of its own in its docstring"


def test_a_wrong_type_is_reported_in_one_form():
    from jaxguide import _checks

    err = _checks.wrong_type("f", "x", [1], "an array", "pass jnp.asarray(x)")
    assert isinstance(err, TypeError)
    assert str(err) == "f(x=...): x must be an array, got list; pass jnp.asarray(x)."
    assert (
        str(_checks.wrong_type("f", "x", None, "a str"))
        == "f(x=...): x must be a str, got NoneType."
    )
    assert _checks.instance("f", "x", "a", str, what="a str") == "a"
    with pytest.raises(TypeError, match=r"^f\(x=\.\.\.\): x must be a dict, got int\.$"):
        _checks.instance("f", "x", 1, dict, what="a dict")
    # The package's own checks use it: the messages name the function and the argument.
    import jaxguide.jaxlogs

    with pytest.raises(
        TypeError, match=r"^scrub\(message=\.\.\.\): message must be a str, got int\.$"
    ):
        jaxguide.jaxlogs.scrub(3)  # type: ignore[arg-type]
