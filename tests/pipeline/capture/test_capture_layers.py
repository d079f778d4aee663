"""The layer-id convention: defaults, both engines' ids, refusal of taps SGLang cannot capture."""

import pytest

from catalog.errors import DraftsetError
from pipeline.capture.layers import LayerPlan, default_aux_layers, from_sglang, sglang_uncapturable


def test_defaults_match_eagle3_and_specforge():
    assert default_aux_layers(32) == [2, 16, 29]  # Llama-3.1-8B
    plan = LayerPlan.resolve(61, None)  # Kimi-K2.5 / DeepSeek-V3 depth
    assert plan.aux == [2, 30, 58]
    assert plan.sglang_ids() == [1, 29, 57]  # SpecForge's deepseek-v3 config
    assert plan.vllm_ids() == [2, 30, 58]
    assert from_sglang(plan.sglang_ids()) == plan.aux


def test_sglang_export_refuses_uncapturable_taps():
    with pytest.raises(DraftsetError, match="cannot be captured by SGLang"):
        LayerPlan(n_layers=61, aux=[0, 4, 32]).sglang_ids()  # the embedding has no SGLang id
    assert LayerPlan(n_layers=61, aux=[2, 30, 60]).sglang_ids() == [1, 29, 59]  # n-1 is the last capturable


def test_embedding_is_a_valid_capture_tap_and_order_is_enforced():
    assert LayerPlan(n_layers=8, aux=[0, 3, 5]).vllm_ids() == [0, 3, 5]
    with pytest.raises(DraftsetError, match="ascending"):
        LayerPlan(n_layers=8, aux=[5, 3, 2])
    with pytest.raises(DraftsetError, match="outside 0..7"):
        LayerPlan(n_layers=8, aux=[2, 4, 8])


def test_sglang_uncapturable_flags_last_block():
    assert sglang_uncapturable(61, [1, 29, 57]) == []
    assert sglang_uncapturable(61, [3, 31, 60]) == [60]
    assert sglang_uncapturable(61, [-1, 3, 31]) == [-1]
