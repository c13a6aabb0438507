"""The training chapter: the numbers it shows agree with independent computations, and
the demonstrations its prose describes really happened."""

from __future__ import annotations

import re

import pytest

from bookcheck import VERDICT, glued, images, page_text

pytestmark = pytest.mark.book


def test_training(book):
    g = glued(book, "training")
    text = page_text(book, "training")
    # Training converged: the glued accuracies are above the bar and appear in the prose.
    for key, bar in (("acc_adamw", 0.95), ("acc_nnx", 0.95), ("acc_sgd", 0.85)):
        value = float(g[key].rstrip("%")) / 100
        assert value > bar, (key, g[key])
        assert g[key] in text
    assert g["n_params"] == f"{2 * 64 + 64 + 64 * 64 + 64 + 64 * 3 + 3:,}"
    # Progress lines were printed while training ran.
    assert len(re.findall(r"step +\d+/1500 +loss \d\.\d+ +test accuracy \d\.\d+ +test loss", text)) == 5
    # NNX modes: dropout random in train mode, fixed in eval; BatchNorm statistics.
    assert "train mode, two calls: False" in text and "eval mode, two calls: True" in text
    assert "running mean unchanged by an eval call: True" in text
    assert "running mean moved by a train call: True" in text
    # Data parallel: three methods, each compared with one device, agreement asserted.
    diffs = re.findall(r"(pmap \+ pmean|jit \+ sharded batch|shard_map \+ psum) +largest difference to one device over 200 steps: (\S+)", text)
    assert [d[0] for d in diffs] == ["pmap + pmean", "jit + sharded batch", "shard_map + psum"], diffs
    assert all(float(d[1]) <= 1e-4 for d in diffs)
    assert "all three agree with single-device training within 0.0001" in text
    assert "8.0 times too large" in text                    # the pmean trap under shard_map
    rates = dict(re.findall(r"(one device|pmap \+ pmean|jit \+ sharded batch|shard_map \+ psum) +(\d+) steps/s", text))
    assert len(rates) == 4 and all(int(v) > 0 for v in rates.values()), rates
    assert re.fullmatch(VERDICT, g["dp_vs_single"]) and g["dp_vs_single"] in text
    # Checkpoint: restored, continued, identical; the bad inputs raised what the prose says.
    assert "resumed at step 300: after step 600 the parameters are bit-for-bit equal: True" in text
    assert "a batch of 100 examples does not divide across 8 devices" in text
    assert "the data has 2 features" in text and "expects 3" in text
    assert "CheckpointError" in text and "holds something other than checkpoints (results.csv)" in text
    assert "['results.csv'] 'step,loss\\n'" in text
    # Figures: data, curves, two boundaries (one figure), NNX boundary, data-parallel losses.
    assert len(images(book, "training")) >= 5
