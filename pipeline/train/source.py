"""Where training batches come from: a capture on disk (offline), or the target's forward (online).

Both give the loop the same things: the capture manifest (layer ids, template hash, model facts), the
draft vocabulary, the sample ids with their lengths, and device batches of (ids, mask, aux, last).
Online, the target runs inside the training loop, so no hidden state ever touches the disk.
"""

from __future__ import annotations

from pathlib import Path

import torch

from catalog.errors import DraftsetError
from pipeline.capture.manifest import CaptureManifest, hidden_bytes_per_token, model_config
from pipeline.capture.store import CaptureReader
from pipeline.train.ttt import Batch, collate


def _vocab(path: Path, stage: str) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    if not path.exists():
        raise DraftsetError(
            f"no {path.name} in {path.parent} ({stage})", hint="re-run `draftset build`: it writes the draft vocabulary"
        )
    return load_file(str(path))


class OfflineSource:
    """A capture dir: hidden states read from its shards."""

    def __init__(self, capture_dir: Path):
        self.manifest = CaptureManifest.load(capture_dir)
        self.reader = CaptureReader(capture_dir)
        self.vocab = _vocab(Path(capture_dir) / "vocab.safetensors", "capture copies it from the build")
        self.bad: list = []

    def ids(self) -> list[str]:
        return self.reader.ids()

    def lengths(self, ids: list[str]) -> dict[str, int]:
        wanted = set(ids)  # from the 1-byte loss masks, never the hidden states
        return {i: int(s["loss_mask"].numel()) for i, s in self.reader.items(fields=("loss_mask",)) if i in wanted}

    def batch(self, ids: list[str], device: torch.device | str, dtype: torch.dtype) -> tuple[Batch, list[str]]:
        return collate([self.reader.load(i) for i in ids]).to(device, dtype), []


class OnlineSource:
    """Built rows + the target model: each batch's taps come from a forward pass on the training GPU."""

    def __init__(
        self,
        build_dir: Path,
        model_dir: Path,
        layers: list[int] | None,
        device: torch.device,
        dtype: torch.dtype,
        tp: bool = False,
    ):
        from pipeline.capture.layers import LayerPlan
        from pipeline.capture.rows import read_build_rows
        from pipeline.capture.run import manifest_for
        from pipeline.target.load import load_target

        mcfg = model_config(model_dir)
        self.plan = LayerPlan.resolve(mcfg["num_hidden_layers"], layers)
        build, rows = read_build_rows(build_dir, vocab_size=mcfg["vocab_size"])
        self.bad = [r for r in rows if r.problem]
        self.rows = {r.id: r for r in rows if not r.problem}
        per_token = hidden_bytes_per_token(len(self.plan.aux), mcfg["hidden_size"])
        n_tokens = sum(len(r.input_ids) for r in self.rows.values())
        # nothing is stored: hidden_bytes and file_bytes stay 0, which is the point of training online
        self.manifest = manifest_for(
            model_dir,
            build_dir,
            mcfg,
            self.plan,
            build,
            per_token,
            n_samples=len(self.rows),
            n_tokens=n_tokens,
            n_loss_tokens=sum(sum(r.loss_mask) for r in self.rows.values()),
        )
        self.vocab = _vocab(Path(build_dir) / "vocab.safetensors", "written by the build")
        self.model = load_target(model_dir, dtype, tp=tp)  # tp: transformers shards it over the ranks' GPUs
        if not tp:
            self.model = self.model.to(device)
        elif torch.distributed.get_rank() == 0:  # says that transformers did shard it
            print(f"online: target tensor-parallel over {getattr(self.model, 'tp_size', None)} ranks", flush=True)
        self.device = device

    def ids(self) -> list[str]:
        return sorted(self.rows)

    def lengths(self, ids: list[str]) -> dict[str, int]:
        return {i: len(self.rows[i].input_ids) for i in ids}

    def batch(self, ids: list[str], device: torch.device | str, dtype: torch.dtype) -> tuple[Batch, list[str]]:
        """(batch, ids of rows whose states were not finite: masked out of the loss, reported as drops)."""
        from pipeline.capture.forward import device_taps

        rows = [self.rows[i] for i in ids]
        input_ids, attn, aux, last = device_taps(self.model, rows, self.plan, self.device)
        mask = torch.zeros_like(attn, dtype=torch.bool)
        for k, r in enumerate(rows):
            mask[k, : len(r.loss_mask)] = torch.tensor(r.loss_mask, dtype=torch.bool)
        finite = ((torch.isfinite(aux).all(-1) & torch.isfinite(last).all(-1)) | (attn == 0)).all(-1)
        bad = [ids[k] for k in (~finite).nonzero().flatten().tolist()]
        if bad:
            mask &= finite[:, None]
            aux, last = aux.nan_to_num(0.0, 0.0, 0.0), last.nan_to_num(0.0, 0.0, 0.0)
        # padding holds zeros, as in an offline batch; and the new tensors are ordinary ones (inference-mode
        # tensors cannot enter autograd)
        keep = attn[..., None].to(aux.dtype)
        return Batch(input_ids.clone(), mask, (aux * keep).to(dtype), (last * keep).to(dtype)), bad
