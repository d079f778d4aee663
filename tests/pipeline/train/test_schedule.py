"""The lr multiplier: warm-up ramps, constant holds, cosine ends at zero on the last step."""

import math

from pipeline.train.schedule import lr_factor


def test_warmup_then_cosine_reaches_zero_at_the_last_step():
    f = [lr_factor(s, 4, 20, "cosine") for s in range(21)]
    assert f[:4] == [0.25, 0.5, 0.75, 1.0]
    assert math.isclose(f[4], 1.0) and math.isclose(f[12], 0.5) and f[20] == 0.0
    assert all(a >= b for a, b in zip(f[4:], f[5:], strict=False))  # never rises after warm-up


def test_constant_and_unknown_total_hold_the_base_lr():
    assert [lr_factor(s, 2, 10, "constant") for s in range(4)] == [0.5, 1.0, 1.0, 1.0]
    assert lr_factor(50, 0, None, "cosine") == 1.0
