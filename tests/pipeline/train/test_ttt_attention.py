"""The training-time-test attention's fused kernels (sdpa, flex) against the eager reference: the same outputs and
the same gradients for q, k, v of every step, on GQA-expanded and MLA-shaped heads; the same training losses; the
stage's setting reaches the draft and never the exported config.json.

torch 2.13 refuses flex_attention's backward on CPU in its public wrapper (`_validate_device`); `flex_on_cpu` lifts
that refusal so the higher-order op's dense reference backward runs: the same autograd function (lse's gradient
included) as on CUDA, with math where CUDA runs the triton kernel. It checks the merge, not the triton kernel.
"""

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import get_args
from unittest import mock

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog.errors import DraftsetError
from pipeline.train.config import TrainConfig, TTTAttention
from pipeline.train.draft_mla import ENGINE_ROPE_THETA, DraftMLAConfig
from pipeline.train.draft_model import DraftConfig, DraftShape, Eagle3Draft
from pipeline.train.loop import kernel_for, train_step
from pipeline.train.target_head import FrozenTarget
from pipeline.train.ttt import Batch, TTTObjective
from pipeline.train.ttt_attention import KERNELS, causal_block_mask, ttt_attention

FUSED = ("sdpa", "flex")
pytestmark = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")


@contextlib.contextmanager
def flex_on_cpu() -> Iterator[None]:
    import torch.nn.attention.flex_attention as fa

    with mock.patch.object(fa, "_validate_device", lambda *tensors: None):
        yield


def leaves(b: int, h_kv: int, rep: int, n: int, d: int, dv: int, steps: int, seed: int) -> list[torch.Tensor]:
    """Per step q [B, h_kv·rep, L, d] and the unexpanded k [B, h_kv, L, d], v [B, h_kv, L, dv], leaf tensors."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        for shape in ((b, h_kv * rep, n, d), (b, h_kv, n, d), (b, h_kv, n, dv)):
            out.append(torch.randn(*shape, generator=g).requires_grad_())
    return out


def run(kernel: str, tensors: list[torch.Tensor], rep: int, scale: float) -> list[torch.Tensor]:
    """Every step's output, then the gradients of every leaf under a fixed random cotangent per step."""
    cache: list = []
    outs = []
    for i in range(0, len(tensors), 3):
        q, k, v = tensors[i : i + 3]
        # GQA: each KV head serves `rep` query heads, as Attention.project expands them (grads sum back)
        outs.append(ttt_attention(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), cache, scale, kernel))
    g = torch.Generator().manual_seed(99)
    loss = sum((o * torch.randn(o.shape, generator=g)).sum() for o in outs)
    grads = torch.autograd.grad(loss, tensors)
    return [o.detach() for o in outs] + list(grads)


def assert_same(kernel: str, b: int, h_kv: int, rep: int, n: int, d: int, dv: int, steps: int, seed: int) -> None:
    tensors = leaves(b, h_kv, rep, n, d, dv, steps, seed)
    scale = d**-0.5
    ref = run("eager", tensors, rep, scale)
    with flex_on_cpu():
        got = run(kernel, tensors, rep, scale)
    names = [f"out{i}" for i in range(steps)] + [f"d{t}{i}" for i in range(steps) for t in "qkv"]
    for name, a, e in zip(names, got, ref, strict=True):
        torch.testing.assert_close(a, e, atol=2e-5, rtol=1e-4, msg=lambda m, name=name: f"{kernel} {name}: {m}")


@settings(max_examples=25, deadline=None)
@given(
    kernel=st.sampled_from(FUSED),
    b=st.integers(1, 2),
    h_kv=st.integers(1, 2),
    rep=st.integers(1, 3),
    n=st.integers(1, 20),
    d=st.sampled_from([4, 8, 12]),
    mla=st.booleans(),
    steps=st.integers(2, 5),
    seed=st.integers(0, 1000),
)
def test_each_kernel_is_eager_forward_and_backward(kernel, b, h_kv, rep, n, d, mla, steps, seed):
    """fp32, every step's output and every step's q, k, v gradient; `mla`: v's head dim is not q's."""
    assert_same(kernel, b, h_kv, rep, n, d, d + 4 if mla else d, steps, seed)


@pytest.mark.parametrize("kernel", FUSED)
def test_each_kernel_is_eager_past_a_block_at_the_draft_shapes(kernel):
    """Rows longer than flex's 128-token blocks, 7 TTT steps, the MLA draft's qk 16 / v 12 and a Llama head of 8."""
    assert_same(kernel, 1, 2, 2, 130, 16, 12, 7, 0)
    assert_same(kernel, 2, 1, 4, 70, 8, 8, 4, 1)


def test_large_scores_stay_finite_and_equal():
    """Scores far from 0 (a sharp softmax): the merge's max shift keeps every exponent <= 0."""
    tensors = leaves(1, 2, 1, 9, 8, 8, 4, 3)
    with torch.no_grad():
        for t in tensors[0::3]:
            t.mul_(30)
    ref = run("eager", tensors, 1, 8**-0.5)
    assert all(torch.isfinite(x).all() for x in ref)
    for kernel in FUSED:
        with flex_on_cpu():
            got = run(kernel, tensors, 1, 8**-0.5)
        for a, e in zip(got, ref, strict=True):
            torch.testing.assert_close(a, e, atol=1e-4, rtol=1e-4)


def test_sdpa_in_bf16_is_as_close_to_fp32_as_eager_in_bf16():
    """bf16, as training runs on CUDA: the sink's score rounded into a bf16 q channel, and the fp32 merge, leave the
    output no further from the fp32 reference than eager's own bf16 rounding leaves it."""
    tensors = [t.detach() for t in leaves(2, 2, 2, 48, 16, 16, 4, 5)]
    for t in tensors[0::3]:
        t.mul_(4)  # scores of several units: the sink's c/scale is large, so its rounding is too

    def outs(kernel: str, dtype: torch.dtype) -> list[torch.Tensor]:
        cache: list = []
        got = []
        for i in range(0, len(tensors), 3):
            q, k, v = (t.to(dtype) for t in tensors[i : i + 3])
            got.append(ttt_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), cache, 0.25, kernel))
        return [o.float() for o in got]

    ref = outs("eager", torch.float32)
    eager_err = max((a - e).abs().max().item() for a, e in zip(outs("eager", torch.bfloat16), ref, strict=True))
    sdpa_err = max((a - e).abs().max().item() for a, e in zip(outs("sdpa", torch.bfloat16), ref, strict=True))
    assert sdpa_err <= 1.5 * eager_err, (sdpa_err, eager_err)


def test_the_settings_kernels_are_the_kernels_and_eager_is_the_default():
    assert set(get_args(TTTAttention)) == set(KERNELS)
    assert TrainConfig.model_fields["ttt_attention"].default == "eager"
    with pytest.raises(ValueError, match="ttt_attention"):
        TrainConfig(capture_dir=Path("c"), out_dir=Path("o"), ttt_attention="fast")  # type: ignore[arg-type]
    from pipeline.train.__main__ import parser

    flags = parser().parse_args(["cap", "out", "--ttt-attention", "sdpa"])
    assert flags.ttt_attention == "sdpa"


def test_flex_is_refused_before_training_where_torch_has_no_backward():
    with pytest.raises(DraftsetError, match="flex trains on CUDA only"):
        kernel_for("flex", torch.device("cpu"))
    assert kernel_for("sdpa", torch.device("cpu")) == "sdpa"


def test_the_block_mask_is_cached_per_length_and_device():
    assert causal_block_mask(33, "cpu") is causal_block_mask(33, "cpu")
    assert causal_block_mask(34, "cpu") is not causal_block_mask(33, "cpu")


def _mla_tiny() -> DraftMLAConfig:
    return DraftMLAConfig(
        hidden_size=32,
        target_hidden_size=32,
        n_aux=3,
        num_attention_heads=4,
        q_lora_rank=24,
        kv_lora_rank=16,
        qk_nope_head_dim=8,
        qk_rope_head_dim=8,
        v_head_dim=12,
        intermediate_size=64,
        rms_norm_eps=1e-6,
        rope_theta=ENGINE_ROPE_THETA,
        vocab_size=50,
        draft_vocab_size=40,
        max_position_embeddings=64,
    )


def losses(c: DraftShape, kernel: TTTAttention, n_steps: int = 4) -> list[float]:
    """The TTT objective's loss over a few optimiser steps from one seed, the draft computing with `kernel`."""
    torch.manual_seed(0)
    target = FrozenTarget.random(c.vocab_size, c.target_hidden_size, dtype=torch.float32)
    draft = Eagle3Draft(c)
    hot = torch.randperm(c.vocab_size)[: c.draft_vocab_size].sort().values
    draft.d2t.copy_(hot - torch.arange(c.draft_vocab_size))
    draft.t2d[hot] = True
    draft.use_ttt_attention(kernel)
    model, opt = TTTObjective(draft), torch.optim.AdamW(draft.parameters(), lr=3e-3)
    b, n = 2, 24
    batch = Batch(
        torch.randint(0, c.vocab_size, (b, n)),
        torch.rand(b, n) < 0.8,
        torch.randn(b, n, c.n_aux * c.target_hidden_size),
        torch.randn(b, n, c.target_hidden_size),
    )
    with flex_on_cpu():
        return [
            float(train_step(model, draft, target, batch, opt, 4, 0.5, bf16=False)[0].detach()) for _ in range(n_steps)
        ]


@pytest.mark.parametrize("shape", ["llama", "mla"])
def test_training_with_each_kernel_gives_eager_losses(shape):
    c = DraftConfig.tiny(hidden_size=32, vocab_size=50, head_dim=8) if shape == "llama" else _mla_tiny()
    ref = losses(c, "eager")
    assert ref[-1] < ref[0]  # it trains: the comparison is between runs that move
    for kernel in FUSED:
        assert losses(c, kernel) == pytest.approx(ref, rel=1e-4), kernel


def test_the_stage_trains_with_the_kernel_it_is_given_and_exports_no_trace_of_it(tmp_path, monkeypatch):
    from pipeline.capture.run import CaptureConfig, run_capture
    from pipeline.train import ttt_attention as kernels
    from pipeline.train.export import load_exported
    from pipeline.train.loop import run_train
    from tests.kits.draft_toy import PLAIN, make_build, make_target

    calls = []
    real = kernels.KERNELS["sdpa"]
    monkeypatch.setitem(kernels.KERNELS, "sdpa", lambda *a: calls.append(1) or real(*a))
    model, build = make_target(tmp_path / "model"), make_build(tmp_path / "build", n_rows=6, length=20)
    run_capture(CaptureConfig(build_dir=build, model_dir=model, out_dir=tmp_path / "capture", device="cpu"))
    common = {**PLAIN, "epochs": 1, "batch_tokens": 64, "ttt_steps": 2, "heldout_every": 1000, "device": "cpu"}
    run_train(TrainConfig(capture_dir=tmp_path / "capture", out_dir=tmp_path / "draft", ttt_attention="sdpa", **common))
    assert calls  # the stage's draft ran the sdpa kernel, not the default
    resolved = json.loads((tmp_path / "draft" / "train" / "checkpoint" / "resolved.json").read_text())
    assert resolved["train"]["ttt_attention"] == "sdpa"  # the run's record says which kernel trained it
    config_text = (tmp_path / "draft" / "config.json").read_text()
    assert "ttt_attention" not in config_text and "sdpa" not in config_text
    draft, _, _ = load_exported(tmp_path / "draft")
    assert draft.midlayer.self_attn.ttt_kernel == "eager"  # a reloaded draft computes with the reference
