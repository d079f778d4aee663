"""The `regenerate` stage: stream a mix, answer its prompts with the target, store every row once.

Accounting (checked by the tests after kill -9 and restart): every input id ends in exactly one of
results shards (regenerated, or native rows passed through unchanged: build needs them), errors.jsonl
or skipped.jsonl, so results + errors + skipped == input with unique ids. Memory stays bounded: rows
are read batch by batch and each partition's queue holds at most twice its concurrency.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from adapters.records import Conversation
from catalog.errors import DraftsetError, Interrupted
from catalog.home import Home
from catalog.io import write_json_atomic
from pipeline.regenerate import source
from pipeline.regenerate.client import EndpointPool, Reply, RequestFailed, over_max_tokens
from pipeline.regenerate.config import Partition, RegenConfig
from pipeline.regenerate.conversation import (
    Skip,
    length_function,
    regenerate,
)
from pipeline.regenerate.progress import RegenProgress
from pipeline.regenerate.sharding import claim, sibling_dirs, write_mix_manifest
from pipeline.regenerate.store import GENERATION_FILE, RegenStore, recover, totals
from pipeline.rows.codec import BadRow, read_row
from pipeline.stage import AsyncStage, StageRun

# What the producer hands a partition's workers: a row to answer, or None (no more rows).
_Work = tuple[Conversation, dict[str, Any], Partition]
_WorkQueue = asyncio.Queue[_Work | None]


@dataclass
class RegenResult:
    run_id: str
    counts: dict[str, int]
    totals: dict[str, int]
    input_rows: int
    out_dir: Path
    mix_manifest: dict[str, Any] | None = None  # sharded runs: the manifest over all shards
    endpoints: list[dict[str, Any]] | None = None  # per endpoint: requests, failures, failures_by_reason


def regen_dir(home: Path, mix: str) -> Path:
    return Home(home).regen(mix)


@contextmanager
def _exclusive(out_dir: Path, mix: str) -> Iterator[None]:
    """One writer per output folder (a mix, or one shard of it): two would answer the same ids twice."""
    with (out_dir / ".lock").open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise DraftsetError(
                f"another `draftset regenerate {mix}` is already writing {out_dir}",
                hint="watch it with `draftset status`, or wait for it to finish",
            ) from exc
        yield  # the lock dies with the process, so kill -9 never leaves it stuck


def run_regenerate(
    config: RegenConfig,
    home: Path,
    catalog: Any | None = None,
    *,
    show_progress: bool = True,
    console: Console | None = None,
) -> RegenResult:
    shards = source.mix_shards(home, config.mix)
    mix_dir = regen_dir(home, config.mix)
    out_dir = claim(mix_dir, config.shard, config.mix)
    with _exclusive(out_dir, config.mix):
        stage = RegenStage(
            config,
            shards,
            out_dir,
            catalog,
            mix_dir=Home(home).mix(config.mix),
            show_progress=show_progress,
            console=console,
        )
        try:
            done = asyncio.run(stage.run())
        except KeyboardInterrupt:  # Ctrl-C: asyncio.run cancelled the run, which wrote what was answered
            raise interrupted(config, out_dir, stage) from None
    result = RegenResult(done.run_id, done.counts, done.manifest["totals"], stage.total, out_dir)
    result.endpoints = done.manifest.get("requests")
    if config.shard:
        result.mix_manifest = write_mix_manifest(mix_dir, config.shard, config.mix)
    return result


def interrupted(config: RegenConfig, out_dir: Path, stage: RegenStage) -> Interrupted:
    """The one line for a Ctrl-C: what is on disk (kept) and how to go on."""
    t = totals(out_dir)
    total = getattr(stage, "total", None)
    of = f" of {total:,} input rows" if total is not None else ""
    again = f" --shard {config.shard.label}" if config.shard else ""
    return Interrupted(
        f"regenerate {config.mix}{again} interrupted (Ctrl-C): {t['results']:,} results, {t['errors']:,} errors and "
        f"{t['skipped']:,} skipped{of} are on disk in {out_dir}; requests in flight were abandoned",
        hint=f"run `draftset regenerate {config.mix}{again}` again with the same settings: it resumes by id",
    )


def _request_seed(seed: int | None, row_id: str, turn: int) -> int | None:
    if seed is None:
        return None
    return int.from_bytes(hashlib.sha1(f"{seed}|{row_id}|{turn}".encode()).digest()[:4], "big") >> 1


def _usage_sum(turns: list[dict[str, Any]], key: str) -> int:
    return sum(int(t["usage"].get(key) or 0) for t in turns)


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    leaves: list[BaseException] = []
    pending = [group]
    while pending:
        for exc in pending.pop().exceptions:
            if isinstance(exc, BaseExceptionGroup):
                pending.append(exc)
            else:
                leaves.append(exc)
    return next((e for e in leaves if isinstance(e, DraftsetError)), leaves[0])


class RegenStage(AsyncStage[RegenConfig]):
    """One output folder (a mix, or one shard of it): every input id ends in results, errors or skipped once.

    Resume by id over all three journals (`recover`); compatible on the sampling settings, across the
    shards of a split too (one output from one configuration); forwards the mix's manifest."""

    name = "regenerate"
    config_model = RegenConfig
    resume_key = "id"

    def __init__(
        self,
        config: RegenConfig,
        shards: list[Path],
        out_dir: Path,
        catalog: Any | None,
        *,
        mix_dir: Path,
        show_progress: bool = True,
        console: Console | None = None,
    ):
        super().__init__(config, out_dir, catalog)
        self.shards, self.mix_dir = shards, mix_dir  # the input: the mix's manifest is forwarded in this run's
        self.show_progress, self.console = show_progress, console
        self.n_endpoints = len(config.endpoints)
        self.owns = config.shard.owns if config.shard else None
        self.siblings = sibling_dirs(out_dir.parent, config.shard)  # one split, one set of settings
        self._measure = length_function(config.length_unit, config.tokenizer)
        self.stopping = False  # Ctrl-C: no worker takes another row or sends another request

    # -- what the base asks ----------------------------------------------------------------------
    def inputs(self) -> list[Path]:
        return [self.mix_dir]

    def rows(self) -> Iterator[tuple[Path, int, dict[str, Any]]]:
        return source.iter_rows(self.shards, self.config.max_rows, self.owns)

    def outputs(self) -> list[str]:
        return [p.name for p in sorted(self.out_dir.glob("results-*.parquet"))]

    def already_done(self) -> set[str]:
        done = recover(self.out_dir, retry_errors=self.config.retry_errors)  # also repairs cut journals
        return set().union(*done.values())

    def compat_key(self) -> dict[str, Any]:
        return self.config.sampling()

    def previous_keys(self) -> list[tuple[Path, dict[str, Any]]]:
        own = self.out_dir / GENERATION_FILE
        earlier = [own] if own.exists() and self.done else []
        earlier += [d / GENERATION_FILE for d in self.siblings if (d / GENERATION_FILE).exists()]
        return [(path.parent, json.loads(path.read_text())) for path in earlier]

    def incompatible(self, folder: Path, changed: list[tuple[str, Any, Any]]) -> DraftsetError:
        held = f"{len(self.done)} rows" if folder == self.out_dir else "rows"
        return DraftsetError(
            f"{folder} already holds {held} generated with other settings "
            f"({', '.join(f'{k}: {old} -> {new}' for k, old, new in changed)})",
            hint="resume with the earlier settings, or remove that folder to start again",
        )

    def check_compatible(self) -> bool:
        found = super().check_compatible()
        write_json_atomic(self.out_dir / GENERATION_FILE, self.compat_key())  # what the rows here are made with
        return found

    @asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """The endpoint pool, open for the whole run; the served model's name becomes part of the config."""
        workers_per_endpoint = sum(p.concurrency for p in self.config.partitions)
        api_key = os.environ.get(self.config.api_key_env) or "EMPTY"  # SGLang/dev server need none
        self.pool = EndpointPool(
            self.config.endpoints,
            api_key=api_key,
            retry=self.config.retry,
            max_inflight=workers_per_endpoint,
            connections_per_lane=self.config.connections_per_lane,
        )
        try:
            model = await self.pool.check(self.config.model)
            self.config = self.config.model_copy(update={"model": model})
            yield
        finally:
            await self.pool.aclose()

    async def process(self, rows: Iterable[Any], run: StageRun) -> dict[str, Any]:
        config = self.config
        self.sampling_json = json.dumps(config.sampling(), sort_keys=True)
        self.total = total = source.count_rows(self.shards, config.max_rows, self.owns)
        self.progress = RegenProgress(
            self.out_dir,
            config.mix,
            run.run_id,
            total,
            console=self.console,
            show=self.show_progress,
            shard=config.shard.label if config.shard else None,
            endpoints=self.pool.endpoints,
        )
        state = "failed"
        try:
            with (
                RegenStore(self.out_dir, run.run_id, config.flush_rows, config.flush_seconds) as self.store,
                self.progress,
            ):
                await self._pump(rows)
            state = "finished"
        except asyncio.CancelledError:  # Ctrl-C (asyncio.run cancels the run): the rows answered are written
            state = "interrupted"
            raise
        finally:
            self.progress.tick(state, force=True)
        on_disk = totals(self.out_dir)
        return {
            "mix": config.mix,
            "shard": config.shard.label if config.shard else None,
            "input_rows": total,
            "totals": on_disk,
            "complete": sum(on_disk.values()) >= total,
            "model": config.model,
            "sampling": config.sampling(),
            "endpoints": config.endpoints,
            "requests": [e.stats() for e in self.pool.endpoints],  # attempts and failures by reason, per endpoint
            "results": self.outputs(),
        }

    # -- the pipeline ----------------------------------------------------------------------------
    async def _pump(self, rows: Iterable[tuple[Path, int, dict[str, Any]]]) -> None:
        queues: dict[str, _WorkQueue] = {
            p.name: asyncio.Queue(maxsize=2 * p.concurrency * self.n_endpoints) for p in self.config.partitions
        }
        try:
            async with asyncio.TaskGroup() as group:  # a failing task (full disk) cancels the whole run
                workers = [
                    group.create_task(self._worker(queues[p.name], p))
                    for p in self.config.partitions
                    for _ in range(p.concurrency * self.n_endpoints)
                ]
                ticker = group.create_task(self._ticker())
                try:
                    await self._produce(rows, queues)
                except asyncio.CancelledError:  # before the group cancels the workers: none starts another row
                    self.stopping = True
                    raise
                for partition in self.config.partitions:
                    for _ in range(partition.concurrency * self.n_endpoints):
                        await queues[partition.name].put(None)
                await asyncio.wait(workers)
                ticker.cancel()
        except BaseExceptionGroup as group:  # the user sees the one error that stopped the run, not a group
            raise _first_error(group) from None

    async def _ticker(self) -> None:
        while True:
            self.progress.tick()
            self.store.maybe_flush()
            await asyncio.sleep(0.5)

    async def _produce(self, rows: Iterable[tuple[Path, int, dict[str, Any]]], queues: dict[str, _WorkQueue]) -> None:
        run = self.stage_run
        seen_now: set[str] = set()
        for shard, number, row in rows:
            run.seen()
            row_id = row.get("id")
            where = {"id": row_id, "shard": shard.name, "row": number, "repo_id": row.get("repo_id")}
            if row_id in self.done:
                run.skipped("resumed")
                self.progress.row_done("resumed")
                continue
            if row_id is None or row_id in seen_now:
                run.drop("duplicate_id" if row_id else "null_id", where=where)
                continue
            seen_now.add(row_id)
            conversation = self._parse(row, where)
            if conversation is None:
                continue
            if conversation.mode == "native":
                self._passthrough(conversation, row)
                continue
            length = self._measure(conversation.context_text())  # the one meaning of "prompt length"
            partition = self.config.partition_for(length)
            await queues[partition.name].put((conversation, row, partition))
            await asyncio.sleep(0)  # let workers run between rows of a batch

    def _parse(self, row: dict[str, Any], where: dict[str, Any]) -> Conversation | None:
        try:
            return read_row(row)
        except BadRow as bad:
            self._error(where, str(bad), 0, None)
            return None

    # -- outcomes --------------------------------------------------------------------------------
    def _error(self, where: dict[str, Any], reason: str, attempts: int, last_status: Any) -> None:
        self.store.add_error({**where, "reason": reason, "attempts": attempts, "last_status": last_status})
        self.stage_run.error()
        self.progress.row_done("errors")

    def _passthrough(self, conversation: Conversation, row: dict[str, Any]) -> None:
        self.store.add_result(self._result_row(conversation, row, "native_passthrough", None, []))
        self.stage_run.emitted()
        self.stage_run.tally("native_passthrough")
        self.progress.row_done("results")

    def _result_row(
        self,
        conversation: Conversation,
        row: dict[str, Any],
        origin: str,
        partition: Partition | None,
        turns: list[dict[str, Any]],
    ) -> dict[str, Any]:
        regenerated = origin == "regenerated"
        return {
            "id": conversation.id,
            "repo_id": conversation.source.repo_id,
            "category": conversation.category,
            "mode": conversation.mode,
            "origin": origin,
            "partition": partition.name if partition else None,
            # native rows keep their exact input text: passed through unchanged
            "conversation": conversation.model_dump_json() if regenerated else row["conversation"],
            "turns": json.dumps(turns),
            "model": self.config.model if regenerated else None,
            "sampling": self.sampling_json if regenerated else None,
            "finish_reason": turns[-1]["finish_reason"] if turns else None,
            "prompt_tokens": _usage_sum(turns, "prompt_tokens") if regenerated else None,
            "completion_tokens": _usage_sum(turns, "completion_tokens") if regenerated else None,
            "run_id": self.stage_run.run_id,
        }

    async def _worker(self, queue: _WorkQueue, partition: Partition) -> None:
        # `stopping` as well as the cancellation: a worker whose cancellation got lost (a library that swallows
        # it) would otherwise take row after row, then wait forever for an end-of-rows marker nobody sends.
        while not self.stopping:
            item = await queue.get()
            if item is None:
                return
            await self._answer(*item)

    async def _answer(self, conversation: Conversation, row: dict[str, Any], partition: Partition) -> None:
        config = self.config
        where = {"id": conversation.id, "repo_id": conversation.source.repo_id, "partition": partition.name}

        # The conversation's tool declarations go with every request, so the target sees the tools the
        # replayed calls used and may call them itself.
        tools = [t.model_dump(exclude_none=True) for t in getattr(conversation, "tools", None) or []] or None

        async def ask(context: list[dict[str, Any]], turn: int) -> Reply:
            if self.stopping:  # Ctrl-C between two turns: this row is abandoned and asked again on resume
                raise asyncio.CancelledError
            reply = await self.pool.chat(
                context,
                {
                    "tools": tools,
                    "model": config.model,
                    "max_tokens": partition.max_tokens,
                    "temperature": config.temperature,
                    "top_p": config.top_p,
                    "seed": _request_seed(config.seed, conversation.id, turn),
                    "chat_template_kwargs": {"enable_thinking": config.thinking},
                    "separate_reasoning": config.separate_reasoning,
                },
            )
            self.progress.request_done(int(reply.usage.get("completion_tokens") or 0))
            counter = self._measure if config.length_unit == "tokens" else None
            if (why := over_max_tokens(reply, partition.max_tokens, counter)) is not None:
                raise Skip("over_max_tokens", f"turn {turn}: {why}")  # a server that ignored max_tokens
            return reply

        try:
            answered, turns = await regenerate(
                conversation, ask, thinking=config.thinking, include_length_truncated=config.include_length_truncated
            )
        except Skip as skip:
            self.store.add_skipped({**where, "reason": skip.reason, "detail": skip.detail})
            self.stage_run.counts[f"dropped_{skip.reason}"] += 1
            self.progress.row_done("skipped")
        except RequestFailed as failed:
            self._error(where, failed.reason, failed.attempts, failed.last_status)
        except DraftsetError:
            raise  # full disk and the like stop the run: finished rows are kept and resumed by id
        except Exception as exc:  # one odd row (a bug, a reply we cannot use) must not end a day-long run
            self._error(where, f"unexpected {type(exc).__name__}: {exc}", 0, None)
        else:
            self.store.add_result(self._result_row(answered, row, "regenerated", partition, turns))
            self.stage_run.emitted()
            self.progress.row_done("results")
