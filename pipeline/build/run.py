"""`draftset build MIX`: conversations → token rows with loss masks, plus the draft vocabulary.

Writes `data/build/<MIX>/rows-*.parquet`, `vocab.safetensors` and `manifest.json`. Resumes by
conversation id: shards already written are kept, their conversations skipped, and the vocabulary
and manifest are recomputed over all shards at the end.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from catalog.home import Home
from catalog.shards import ParquetShardWriter, shard_paths
from pipeline.build.config import RECOMPUTED_AT_END, BuildConfig
from pipeline.build.inputs import BuildInput, Source, resolve_input
from pipeline.build.render import (
    MaskBuilder,
    NotPrefixStable,
    TokenRow,
    template_messages,
    template_tools,
    trainable_turns,
)
from pipeline.build.vocab import coverage, draft_vocab, save_vocab, token_counts
from pipeline.rows.codec import BadRow, read_row
from pipeline.stage import Stage, StageRun, field_default
from pipeline.target.template import RENDER_ERRORS, chat_template_sha256
from pipeline.target.tokenizer import load_chat_tokenizer

ROW_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("conversation_id", pa.string()),
        ("turn", pa.int64()),
        ("input_ids", pa.list_(pa.int32())),
        ("loss_mask", pa.list_(pa.int8())),
        ("n_tokens", pa.int64()),
        ("n_trainable", pa.int64()),
        ("truncated", pa.bool_()),
    ]
)


@dataclass
class BuildResult:
    out_dir: Path
    manifest: dict[str, Any]
    counts: dict[str, int]


def _target_vocab_size(model_dir: Path, tokenizer: Any) -> int:
    config = json.loads((model_dir / "config.json").read_text()) if (model_dir / "config.json").is_file() else {}
    return int(config.get("vocab_size") or config.get("text_config", {}).get("vocab_size") or len(tokenizer))


def _truncate(row: TokenRow, max_length: int) -> bool:
    if len(row.input_ids) <= max_length:
        return False
    row.input_ids, row.loss_mask = row.input_ids[:max_length], row.loss_mask[:max_length]
    return True


def _convert(
    record: dict[str, Any], inp: BuildInput, builder: MaskBuilder, cfg: BuildConfig, run: StageRun
) -> list[dict[str, Any]]:
    """Rows of one conversation (or [] after a counted, quarantined drop)."""
    rid = record.get("id")
    where = {"id": rid, "input": inp.kind}
    if not rid:
        run.drop("invalid_conversation", where | {"field": "id"}, detail="row has no id")
        return []
    try:
        conv = read_row(record)
    except BadRow as bad:
        run.drop("invalid_conversation", where | {"field": bad.field}, detail=str(bad)[:500])
        return []
    if inp.kind == "mix" and conv.mode == "regenerate":
        run.drop(
            "not_regenerated",
            where,
            detail="regenerate-mode row read from the mix: its answers are not "
            "the target's; run `draftset regenerate` first",
        )
        return []
    messages = template_messages(conv, cfg.system_prompt)
    turns = trainable_turns(conv.messages, offset=len(messages) - len(conv.messages))
    if not turns:
        run.drop("no_assistant_turn", where, detail="no assistant turn to train on")
        return []
    try:
        token_rows = builder.rows(messages, turns, per_turn=cfg.per_turn, tools=template_tools(conv))
    except NotPrefixStable as exc:  # a property of the template, not of this row: stop the whole build
        src = conv.source
        raise NotPrefixStable(
            f"row {conv.id} ({src.repo_id} {src.config}/{src.split} row {src.row_index}): {exc}", hint=exc.hint
        ) from None
    except RENDER_ERRORS as exc:  # the row does not fit the template (bad tool call…)
        run.drop("template_error", where | {"field": "messages"}, detail=str(exc)[:500])
        return []
    out = []
    for token_row in token_rows:
        # Keyed by the input row's id (what resume compares), not the id inside the JSON.
        row_id = rid if token_row.turn is None else f"{rid}#t{token_row.turn}"
        truncated = _truncate(token_row, cfg.max_length)
        if truncated:
            run.tally("truncated")
        if token_row.n_trainable == 0:
            run.drop(
                "no_trainable_tokens",
                where | {"row": row_id, "turn": token_row.turn},
                detail=f"no answer token within max_length {cfg.max_length}",
            )
            continue
        out.append(
            {
                "id": row_id,
                "conversation_id": rid,
                "turn": token_row.turn,
                "input_ids": token_row.input_ids,
                "loss_mask": token_row.loss_mask,
                "n_tokens": len(token_row.input_ids),
                "n_trainable": token_row.n_trainable,
                "truncated": truncated,
            }
        )
    return out


class BuildStage(Stage[BuildConfig]):
    """Resumes by conversation id; the vocabulary and manifest are recomputed over every shard at the end."""

    name = "build"
    config_model = BuildConfig
    resume_key = "conversation_id"
    shard_prefix = "rows"
    recomputed = frozenset(RECOMPUTED_AT_END)
    fresh_flag = "--overwrite"

    def __init__(
        self,
        config: BuildConfig,
        out_dir: Path,
        catalog: Any | None,
        *,
        inp: BuildInput,
        tokenizer: Any,
        fresh: bool,
        on_progress: Callable[[int, int], None],
    ):
        super().__init__(config, out_dir, catalog, fresh=fresh)
        self.inp, self.tokenizer, self.on_progress = inp, tokenizer, on_progress

    def inputs(self) -> list[Path]:
        return [self.inp.directory]

    def upstream_manifest(self, folder: Path) -> dict[str, Any] | None:
        return self.inp.manifest()

    def rows(self) -> Iterable[dict[str, Any]]:
        return self.inp.rows()

    def process(self, rows: Iterable[dict[str, Any]], run: StageRun) -> dict[str, Any]:
        cfg = self.config
        builder = MaskBuilder(
            self.tokenizer,
            thinking=cfg.thinking,
            end_of_turn=cfg.end_of_turn,
            keep_past_reasoning=cfg.keep_past_reasoning,
        )
        total = self.inp.count()
        with ParquetShardWriter(self.work_dir, ROW_SCHEMA, prefix="rows", rows_per_shard=cfg.rows_per_shard) as writer:
            for n, record in enumerate(rows, start=1):
                run.seen()
                if record.get("id") in self.done:
                    run.skipped("already_built")
                else:
                    converted = _convert(record, self.inp, builder, cfg, run)
                    writer.write_many(converted)
                    run.emitted(len(converted))
                self.on_progress(n, total)
        return _finish(self.work_dir, cfg, self.inp, Path(cfg.model_dir), self.tokenizer)


def run_build(
    home: Path,
    mix: str,
    *,
    model_dir: Path,
    catalog: Any | None = None,
    source: Source = "auto",
    max_length: int = field_default(BuildConfig, "max_length"),
    per_turn: bool = field_default(BuildConfig, "per_turn"),
    draft_vocab_size: int = field_default(BuildConfig, "draft_vocab_size"),
    system_prompt: str | None = None,
    thinking: bool | None = None,
    keep_past_reasoning: bool = field_default(BuildConfig, "keep_past_reasoning"),
    end_of_turn: str = field_default(BuildConfig, "end_of_turn"),
    rows_per_shard: int = field_default(BuildConfig, "rows_per_shard"),
    overwrite: bool = False,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
) -> BuildResult:
    inp = resolve_input(Path(home), mix, source)
    model_dir = Path(model_dir).resolve()
    tokenizer = load_chat_tokenizer(model_dir)
    if thinking is None:  # train in the thinking mode the answers were generated (and will be served) in
        inherited = inp.setting("thinking")
        thinking = True if inherited is None else bool(inherited)
    cfg = BuildConfig(
        mix=mix,
        model_dir=str(model_dir),
        chat_template_sha256=chat_template_sha256(tokenizer),
        source=str(inp.directory),
        max_length=max_length,
        per_turn=per_turn,
        draft_vocab_size=draft_vocab_size,
        system_prompt=system_prompt,
        thinking=thinking,
        keep_past_reasoning=keep_past_reasoning,
        end_of_turn=end_of_turn,
        rows_per_shard=rows_per_shard,
    )
    stage = BuildStage(
        cfg, Home(home).build(mix), catalog, inp=inp, tokenizer=tokenizer, fresh=overwrite, on_progress=on_progress
    )
    result = stage.run()
    return BuildResult(result.out_dir, result.manifest, result.counts)


def _finish(out: Path, cfg: BuildConfig, inp: BuildInput, model_dir: Path, tokenizer: Any) -> dict[str, Any]:
    """Vocabulary and manifest over every shard (this run's and earlier ones')."""
    shards = shard_paths(out, "rows")
    if not shards:
        return {}  # nothing built: the stage run raises ZeroOutput with the drop reasons
    vocab_size = _target_vocab_size(model_dir, tokenizer)
    counts = token_counts(shards, vocab_size)
    k = min(cfg.draft_vocab_size, vocab_size)
    d2t, t2d = draft_vocab(counts, k)
    save_vocab(out / "vocab.safetensors", d2t, t2d, counts)
    sizes = [pq.read_table(p, columns=["n_tokens", "n_trainable"]) for p in shards]
    manifest = {
        "mix": cfg.mix,
        "model_dir": cfg.model_dir,
        "source": cfg.source,
        # False when regeneration had not finished every row: the build holds only what was there.
        "source_complete": inp.stage_value("complete", "manifest.json") is not False,
        "chat_template_sha256": cfg.chat_template_sha256,
        "end_of_turn": cfg.end_of_turn,
        "end_of_turn_id": tokenizer.convert_tokens_to_ids(cfg.end_of_turn),
        "system_prompt": cfg.system_prompt,
        "system_prompt_policy": "as in the data" if cfg.system_prompt is None else "injected when missing",
        "thinking": cfg.thinking,
        "max_length": cfg.max_length,
        "rows": "one per assistant turn" if cfg.per_turn else "all turns in one row",
        "past_reasoning": "kept" if cfg.keep_past_reasoning or not cfg.per_turn else "dropped from context",
        "vocab_size": vocab_size,
        "draft_vocab_size": k,
        "draft_vocab_coverage": round(coverage(counts, t2d), 6),
        "n_rows": sum(t.num_rows for t in sizes),
        "n_tokens": sum(int(pc.sum(t["n_tokens"]).as_py() or 0) for t in sizes),
        "n_trainable": int(counts.sum()),
        "shards": [p.name for p in shards],
    }
    return manifest  # the base writes it, with run_id, config, counts and the upstream manifest
