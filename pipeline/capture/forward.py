"""Target forward passes that expose the layer convention: HF hidden states + the pre-norm last state."""

from __future__ import annotations

from pipeline.capture.layers import LayerPlan
from pipeline.capture.rows import BuiltRow


def target_states(model, input_ids, attention_mask=None):
    """(HF hidden_states tuple, last block output before the final norm) for a batch, no logits.

    transformers returns index n after the final norm, so the verifier state is read from the final
    norm's input with a hook; running the base model skips the lm_head entirely.
    """
    import torch

    base = model.base_model
    captured = {}
    hook = base.norm.register_forward_pre_hook(lambda _m, args: captured.__setitem__("last", args[0]))
    try:
        with torch.inference_mode():
            out = base(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, use_cache=False)
    finally:
        hook.remove()
    return out.hidden_states, captured["last"]


def capture_batch(model, batch: list[BuiltRow], plan: LayerPlan, device):
    """Yield (row, aux [L, n_aux*H] bf16, last [L, H] bf16, finite) for each row of a right-padded batch.

    The finiteness check runs on the device before the copy to the host (a host-side check of bf16
    tensors costs more than the forward pass)."""
    import torch

    width = max(len(r.input_ids) for r in batch)
    ids = torch.zeros(len(batch), width, dtype=torch.long)
    attn = torch.zeros(len(batch), width, dtype=torch.long)
    for i, r in enumerate(batch):
        ids[i, : len(r.input_ids)] = torch.tensor(r.input_ids)
        attn[i, : len(r.input_ids)] = 1
    attn = attn.to(device)
    states, last = target_states(model, ids.to(device), attn)
    with torch.inference_mode():
        aux = torch.cat([states[j] for j in plan.aux], dim=-1).to(torch.bfloat16)
        last = last.to(torch.bfloat16)
        finite = ((torch.isfinite(aux).all(-1) & torch.isfinite(last).all(-1)) | (attn == 0)).all(-1).tolist()
    for i, r in enumerate(batch):
        n = len(r.input_ids)
        # one device→host copy per row into its own storage (safetensors refuses tensors sharing one),
        # instead of copying the batch to the host and cloning each row there: one host pass fewer
        yield r, aux[i, :n].to("cpu", copy=True), last[i, :n].to("cpu", copy=True), finite[i]
