"""The autodiff chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from bookcheck import VERDICT, glued, page_text

pytestmark = pytest.mark.book


def errors(book, chapter: str) -> list[tuple[str, str]]:
    """(name, message) of every error the executed notebook shows, in order."""
    nb = json.loads(book.notebook(chapter).read_text())
    return [
        (o["ename"], o["evalue"])
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if o["output_type"] == "error"
    ]


def test_autodiff_values(book):
    g = glued(book, "autodiff")
    assert g["df_at_2"] == 3 * 2.0**2 + 2
    assert g["d2f_at_2"] == 6 * 2.0
    assert g["newton_grad"] == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-5)
    assert float(g["hessian_rev"]) == pytest.approx(-0.25 * 2.0**-1.5, rel=1e-5)
    text = page_text(book, "autodiff")
    assert "largest difference to finite differences" in text
    assert "[[ 6. 0.] [ 0. 12.]]" in text  # the Hessian block diag(6w)
    assert "gradient has the parameters' tree structure: True" in text
    # Python control flow under grad: the branch the value selects.
    assert "relu_py' at 2 and -1: 1.0, 0.0" in text
    assert "piecewise' at 0.5 and 3: [1. 2.]" in text


def test_autodiff_cross_references_and_math(book):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(book.page("autodiff"), "html.parser")
    hrefs = {a.get("href", "").split("#")[0] for a in soup.select("a.reference")}
    for chapter in ("pytrees", "control_flow", "debugging"):
        assert f"{chapter}.html" in hrefs, chapter
    # Every TeX fragment survived (a stray tab once turned \times into "imes").
    for ann in soup.select("annotation"):
        assert "\t" not in ann.get_text(), ann.get_text()
    assert any("3\\times3" in a.get_text() for a in soup.select("annotation"))


def jaxpr_text(book) -> str:
    """The page's text, with jaxpr lines as printed (`i:f32[]`, not `i :f32[]`)."""
    return page_text(book, "autodiff").replace(" :", ":")


def test_autodiff_nan_explained(book):
    text = jaxpr_text(book)
    assert "gradient at 100: nan" in text
    # The jaxpr lines the prose points at: 0/inf, then 0*inf.
    assert "i:f32[] = div g e" in text and "j:f32[] = mul i c" in text
    assert "k:f32[] = add_any f j" in text
    assert "i = g/e = 0.0, j = i*c = nan, k = 1 + j = nan" in text
    # The double-where fix: the gradient is sigmoid(x), up to 1 at x = 100.
    assert re.search(r"gradient: \[0\.0474 0\.6225 0\.9933 1\.\s+1\.\s*\]", text)
    # Twice in the code that prints it, twice in the outputs.
    assert text.count("check_grads passed") == 4


def test_autodiff_custom_rules(book):
    errs = errors(book, "autodiff")
    assert [name for name, _ in errs] == [
        "TypeError",
        "TypeError",
        "ValueError",
        "TypeError",
        "UnexpectedTracerError",
    ]
    assert "grad requires real- or complex-valued inputs" in errs[0][1]
    assert "but got int32" in errs[0][1]
    assert "Gradient only defined for scalar-output functions" in errs[1][1]
    assert "Reverse-mode differentiation does not work for lax.while_loop" in errs[2][1]
    assert "forward-mode autodiff (jvp) to a custom_vjp function" in errs[3][1]
    # A traced value in a nondiff_argnums position is refused.
    assert "nondiff_argnums" in errs[4][1]
    text = page_text(book, "autodiff")
    exact = 0.5 / np.sqrt(2.0)
    assert f"forward-mode derivative: {exact:.6f}" in text
    assert f"grad: {exact:.6f} (exact {exact:.6f})" in text
    assert f"jacfwd: {exact:.6f}" in text
    # custom_jvp's hessian, then custom_vjp's (visible, not only glued).
    assert text.count(f"hessian: {-0.25 * 2.0**-1.5:.6f}") == 2


def test_autodiff_jacobians(book):
    import jax
    import jax.numpy as jnp

    g = glued(book, "autodiff")
    text = jaxpr_text(book)
    # jacrev: one forward pass on f32[4], the backward pass batched over 4 outputs.
    assert "d:f32[4] = tanh c" in text and "f32[4,4] = mul" in text
    assert "f32[4,3] = dot_general" in text
    # jacfwd: the 3 input directions go forward as one batch; tanh of the value once.
    assert "dot_general float32[4,3]" in text
    assert text.count("tanh float32[4]") == 1 and "mul float32[3,4]" in text
    # The FLOP ratios, recomputed here from the compiled programs.
    A = jax.random.normal(jax.random.key(2), (2000, 10))
    flops = {}
    for shape, fn, arg in [
        ("tall", lambda x: jnp.tanh(A @ x), jnp.ones(10)),
        ("wide", lambda x: jnp.tanh(A.T @ x), jnp.ones(2000)),
    ]:
        for jac in (jax.jacfwd, jax.jacrev):
            cost = jax.jit(jac(fn)).lower(arg).compile().cost_analysis()
            flops[shape, jac.__name__] = cost["flops"]
    tall = flops["tall", "jacrev"] / flops["tall", "jacfwd"]
    wide = flops["wide", "jacfwd"] / flops["wide", "jacrev"]
    assert tall > 10 and wide > 10
    assert g["tall_flop_ratio"] == f"{tall:.0f}"
    assert g["wide_flop_ratio"] == f"{wide:.0f}"
    # The memory: jacrev on the tall Jacobian holds the 2000 x 2000 output basis.
    from jaxguide.compiled import format_bytes

    rev = jax.jit(jax.jacrev(lambda x: jnp.tanh(A @ x))).lower(jnp.ones(10)).compile()
    rev_temp = rev.memory_analysis().temp_size_in_bytes
    assert rev_temp >= 2000 * 2000 * 4
    assert g["tall_rev_temp"] == format_bytes(rev_temp) and g["tall_rev_temp"] in text
    assert g["tall_fwd_temp"] in text
    for key in ("tall_fwd_vs_rev", "wide_rev_vs_fwd"):
        assert re.fullmatch(VERDICT, g[key]) and g[key] in text


def test_autodiff_vector_vjp_and_nondiff(book):
    import jax
    import jax.numpy as jnp

    text = page_text(book, "autodiff")
    # The pullback of the 3 -> 4 function, recomputed here against the Jacobian.
    A = jax.random.normal(jax.random.key(2), (4, 3))
    x = jnp.array([0.1, -0.2, 0.3])
    u = jnp.array([1.0, -1.0, 0.5, 2.0])
    expected = u @ jax.jacfwd(lambda x: jnp.tanh(A @ x))(x)
    shown = " ".join(np.array2string(np.asarray(expected), precision=4).split())
    assert f"u^T J from vjp {shown}" in text
    assert f"u @ jacrev(small)(x) {shown}" in text
    assert "output shape: (4,)" in text
    # nondiff_argnums: d/da only; a looser tolerance moves the gradient.
    exact = 0.5 / np.sqrt(2.0)
    assert f"tol 1e-06: grad {exact:.6f}" in text
    loose = float(re.search(r"tol 0.01: grad ([\d.]+)", text).group(1))
    assert loose != pytest.approx(exact, abs=1e-6) and loose == pytest.approx(exact, abs=1e-2)
    # A None cotangent: tol may be traced, and its gradient is zero.
    assert f"under jit: grad {exact:.6f}; d/d tol: 0.0" in text


def test_autodiff_nan_diagnosis_wording(book):
    text = page_text(book, "autodiff")
    assert "derivative is infinite" not in text
    assert "non-finite intermediate" in text
    # An infinity the backward pass never multiplies by does no harm: shown.
    assert "where(x > 0, x, x + inf) has gradient 1.0 at 1" in text
