"""EAGLE-3.1 options (fc_norm, norm_output): trained, exported with the keys engines load, reloaded identically."""

import json

import torch
from safetensors import safe_open

from eval.checks.draft_weights import engine_params, sglang_name
from pipeline.train.draft_model import DraftConfig, Eagle3Draft


def _trained(fc_norm: bool, norm_output: bool, steps: int = 5) -> Eagle3Draft:
    torch.manual_seed(0)
    c = DraftConfig.tiny(n_aux=3).model_copy(update={"fc_norm": fc_norm, "norm_output": norm_output})
    draft = Eagle3Draft(c)
    opt = torch.optim.AdamW(draft.parameters(), lr=1e-2)
    aux = torch.randn(2, 6, 3 * c.hidden_size) * torch.tensor([1.0, 10.0, 100.0]).repeat_interleave(16)
    emb = torch.randn(2, 6, c.hidden_size)
    pos = torch.arange(6)
    for _ in range(steps):
        cache: list = []
        h = draft.fuse(aux)
        loss = torch.zeros(())
        for _ in range(3):
            logits, h = draft.step(emb, h, pos, cache)
            loss = loss + logits.logsumexp(-1).mean() - logits[..., 0].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return draft.eval()


def _chain(draft: Eagle3Draft, aux: torch.Tensor, emb: torch.Tensor) -> list[torch.Tensor]:
    cache: list = []
    h, out = draft.fuse(aux), []
    for _ in range(3):
        logits, h = draft.step(emb, h, torch.arange(aux.shape[1]), cache)
        out.append(logits)
    return out


def test_fc_norm_trains_and_round_trips_through_the_exported_layout(tmp_path):
    from safetensors.torch import load_file, save_file

    draft = _trained(fc_norm=True, norm_output=True)
    state = draft.state_dict()
    assert {f"fc_norm.{k}.weight" for k in range(3)} <= set(state)
    assert not torch.allclose(state["fc_norm.1.weight"], torch.ones(16))  # it learned, not left at init
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp_path / "w.safetensors"))
    cfg = {**draft.config.model_dump(), "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3]}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    again = Eagle3Draft(DraftConfig.from_exported(json.loads((tmp_path / "config.json").read_text()), 3))
    again.load_state_dict(load_file(str(tmp_path / "w.safetensors")))
    aux, emb = torch.randn(1, 5, 48), torch.randn(1, 5, 16)
    with torch.no_grad():
        for a, b in zip(_chain(draft, aux, emb), _chain(again.eval(), aux, emb), strict=True):
            assert torch.equal(a, b)
    # the engine-side view: every fc_norm key lands on a parameter SGLang's module has and requires
    params, required = engine_params({**cfg, "fc_norm": True, "num_hidden_layers": 1})
    with safe_open(str(tmp_path / "w.safetensors"), framework="pt") as f:
        names = {sglang_name(k, params) for k in f.keys() if k.startswith("fc_norm.")}
    assert names == {f"model.fc_norm.{k}.weight" for k in range(3)} <= required


def test_the_options_change_the_computation():
    torch.manual_seed(1)
    c = DraftConfig.tiny(n_aux=3)
    plain = Eagle3Draft(c)
    both = Eagle3Draft(c.model_copy(update={"fc_norm": True, "norm_output": True}))
    both.load_state_dict({**plain.state_dict(), **{k: v for k, v in both.state_dict().items() if "fc_norm" in k}})
    aux, emb = torch.randn(1, 4, 48) * 50, torch.randn(1, 4, 16)
    with torch.no_grad():
        p, b = _chain(plain, aux, emb), _chain(both, aux, emb)
    assert not torch.allclose(p[0], b[0])  # fc_norm rescales step 0's input
    assert "fc_norm.0.weight" not in plain.state_dict()  # plain EAGLE-3 keeps its keys unchanged


def test_export_config_names_the_options_only_when_on(toy):
    from pipeline.capture.manifest import CaptureManifest
    from pipeline.train.export import draft_config_json

    resolved = json.loads((toy.draft / "train" / "checkpoint" / "resolved.json").read_text())
    manifest = CaptureManifest.model_validate(resolved["capture_manifest"])
    plain = draft_config_json(resolved["draft"], manifest, resolved["train"])
    on = draft_config_json({**resolved["draft"], "fc_norm": True, "norm_output": True}, manifest, resolved["train"])
    assert "fc_norm" not in plain and "norm_output" not in plain
    assert on["fc_norm"] is True and on["norm_output"] is True
    _, required = engine_params(on)
    assert {f"model.fc_norm.{k}.weight" for k in range(len(manifest.taps.aux))} <= required
    assert DraftConfig.from_exported(on, len(manifest.taps.aux)).fc_norm
