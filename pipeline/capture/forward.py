"""Target forward passes that expose the layer convention: HF hidden states + the pre-norm last state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.capture.layers import LayerPlan
from pipeline.capture.rows import BuiltRow

if TYPE_CHECKING:
    import torch


def target_states(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """(HF hidden_states tuple, last block output before the final norm) for a batch, no logits.

    transformers returns index n after the final norm, so the verifier state is read from the final
    norm's input with a hook; running the base model skips the lm_head entirely.
    """
    import torch

    base = model.base_model
    captured: dict[str, Any] = {}
    hook = base.norm.register_forward_pre_hook(lambda _m, args: captured.__setitem__("last", args[0]))
    try:
        with torch.inference_mode():
            out = base(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, use_cache=False)
    finally:
        hook.remove()
    return out.hidden_states, captured["last"]


def padded(batch: list[BuiltRow] | list[list[int]], device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) [B, W] on `device`, right-padded with 0; accepts BuiltRows or id lists."""
    import torch

    seqs = [r.input_ids if isinstance(r, BuiltRow) else r for r in batch]
    width = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), width, dtype=torch.long)
    attn = torch.zeros(len(seqs), width, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.as_tensor(s)
        attn[i, : len(s)] = 1
    return ids.to(device), attn.to(device)


def device_taps(
    model: Any, batch: list[BuiltRow], plan: LayerPlan, device: torch.device | str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask, aux [B, W, n_aux*H] bf16, last [B, W, H] bf16) on the device: what
    capture stores and what online training consumes without touching the host."""
    import torch

    ids, attn = padded(batch, device)
    states, last = target_states(model, ids, attn)
    with torch.inference_mode():
        aux = torch.cat([states[j] for j in plan.aux], dim=-1).to(torch.bfloat16)
        return ids, attn, aux, last.to(torch.bfloat16)


@dataclass
class HostBatch:
    """A captured batch on its way to disk: pinned host tensors being filled by non-blocking copies.

    `ready` is the CUDA event recorded after the copies (None on CPU); readers wait on it, so the
    GPU computes the next batch while this one is copied and written."""

    rows: list[BuiltRow]
    aux: Any  # torch.Tensor [B, W, n_aux*H] bf16 (torch is imported lazily)
    last: Any  # [B, W, H] bf16
    finite: Any  # [B] bool
    ready: Any  # torch.cuda.Event, or None

    def wait(self) -> None:
        if self.ready is not None:
            self.ready.synchronize()


def capture_batch(model: Any, batch: list[BuiltRow], plan: LayerPlan, device: torch.device) -> HostBatch:
    """Forward one right-padded batch and start its device→host copy; never waits for the GPU.

    The finiteness check runs on the device (a host-side check of bf16 tensors costs more than the
    forward). One batch-sized copy into pinned memory replaces a synchronous copy per row; rows are
    later written straight from slices of it (store.write_shard), so the host never copies them again."""
    import torch

    _, attn, aux, last = device_taps(model, batch, plan, device)
    with torch.inference_mode():
        finite = ((torch.isfinite(aux).all(-1) & torch.isfinite(last).all(-1)) | (attn == 0)).all(-1)
        if device.type != "cuda":
            return HostBatch(batch, aux, last, finite, None)
        pinned = [torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for t in (aux, last, finite)]
        for host, dev in zip(pinned, (aux, last, finite)):
            host.copy_(dev, non_blocking=True)
        ready = torch.cuda.Event()
        ready.record()
    return HostBatch(batch, pinned[0], pinned[1], pinned[2], ready)
