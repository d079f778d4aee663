"""Everything one `check serve` run looks at: the draft (config, tensors, manifest), the target's
config.json (its architecture decides SGLang's layer-id rule and auto-choice) and the findings' shape."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from catalog.errors import DraftsetError
from pipeline.capture.layers import target_config
from pipeline.capture.manifest import MANIFEST, CaptureManifest

WEIGHTS = "model.safetensors"


@dataclass
class Finding:
    rule: str  # stable id, e.g. "sglang.algorithm.not_eagle3"
    severity: str  # "error" (the server fails or serves at chance) | "warning"
    flag: str
    problem: str
    why: str
    fix: str
    source: str  # engine file and version the rule follows
    changes: dict[str, str | None] = field(default_factory=dict)  # dest -> new value, for the corrected command

    def as_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "changes"}


@dataclass
class Draft:
    directory: Path
    cfg: dict
    manifest: CaptureManifest | None
    tensors: dict[str, tuple[str, list[int]]]  # name -> (safetensors dtype, shape)
    d2t: list[int] | None
    t2d: list[bool] | None

    @classmethod
    def load(cls, directory: Path) -> Draft:
        from safetensors import safe_open

        directory = Path(directory)
        for need in ("config.json", WEIGHTS):
            if not (directory / need).exists():
                raise DraftsetError(f"{directory} has no {need}", hint="export the draft with `draftset export`")
        tensors, d2t, t2d = {}, None, None
        with safe_open(str(directory / WEIGHTS), framework="numpy") as f:  # header + two small int tensors: no torch
            for k in f.keys():  # noqa: SIM118 (a safetensors handle, not a dict)
                sl = f.get_slice(k)
                tensors[k] = (sl.get_dtype(), list(sl.get_shape()))
                if "d2t" in k and tensors[k][0] == "I64":
                    d2t = f.get_tensor(k).tolist()
                if "t2d" in k and tensors[k][0] == "BOOL":
                    t2d = f.get_tensor(k).tolist()
        manifest = CaptureManifest.load(directory) if (directory / MANIFEST).exists() else None
        return cls(directory, json.loads((directory / "config.json").read_text()), manifest, tensors, d2t, t2d)

    @property
    def meta(self) -> dict:
        return self.cfg.get("draftset") or {}

    @property
    def trained_taps(self) -> list[int] | None:
        """HF hidden-state indices the draft was trained on (manifest first; top-level ids are HF j as written)."""
        if self.manifest is not None:
            return sorted(self.manifest.taps.aux)
        ids = self.meta.get("hf_hidden_state_ids") or self.cfg.get("eagle_aux_hidden_state_layer_ids")
        return sorted(ids) if ids else None

    @property
    def ttt_steps(self) -> int | None:
        steps = self.meta.get("ttt_steps")
        return int(steps) if steps is not None else None

    @property
    def n_target_layers(self) -> int | None:
        return self.manifest.n_layers if self.manifest else self.meta.get("n_target_layers")


def resolve_target(draft: Draft, model_arg: str | None, explicit: Path | None) -> tuple[dict, str]:
    """The target's config.json and where it came from (said in the report: the rule depends on it)."""
    candidates = []
    if explicit is not None:
        candidates.append((explicit / "config.json" if explicit.is_dir() else explicit, "--target-config"))
    if model_arg:
        candidates.append((Path(model_arg) / "config.json", "the command's model path"))
    if draft.manifest is not None:
        candidates.append((Path(draft.manifest.model_dir) / "config.json", "the capture manifest's model dir"))
    for path, origin in candidates:
        if path.is_file():
            try:
                return json.loads(path.read_text()), f"{path} ({origin})"
            except ValueError as exc:
                raise DraftsetError(f"{path} is not valid JSON: {exc}", hint="pass the target's config.json") from exc
    if explicit is not None:
        raise DraftsetError(f"--target-config {explicit} has no config.json", hint="pass the target's config.json")
    if draft.meta.get("target_architecture"):
        return (
            {"architectures": [draft.meta["target_architecture"]], "num_hidden_layers": draft.n_target_layers},
            "the architecture recorded in the draft at export",
        )
    m = draft.manifest
    return (
        target_config(None, m.model_type if m else None, draft.n_target_layers),
        "the manifest's model_type (no target config.json found; pass --target-config)",
    )
