"""pipeline's stages after ingest as service jobs: mix, regenerate, build, capture, train (stages.py runs them).

Each `prepare_*` checks what the CLI command checks before work starts (names with a did-you-mean, the
stage config's own fields and types) against the service's home, and returns the work: the stage function
the CLI calls, with the same typed config. Names only, never paths: a model is a folder under the home's
models/, a build, capture or draft a name under its kind's folder, so a request cannot point the service at
files elsewhere on its host. Regeneration goes only to the service's own target endpoints
(DRAFTSET_TARGET_ENDPOINTS), with its own key: a request cannot send that key to a server it names.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from catalog.errors import DraftsetError
from catalog.home import Home, checked_name
from catalog.names import require_known
from pipeline.servers.service.jobs import Job
from pipeline.servers.service.stage_job import StageBody, StageJob, Work
from pipeline.stage import StageConfig, stage_settings

if TYPE_CHECKING:
    from pipeline.servers.service.context import Service

NAME = Field(min_length=1, max_length=200)


def settings_of(
    kind: str, model: type[StageConfig], given: dict[str, Any], settable: Iterable[str], unset: Iterable[str] = ()
) -> dict[str, Any]:
    """The stage's settings from a request: only fields a person may set, each checked by the stage's model."""
    allowed = list(settable)
    for key in given:
        if key not in allowed:
            raise DraftsetError(
                f"{kind}: unknown setting {key!r}", hint=f"the settings {kind} takes: {', '.join(allowed)}"
            )
    return stage_settings(model, None, given, settable=allowed, unset=unset)


def named(home: Path, kind: str, name: str, what: str) -> Path:
    """A build, capture or draft by name (never a path), with a did-you-mean among those there."""
    root = Home(home).kind_root(kind)
    found = sorted(d.name for d in root.iterdir() if d.is_dir() and d.name[0] != ".") if root.is_dir() else []
    return root / require_known(what, checked_name(name, what), found, where=what, hint=f"the {kind} of this home")


def model_dir(home: Path, name: str | None) -> Path:
    """A target model folder under the home's models/ (default: the toy target), by name."""
    root = Home(home).root / "models"
    found = sorted(d.name for d in root.iterdir() if d.is_dir()) if root.is_dir() else []
    chosen = checked_name(name or Home(home).toy_target.name, "model")
    return root / require_known("model", chosen, found, where="model", hint="a folder under the home's models/")


def optional_model(home: Path, name: str | None) -> Path | None:
    """A model by name when one is given; None lets the stage take its own default (a manifest's)."""
    return None if name is None else model_dir(home, name)


def mixes(home: Path, kinds: tuple[str, ...] = ("mix",)) -> list[str]:
    roots = [Home(home).root / "data" / kind for kind in kinds]
    return sorted({d.name for r in roots if r.is_dir() for d in r.iterdir() if d.is_dir() and d.name[0] != "."})


def check_mix(home: Path, name: str, kinds: tuple[str, ...] = ("mix",)) -> str:
    Home(home).mix(name)  # a name that would leave the data folder is refused as that, first
    return require_known("mix", name, mixes(home, kinds), where="mix", hint="make it first: POST /api/stages/mix")


# -- mix ----------------------------------------------------------------------------------------------
class MixBody(StageBody):
    name: str = NAME
    plan: str | None = Field(None, description="the plan whose quotas to take (default: the newest)")
    weights: dict[str, float] = Field(default_factory=dict, max_length=50, description="CATEGORY: W instead of a plan")
    tokenizer: str | None = Field(None, description="a model under models/ whose tokenizer counts prompt tokens")
    overwrite: bool = False


def prepare_mix(service: Service, body: MixBody) -> Work:
    from pipeline.mix.config import SETTABLE, MixConfig
    from pipeline.mix.figures import mix_figures
    from pipeline.mix.run import run_mix
    from pipeline.mix.targets import load_targets

    home, cat = service.settings.home, service.catalog
    Home(home).mix(body.name)
    for category, w in body.weights.items():
        if not (w >= 0 and math.isfinite(w)):
            raise DraftsetError(f"mix: weights.{category}: {w} is not a finite weight >= 0")
    if body.plan is not None:
        plans = [r["plan_id"] for r in cat.query("SELECT plan_id FROM plans")]
        require_known("plan", body.plan, plans, where="plan", hint="a find run makes a plan: POST /api/find")
    values = settings_of("mix", MixConfig, {"plan_id": body.plan, **body.settings}, SETTABLE)
    load_targets(cat, home, values.get("plan_id"), values.get("samples"), body.weights or None)  # names, now
    tokenizer = optional_model(home, body.tokenizer)

    def work(job: Job) -> dict[str, Any]:
        result = run_mix(
            cat, home, body.name, weights=body.weights or None, tokenizer=tokenizer, overwrite=body.overwrite, **values
        )
        figures = mix_figures(result.manifest)
        return {
            "name": result.name,
            "path": str(result.path),
            "reused": result.reused,
            "figures": {k: v for k, v in asdict(figures).items() if k != "sources"} | {"summary": figures.summary()},
            "sources": [asdict(s) for s in figures.sources],
        }

    return work


# -- regenerate -----------------------------------------------------------------------------------------
class RegenBody(StageBody):
    mix: str = NAME
    endpoints: list[str] = Field(default_factory=list, max_length=64, description="some of the service's targets")
    model: str | None = Field(None, max_length=200, description="served model name (default: what /v1/models lists)")


# RegenConfig's settings a request does not set: the body names endpoints and model (among the service's own),
# and the key's variable and a tokenizer path are the service host's.
REGEN_NOT_SETTABLE = ("endpoints", "model", "api_key_env", "tokenizer")


def prepare_regenerate(service: Service, body: RegenBody) -> Work:
    from pipeline.regenerate.config import RegenConfig, load_config
    from pipeline.regenerate.run import run_regenerate
    from pipeline.stage.config import env_values

    s = service.settings
    check_mix(s.home, body.mix)
    served = list(s.target_endpoints or [])
    if not served:
        raise DraftsetError(
            "the service has no target endpoint",
            hint="start it with DRAFTSET_TARGET_ENDPOINTS='[\"http://HOST:PORT\"]'",
        )
    for url in body.endpoints:
        require_known("endpoint", url, served, where="endpoints", hint="the service's DRAFTSET_TARGET_ENDPOINTS")
    settable = regen_settable()
    for key in body.settings:
        if key not in settable:
            raise DraftsetError(
                f"regenerate: unknown setting {key!r}", hint=f"the settings regenerate takes: {', '.join(settable)}"
            )
    # The request's settings over the service's environment (its endpoints and model), as the CLI's flags are.
    env = env_values(RegenConfig, s)
    given = {"endpoints": body.endpoints or None, "model": body.model, **body.settings}
    config = load_config(None, mix=body.mix, env=env, **given)

    def work(job: Job) -> dict[str, Any]:
        result = run_regenerate(config, s.home, service.catalog, show_progress=False)
        return {
            "run_id": result.run_id,
            "counts": result.counts,
            "on_disk": result.totals,
            "input_rows": result.input_rows,
            "out_dir": str(result.out_dir),
        }

    return work


# -- build ----------------------------------------------------------------------------------------------
class BuildBody(StageBody):
    mix: str = NAME
    model: str | None = Field(None, description="the target under models/ whose chat template serves")
    source: Literal["auto", "regen", "mix"] = "auto"
    overwrite: bool = False


def prepare_build(service: Service, body: BuildBody) -> Work:
    from pipeline.build.config import SETTABLE, BuildConfig
    from pipeline.build.run import run_build

    home = service.settings.home
    check_mix(home, body.mix, ("mix", "regen"))
    target = model_dir(home, body.model)
    values = settings_of("build", BuildConfig, body.settings, SETTABLE, unset=["thinking"])

    def work(job: Job) -> dict[str, Any]:
        r = run_build(
            home,
            body.mix,
            model_dir=target,
            catalog=service.catalog,
            source=body.source,
            overwrite=body.overwrite,
            **values,
        )
        keep = ("n_rows", "n_tokens", "n_trainable", "draft_vocab_size", "draft_vocab_coverage", "thinking")
        return {
            "out_dir": str(r.out_dir),
            "counts": r.counts,
            **{k: r.manifest.get(k) for k in keep},
            "source_complete": r.manifest.get("source_complete", True),
        }

    return work


# -- capture --------------------------------------------------------------------------------------------
class CaptureBody(StageBody):
    build: str = NAME
    model: str | None = Field(None, description="the target under models/ (default: the toy target)")
    fresh: bool = False


def prepare_capture(service: Service, body: CaptureBody) -> Work:
    from pipeline.capture.config import SETTABLE, CaptureConfig
    from pipeline.capture.run import run_capture

    home = service.settings.home
    build_dir = named(home, "builds", body.build, "build")
    config = CaptureConfig(
        build_dir=build_dir,
        model_dir=model_dir(home, body.model),
        out_dir=Home(home).capture(build_dir.name),
        **settings_of("capture", CaptureConfig, body.settings, SETTABLE),
    )

    def work(job: Job) -> dict[str, Any]:
        m = run_capture(config, service.catalog, fresh=body.fresh)
        return {
            "samples": m.n_samples,
            "tokens": m.n_tokens,
            "loss_tokens": m.n_loss_tokens,
            "taps_hf_j": list(m.taps.aux),
            "sglang_ids": m.taps.sglang_ids,
            "file_bytes": m.file_bytes,
            "dir": str(config.out_dir),
        }

    return work


# -- train ----------------------------------------------------------------------------------------------
class TrainBody(StageBody):
    capture: str = Field(min_length=1, max_length=200, description="a capture (with settings.online: a build)")
    model: str | None = Field(None, description="the target under models/ (default: the capture manifest's)")


def prepare_train(service: Service, body: TrainBody) -> Work:
    from pipeline.train.config import TrainConfig
    from pipeline.train.loop import run_train

    home = service.settings.home
    values = settings_of("train", TrainConfig, body.settings, train_settable())
    online = bool(values.get("online"))
    target = optional_model(home, body.model)
    if online and target is None:
        raise DraftsetError("train: online training needs model", hint="name the target under models/: model")
    source = named(home, "builds" if online else "captures", body.capture, "build" if online else "capture")
    inputs = {"build_dir": source, "capture_dir": None} if online else {"capture_dir": source}
    config = TrainConfig(**inputs, out_dir=Home(home).draft(source.name), model_dir=target, **values)

    def work(job: Job) -> dict[str, Any]:
        ckpt = run_train(config, service.catalog)
        metrics = json.loads((ckpt / "resolved.json").read_text())["metrics"]
        return {
            "draft": str(config.out_dir),
            "train_step_accuracy": metrics.get("train_step_accuracy"),
            "heldout_step_accuracy": metrics.get("heldout_step_accuracy"),
            "warnings": metrics.get("warnings") or [],
            "complete": metrics.get("complete", True),
        }

    return work


def resume_train(service: Service, params: dict[str, Any]) -> dict[str, Any]:
    """Go on from the last resumable state when the interrupted run saved one; else start it again."""
    from pipeline.train.loop import CHECKPOINT
    from pipeline.train.resume import STATE

    home = service.settings.home
    online = bool(params.get("settings", {}).get("online"))
    name = checked_name(params["capture"], "build" if online else "capture")
    saved = (Home(home).draft(name) / "train" / CHECKPOINT / STATE).is_file()
    return {**params, "settings": {**params.get("settings", {}), "resume": saved}}


def _not(flag: str) -> Callable[[Service, dict[str, Any]], dict[str, Any]]:
    """Resume without `flag` (fresh/overwrite): going on must not discard what the interrupted run wrote."""
    return lambda service, params: {**params, flag: False}


def regen_settable() -> tuple[str, ...]:
    from pipeline.regenerate.config import RegenConfig
    from pipeline.stage.config import settable_fields

    return tuple(k for k in settable_fields(RegenConfig) if k not in REGEN_NOT_SETTABLE)


def train_settable() -> tuple[str, ...]:
    from pipeline.train.config import SETTABLE

    return tuple(k for k in SETTABLE if k != "model_dir")  # the target is `model`, a name


def register_all(register: Callable[[StageJob], None]) -> None:
    from pipeline.build.config import SETTABLE as BUILD
    from pipeline.capture.config import SETTABLE as CAPTURE
    from pipeline.ingest.config import SETTABLE as INGEST
    from pipeline.mix.config import SETTABLE as MIX
    from pipeline.servers.service.work import IngestBody, prepare_ingest

    def job(
        kind: str, about: str, body: type[StageBody], prepare: Any, resume: Any, settable: Iterable[str], target: str
    ) -> None:
        register(StageJob(kind, about, body, prepare, resume, tuple(settable), target or None))

    keep = _keep
    job("ingest", "approved datasets into canonical shards", IngestBody, prepare_ingest, _not("fresh"), INGEST, "")
    job("mix", "dedup the ingested sources and select N records", MixBody, prepare_mix, keep, MIX, "name")
    job(
        "regenerate",
        "answer a mix's prompts with the target model",
        RegenBody,
        prepare_regenerate,
        keep,
        regen_settable(),
        "mix",
    )
    job(
        "build",
        "render conversations into input_ids + loss_mask rows",
        BuildBody,
        prepare_build,
        _not("overwrite"),
        BUILD,
        "mix",
    )
    job(
        "capture",
        "run the target over built rows, store hidden states",
        CaptureBody,
        prepare_capture,
        _not("fresh"),
        CAPTURE,
        "build",
    )
    job(
        "train",
        "train an EAGLE-3 draft and export it",
        TrainBody,
        prepare_train,
        resume_train,
        train_settable(),
        "capture",
    )


def _keep(service: Service, params: dict[str, Any]) -> dict[str, Any]:
    """Resume with the same params (a staged or by-id stage skips what is complete by itself)."""
    return params
