"""Propose an adapter for a Hub dataset: pin the revision, choose config/split, sample, detect, pin golden rows.

Hub metadata comes through huggingface_hub (`dataset_info`, the card), config/split lists and sizes
from the viewer endpoints, and the data files of the chosen split from `datasets`' own resolver
(`load_dataset_builder`, which understands card `configs:` and the default file patterns) so our
choice of files matches what `load_dataset` would read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq

from adapters.infer.accounting import proposed_drops
from adapters.infer.detect import DEFAULT_TARGET_PATTERNS, Detected, detect, guess_category, names_target
from adapters.infer.trial import spec_data
from adapters.map.apply import RowError, RowMapper
from adapters.read.capped import unmatched_data_files
from adapters.read.card_configs import evaluation_names
from adapters.read.source import download, iter_raw_rows
from adapters.spec import AdapterSpec, GoldenExample, SourceSpec
from catalog.db import Catalog
from catalog.errors import DraftsetError
from catalog.hub import HubClient
from catalog.isolate import run_isolated
from catalog.limits import MAX_CARD_BYTES, LimitExceeded
from catalog.untrusted import check_card, shell_word

METADATA_CONFIGS = ("metadata", "meta", "raw")
N_GOLDEN = 3


class AdapterRefused(DraftsetError):
    """A dataset refused by name (plain text, no text, unsupported files): not an inference failure."""

    def __init__(self, verdict: str, message: str):
        super().__init__(message, hint="nothing to adapt: reject it in review, or pick another dataset")
        self.verdict = verdict


@dataclass
class Proposal:
    spec: AdapterSpec
    reasons: dict[str, str]
    role_counts: dict[str, int]
    needs_review: list[str] = field(default_factory=list)
    json_strings: list[str] = field(default_factory=list)


def _viewer(viewer_base: str, path: str, repo_id: str, token: str | None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        resp = httpx.get(f"{viewer_base}/{path}", params={"dataset": repo_id}, headers=headers, timeout=30)
    except httpx.HTTPError as exc:
        raise DraftsetError(
            f"dataset viewer at {viewer_base} unreachable: {type(exc).__name__}",
            hint="check DRAFTSET_VIEWER_URL / HF_ENDPOINT (local: draftset hub serve tests/fixtures/hub)",
        ) from exc
    if resp.status_code != 200:
        raise DraftsetError(
            f"viewer /{path} for {repo_id} answered {resp.status_code}: {resp.text[:200]}",
            hint="gated datasets need HF_TOKEN; otherwise the dataset may be unreadable",
        )
    return resp.json()


def _config_splits(repo_id: str, revision: str, viewer_base: str, token: str | None) -> list[tuple[str, str]]:
    """(config, split) pairs from the viewer; from `datasets` when the viewer cannot serve this dataset."""
    try:
        return [(s["config"], s["split"]) for s in _viewer(viewer_base, "splits", repo_id, token)["splits"]]
    except DraftsetError:
        # `datasets` may read the data files with pyarrow to find splits: a hostile file can segfault
        # libarrow, so this runs in an isolated child process (one clear error, never exit 139).
        try:
            return run_isolated(
                _datasets_config_splits,
                repo_id,
                revision,
                token,
                what=f"listing the configs/splits of {repo_id} with `datasets`",
            )
        except DraftsetError as exc:
            raise DraftsetError(
                f"cannot list the configs/splits of {repo_id}: {exc}",
                # a crash, the time or the memory limit blames the files, not the card
                hint=exc.hint or "check the dataset card's `configs:` and that its data files exist",
            ) from None


def _datasets_config_splits(repo_id: str, revision: str, token: str | None) -> list[tuple[str, str]]:
    import datasets

    return [
        (c, s)
        for c in datasets.get_dataset_config_names(repo_id, revision=revision, token=token)
        for s in datasets.get_dataset_split_names(repo_id, c, revision=revision, token=token)
    ]


def choose_config(
    configs: list[str], rows: dict[str, int], evaluation: dict[str, str] | None = None
) -> tuple[str, str, bool]:
    """(config, why, guessed): default, else `all`, else the largest data config; never one the card calls an
    evaluation set (adapters/read/card_configs.py), nor `all` when it would hold one."""
    evaluation = evaluation or {}
    if len(configs) == 1:
        return configs[0], f"the only config ({configs[0]!r})", False
    data = [c for c in configs if c.lower() not in METADATA_CONFIGS] or configs
    passed = [c for c in data if c in evaluation]
    if passed:
        data = [c for c in data if c not in evaluation and c != "all"]  # `all` is the union: it holds them
        if not data:
            raise DraftsetError(
                f"every config of {configs} is an evaluation set by the card: "
                + "; ".join(f"{c}: {evaluation[c]}" for c in passed),
                hint="an evaluation set is never trained on: pick another dataset",
            )
    note = (
        ("; passed over as evaluation sets: " + "; ".join(f"{c!r} ({evaluation[c]})" for c in passed)) if passed else ""
    )
    for name in ("default", "all"):
        if name in data:
            return (
                name,
                f"{name!r} chosen among {configs}" + (" (the union of the others)" if name == "all" else "") + note,
                name != "default" or bool(passed),
            )
    best = max(data, key=lambda c: (rows.get(c, 0), -data.index(c)))
    return best, f"largest config among {configs} ({rows.get(best, 0)} rows){note}", True


def choose_split(
    splits: list[str], rows: dict[str, int], evaluation: dict[str, str] | None = None
) -> tuple[str, str, bool]:
    """(split, why, guessed): train, else a train-like (sft first), else the largest that is not an evaluation
    split by its name or the card."""
    if "train" in splits:
        return "train", "the `train` split", False
    trainish = sorted((s for s in splits if "train" in s.lower()), key=lambda s: ("sft" not in s.lower(), len(s)))
    if trainish:
        return trainish[0], f"no `train` split; {trainish[0]!r} is the training split among {splits}", True
    usable = [s for s in splits if s not in (evaluation or {})] or splits
    best = max(usable, key=lambda s: (rows.get(s, 0), -usable.index(s)))
    return best, f"no train-like split; largest of {usable} ({rows.get(best, 0)} rows)", True


def resolve_data_files(repo_id: str, config: str, split: str, revision: str, token: str | None) -> list[str]:
    """Repo-relative data files of (config, split) as `datasets` resolves them."""
    import datasets  # heavy import, only needed when proposing

    try:
        builder = datasets.load_dataset_builder(repo_id, name=config, revision=revision, token=token)
    except Exception as exc:  # datasets raises many types for unresolvable repos
        gated = "gated" in str(exc).lower()
        raise DraftsetError(
            f"cannot resolve the data files of {repo_id} ({config}/{split}): {exc}",
            hint="set HF_TOKEN (gated dataset: accept its terms on the Hub first)"
            if gated
            else "check that the config and split exist in the card's `configs:`",
        ) from exc
    files = (builder.config.data_files or {}).get(split) or []
    marker = f"{repo_id}@{revision}/"
    return sorted({str(f).split(marker, 1)[-1] for f in files})


def _spec_data(d: Detected, source: SourceSpec, mode: str, category: str) -> dict[str, Any]:
    return spec_data(d, source.model_dump(), mode, category)


def _pin_golden(spec: AdapterSpec, rows: list[tuple[int, dict[str, Any]]]) -> list[GoldenExample]:
    """Three rows spread over the sample (first, middle, last that apply) with their current output."""
    mapper, ok = RowMapper(spec), []
    for index, row in rows:
        try:
            ok.append((index, row, [r.model_dump(mode="json") for r in mapper.apply(index, row)]))
        except RowError:
            continue
    picks = sorted({0, len(ok) // 2, len(ok) - 1}) if ok else []
    return [GoldenExample(row_index=ok[i][0], row=ok[i][1], expected=ok[i][2]) for i in picks[:N_GOLDEN]]


def _check_card(repo_id: str, info: Any, endpoint: str, token: str | None) -> None:
    """The card under our limits before `datasets` parses it with a plain yaml.safe_load (a 414-byte
    alias bomb got propose OOM-killed at 21 GB). A card that cannot be fetched is left to `datasets`."""
    if "README.md" not in {s.rfilename for s in info.siblings or []}:
        return
    try:
        path = HubClient(endpoint, token).download(repo_id, "README.md", info.sha)
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CARD_BYTES + 1)
    except (DraftsetError, OSError):
        return
    try:
        check_card(raw, f"the card of {repo_id}")
    except LimitExceeded as exc:
        raise DraftsetError(
            f"refused {repo_id}: {exc}",
            hint="the card's YAML is hostile or broken; reject this dataset "
            f"(draftset adapters reject {shell_word(repo_id)} --note ...)",
        ) from None


def propose_adapter(
    repo_id: str,
    *,
    endpoint: str,
    viewer_base: str,
    token: str | None = None,
    catalog: Catalog | None = None,
    sample_rows: int = 300,
    category: str | None = None,
    target_patterns: tuple[str, ...] = DEFAULT_TARGET_PATTERNS,
    llm: tuple[Any, str] | None = None,
) -> Proposal:
    """Infer a spec for `repo_id` at its current revision. Nothing is stored (see adapters.review.store).

    `llm` = (openai client, model): when structure cannot decide, the model may propose the reading."""
    info = HubClient(endpoint, token).dataset_info(repo_id)  # probe first; gated/missing/dead: one clear error
    _check_card(repo_id, info, endpoint, token)
    if not info.sha:  # as HubClient.revision: nothing can be pinned without it
        raise DraftsetError(
            f"the Hub at {endpoint} gave no revision for {repo_id}",
            hint="retry; if it persists, check the server log",
        )
    pairs = _config_splits(repo_id, info.sha, viewer_base, token)
    if not pairs:
        raise DraftsetError(f"{repo_id} has no readable config/split", hint="the dataset may be empty or broken")
    try:
        sizes = _viewer(viewer_base, "size", repo_id, token)["size"]
        config_rows = {c["config"]: c["num_rows"] for c in sizes.get("configs", [])}
        split_rows = {(s["config"], s["split"]): s["num_rows"] for s in sizes.get("splits", [])}
    except DraftsetError:
        config_rows, split_rows = {}, {}  # sizes only break ties; their absence is not an error
    siblings = [f.rfilename for f in info.siblings or []]
    readme = _card_text(repo_id, info.sha, siblings, endpoint, token)  # the card decides what is evaluation data
    card_data = info.card_data.to_dict() if info.card_data is not None else {}
    names = list(dict.fromkeys(c for c, _ in pairs))
    config, config_why, config_guess = choose_config(names, config_rows, evaluation_names(names, readme, card_data))
    splits = [s for c, s in pairs if c == config]
    split, split_why, split_guess = choose_split(
        splits, {s: split_rows.get((config, s), 0) for s in splits}, evaluation_names(splits, readme, card_data)
    )
    files = resolve_data_files(repo_id, config, split, info.sha, token)
    if not files:
        raise DraftsetError(f"{repo_id} ({config}/{split}) has no data files", hint="pick another dataset")
    source = SourceSpec(repo_id=repo_id, revision=info.sha, config=config, split=split, data_files=files)

    card = ""
    if info.card_data is not None:
        card = str(info.card_data.to_dict()) + " " + str(getattr(info, "description", "") or "")
    card += " " + readme
    d, rows, why_rows = _detection(repo_id, source, catalog, endpoint, token, sample_rows, card, files)
    if d.layout is None and d.refusal is None and llm is not None and rows:
        from adapters.infer.llm_spec import propose_with_llm

        proposed = propose_with_llm(
            [row for _, row in rows], d.reasons.get("layout", "no layout"), client=llm[0], model=llm[1]
        )
        if proposed is not None:  # only the contract decides whether the model's reading stands
            d = proposed
    d.reasons["source.revision"] = f"pinned to the current revision {info.sha[:12]}"
    d.reasons["source.config"], d.reasons["source.split"] = config_why, split_why
    d.reasons["source.data_files"] = f"{len(files)} file(s) as `datasets` resolves {config}/{split}"
    if skipped := unmatched_data_files([f.rfilename for f in info.siblings or []], files):  # never silently
        d.reasons["source.data_files"] += f"; {skipped}"
        d.needs_review.append("source.data_files")
    d.reasons["sample"] = why_rows
    d.needs_review += [f for f, g in (("source.config", config_guess), ("source.split", split_guess)) if g]
    return build_proposal(d, rows, source, card, catalog=catalog, category=category, target_patterns=target_patterns)


def _detection(
    repo_id: str,
    source: SourceSpec,
    catalog: Catalog | None,
    endpoint: str,
    token: str | None,
    sample_rows: int,
    card: str,
    files: list[str],
) -> tuple[Detected, list[tuple[int, dict]], str]:
    """What find detected for this (revision, config, split) when it stored it; else sample and detect."""
    stored = stored_detection(catalog, source) if catalog is not None else None
    raw = [r for r in iter_raw_rows(source, endpoint=endpoint, token=token, sample=sample_rows)]
    rows: list[tuple[int, dict[str, Any]]] = [(r.row_index, r.row) for r in raw if r.row is not None]
    if stored is not None and (stored[0].layout is not None or stored[0].refusal is not None):
        d = stored[0]
        why = (
            f"detected by find on {d.n_rows} row(s) of {source.config}/{source.split} at this revision (catalog "
            f"`schemas`); {len(rows)} rows sampled across {len(files)} file(s) complete the role vocabulary"
        )
        return complete_vocabulary(d, [row for _, row in rows]), rows or list(enumerate(stored[1])), why
    sampled: list[dict[str, Any]] = [row for _, row in rows if row is not None]
    d = detect(sampled or _schema_rows(source, endpoint, token), card_text=card, file_names=files)
    if not raw:  # placeholder labels are not a vocabulary: leave the role map empty
        d.fields["role_map"], d.role_counts = {}, {}
        d.needs_review = [f for f in d.needs_review if not f.startswith("role_map.")]
        d.reasons = {k: v for k, v in d.reasons.items() if not k.startswith("role_map.")}
        if d.layout is not None:
            d.reasons["layout"] += " (no rows: detected from the file schema only; the contract will fail)"
    why = f"{len(raw)} rows sampled evenly across {len(files)} file(s), {len(raw) - len(rows)} malformed"
    return d, rows, why


def complete_vocabulary(d: Detected, rows: list[dict[str, Any]]) -> Detected:
    """find saw a few first rows; labels that only occur later (a `system` turn in row 40) are mapped by the same
    rules from the wider sample, so starting from find's detection never leaves a label unmapped for nothing."""
    from adapters.infer.roles import infer_role_map
    from adapters.map.structure import decoded, get

    role_key, content_key, path = d.fields.get("role_key"), d.fields.get("content_key"), d.fields.get("messages_path")
    if not (rows and role_key and content_key and path and d.layout in ("messages", "trajectory")):
        return d
    lists = [v for v in (decoded(get(r, path))[0] for r in rows) if isinstance(v, list)]
    turns = [t for lst in lists for t in lst if isinstance(t, dict)]
    if not turns:
        return d
    wider = Detected()
    infer_role_map(wider, turns, lists, role_key, content_key)
    known = dict(d.fields.get("role_map", {}))
    for label, role in wider.fields.get("role_map", {}).items():
        if label not in known:
            known[label] = role
            d.reasons[f"role_map.{label}"] = wider.reasons.get(
                f"role_map.{label}", f"{label!r} first seen in the wider sample"
            )
    for key in wider.needs_review:
        if key.startswith("role_map.") and key.removeprefix("role_map.") not in d.fields.get("role_map", {}):
            d.reasons.setdefault(key, wider.reasons.get(key, ""))
            if key not in d.needs_review:
                d.needs_review.append(key)
    d.fields["role_map"] = known
    d.role_counts = wider.role_counts
    return d


def stored_detection(catalog: Catalog, source: SourceSpec) -> tuple[Detected, list[dict[str, Any]]] | None:
    """find's detection and sample rows for exactly this revision, config and split, if it stored them."""
    if not catalog.path.exists():
        return None
    try:
        hit = catalog.query(
            "SELECT detected, sample_rows FROM schemas WHERE repo_id = ? AND revision = ? "
            "AND config = ? AND split = ? AND detected IS NOT NULL",
            [source.repo_id, source.revision, source.config, source.split],
        )
    except Exception:  # a catalog from before migration 0020 has no `detected` column
        return None
    if not hit:
        return None
    detected, rows = hit[0]["detected"], hit[0]["sample_rows"]
    detected = json.loads(detected) if isinstance(detected, str) else detected
    rows = json.loads(rows) if isinstance(rows, str) else rows
    return Detected.from_json(detected), [r for r in rows or [] if isinstance(r, dict)]


def build_proposal(
    d: Detected,
    rows: list[tuple[int, dict[str, Any]]],
    source: SourceSpec,
    card: str,
    *,
    catalog: Catalog | None = None,
    category: str | None = None,
    target_patterns: tuple[str, ...] = DEFAULT_TARGET_PATTERNS,
) -> Proposal:
    """A spec from a detection (no Hub access): mode, category, golden rows. Refusals raise AdapterRefused."""
    repo_id = source.repo_id
    if d.refusal is not None:
        raise AdapterRefused(d.refusal, f"{repo_id} refused: {d.reasons['layout']}")
    if d.layout is None:
        raise DraftsetError(
            f"cannot infer an adapter for {repo_id}: {d.reasons.get('layout', 'no layout')}",
            hint="not a conversation or instruction dataset; reject it or write the spec by hand",
        )
    native_why = names_target(card, [row for _, row in rows], target_patterns)
    mode = "native" if native_why else "regenerate"
    d.reasons["mode"] = native_why or "no mention of the target model family: the target regenerates answers"
    if mode == "native" and "candidates" in d.fields:  # which candidate the target wrote is not known
        mode = "regenerate"
        d.reasons["mode"] = (
            f"{native_why}, but rows hold several candidate answers: the target regenerates (set candidates.policy: "
            "best and mode: native to train the best-ranked or winning answer)"
        )
        d.needs_review.append("mode")
    prompts_alone = d.layout == "columns" and not d.fields["columns"].get("response") and "candidates" not in d.fields
    if mode == "native" and prompts_alone:  # no answer in the rows: nothing the target wrote to train on
        mode = "regenerate"
        d.reasons["mode"] = f"{native_why}, but the rows hold prompts alone: the target regenerates the answers"
    if "label_field" in d.fields and mode == "native":
        d.fields["min_yield"] = 0.3
        d.reasons["min_yield"] = "labelled data: undesirable answers are refused row by row, so fewer rows yield"
    if category is None and catalog is not None and catalog.path.exists():
        hit = catalog.query("SELECT category FROM candidates WHERE repo_id = ?", [repo_id])
        category = hit[0]["category"] if hit and hit[0]["category"] else None
        if category:
            d.reasons["category"] = f"from the find ranking ({category})"
    if category is None:
        category = guess_category(d, mode)
        d.reasons["category"] = f"no find result: guessed {category!r} from the detected shape"
        d.needs_review.append("category")
    spec = AdapterSpec.from_data(
        {
            **_spec_data(d, source, mode, category),
            "reasons": d.reasons,
            "needs_review": list(dict.fromkeys(d.needs_review)),
        },
        where=f"proposed for {repo_id}",
    )
    # unread metadata, by name, beside detection's own decisions (candidates under policy regenerate); substantial
    # text is left to fail
    spec.drop = {**(spec.drop or {}), **proposed_drops(spec, rows)} or None
    if spec.drop:
        spec.reasons["drop"] = f"{len(spec.drop)} unread field(s) of metadata or short values, each with its reason"
    spec.golden = _pin_golden(spec, rows)
    return Proposal(
        spec=spec,
        reasons=d.reasons,
        role_counts=d.role_counts,
        needs_review=d.needs_review,
        json_strings=d.json_strings,
    )


def _example(value_type: pa.DataType, name: str) -> Any:
    """A placeholder value of an Arrow type (strings carry their field name): shape without data."""
    if pa.types.is_struct(value_type):
        return {f.name: _example(f.type, f.name) for f in value_type}
    if pa.types.is_list(value_type) or pa.types.is_large_list(value_type):
        return [_example(value_type.value_type, name)]
    if pa.types.is_string(value_type) or pa.types.is_large_string(value_type):
        return name
    return None


def _schema_rows(source: SourceSpec, endpoint: str, token: str | None) -> list[dict[str, Any]]:
    """For a dataset with no rows: one placeholder row from the parquet schema, so the layout is known."""
    first = source.data_files[0]
    if not first.endswith(".parquet"):
        return []
    try:
        schema = pq.read_schema(download(source, first, endpoint=endpoint, token=token))
    except (pa.ArrowException, OSError):  # a truncated or corrupt footer: no schema to learn from
        return []
    return [{f.name: _example(f.type, f.name) for f in schema}]


def _card_text(repo_id: str, revision: str, siblings: list[str], endpoint: str, token: str | None) -> str:
    """The README body (untrusted text: only searched for the target's name, never executed).

    A repo without a README has no card (""); a README that exists but cannot be fetched is an error,
    not an empty card, or a target-native dataset would silently be proposed for regeneration.
    """
    if "README.md" not in siblings:
        return ""
    path = HubClient(endpoint, token).download(repo_id, "README.md", revision)
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read(200_000)
