"""The capture manifest: what a capture holds and under which convention, read by train/export/checks.

It travels with the data (capture dir → checkpoint → exported draft), so layer ids, hidden size and
the serving chat template are typed once, at capture, and never again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TypedDict

from pydantic import BaseModel, ConfigDict

from catalog.errors import DraftsetError
from catalog.io import write_json_atomic
from pipeline.capture.layers import TAP_MEANING, VERIFIER_MEANING, LayerPlan

MANIFEST = "capture_manifest.json"
HIDDEN_DTYPE = "bfloat16"
HIDDEN_BYTES = 2  # bf16
MODEL_KEYS = ("num_hidden_layers", "hidden_size", "vocab_size", "num_attention_heads", "intermediate_size")


class Taps(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    aux: list[int]
    aux_meaning: str = TAP_MEANING
    verifier: str = VERIFIER_MEANING
    sglang_ids: list[int] | None = None  # None when SGLang cannot capture them (e.g. embedding)
    vllm_ids: list[int]


class CaptureCounts(TypedDict, total=False):
    """The counted fields of a CaptureManifest (each 0 unless given)."""

    n_samples: int
    n_tokens: int
    n_loss_tokens: int
    hidden_bytes: int
    file_bytes: int


class CaptureManifest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    format: str = "draftset-capture-v1"
    model_dir: str
    model_id: str
    model_revision: str
    model_type: str
    n_layers: int
    hidden_size: int
    vocab_size: int
    rms_norm_eps: float
    taps: Taps
    dtype: str = HIDDEN_DTYPE
    hidden_bytes_per_token: int
    chat_template_sha256: str | None
    tokenizer_sha256: str | None = None  # the model dir's tokenizer.json (e.g. written by convert-tokenizer)
    system_prompt: str | None
    thinking: bool | None
    max_length: int | None
    draft_vocab_size: int | None
    build_dir: str
    n_samples: int = 0
    n_tokens: int = 0
    n_loss_tokens: int = 0
    hidden_bytes: int = 0
    file_bytes: int = 0

    @property
    def plan(self) -> LayerPlan:
        return LayerPlan(n_layers=self.n_layers, aux=self.taps.aux)

    def save(self, directory: Path) -> Path:
        path = Path(directory) / MANIFEST
        write_json_atomic(path, self.model_dump(mode="json"))
        return path

    @classmethod
    def load(cls, directory: Path) -> CaptureManifest:
        path = Path(directory) / MANIFEST
        if not path.exists():
            raise DraftsetError(f"no {MANIFEST} in {directory}", hint="run `draftset capture BUILD --model DIR` first")
        try:
            return cls.model_validate_json(path.read_text())
        except ValueError as exc:
            raise DraftsetError(
                f"{path} is not a valid capture manifest: {exc}".splitlines()[0],
                hint="re-run the capture; do not edit the manifest by hand",
            ) from exc


def taps_for(plan: LayerPlan) -> Taps:
    try:
        sglang = plan.sglang_ids()
    except DraftsetError:
        sglang = None
    return Taps(aux=plan.aux, sglang_ids=sglang, vllm_ids=plan.vllm_ids())


def hidden_bytes_per_token(n_aux: int, hidden_size: int) -> int:
    """Exactly what the convention needs: the aux taps plus the verifier state, in bf16."""
    return (n_aux + 1) * hidden_size * HIDDEN_BYTES


def model_revision(model_dir: Path) -> str:
    """A cheap fingerprint of a local model dir (config + weight file names and sizes).

    Hashing the weights themselves would read a 1T-parameter target; an HF snapshot dir is named by
    its commit, which we use when present.
    """
    model_dir = Path(model_dir)
    if len(model_dir.name) == 40 and all(c in "0123456789abcdef" for c in model_dir.name):
        return model_dir.name
    h = hashlib.sha256((model_dir / "config.json").read_bytes())
    for f in sorted(model_dir.glob("*.safetensors")):
        h.update(f"{f.name}:{f.stat().st_size}".encode())
    return "local-" + h.hexdigest()[:16]


def model_config(model_dir: Path) -> dict:
    """The target's config.json, checked for the fields capture and training read."""
    path = Path(model_dir) / "config.json"
    if not path.exists():
        raise DraftsetError(f"no config.json in {model_dir}", hint="pass --model a Hugging Face model directory")
    try:
        cfg = json.loads(path.read_text())
    except ValueError as exc:
        raise DraftsetError(f"{path} is not valid JSON: {exc}", hint="re-download the model's config.json") from exc
    missing = [k for k in MODEL_KEYS if not isinstance(cfg.get(k), int)]
    if missing:
        raise DraftsetError(
            f"{path} lacks integer field(s) {missing}",
            hint="point --model at the decoder's own directory (a Llama/DeepSeek-style config)",
        )
    return cfg
