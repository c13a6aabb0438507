"""The autodiff chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bookcheck import VERDICT, glued, page_text

pytestmark = pytest.mark.book


def test_autodiff(book):
    g = glued(book, "autodiff")
    assert g["df_at_2"] == 3 * 2.0**2 + 2
    assert g["newton_grad"] == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-5)
    text = page_text(book, "autodiff")
    assert "largest difference to finite differences" in text
    assert "100.0 nan" in text            # the naive softplus gradient
    assert "100.0 1.0 0.5" in text        # the custom_vjp one
    assert "check_grads passed" in text
    assert "[[ 6. 0.] [ 0. 12.]]" in text  # the Hessian block diag(6w)
    for key in ("tall_fwd_vs_rev", "wide_rev_vs_fwd"):
        assert re.fullmatch(VERDICT, g[key]) and g[key] in text
