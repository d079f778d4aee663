"""The dev server's generation engine: one model, one lock, transformers' `generate` underneath.

CPU generation is serialised (one request at a time holds the lock): with two cores, batching buys
little for a toy model, and a lock makes the per-request seed exact and the KV cache private. On a GPU,
`max_batch` > 1 answers plain requests in batches: static ones (pipeline/servers/devserver/batching.py, the
default) or transformers' continuous batching (`batching="continuous"`, pipeline/servers/devserver/continuous.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.errors import DraftsetError
from pipeline.model.runtime import single_thread
from pipeline.model.template import END_OF_TURN, THINK_END, THINK_START
from pipeline.servers.devserver.errors import RequestError
from pipeline.targets.template import RENDER_ERRORS

if TYPE_CHECKING:
    import torch

    from pipeline.servers.devserver.constrain import Grammars


class Batching(str, Enum):
    """How plain requests share the model when `max_batch` > 1 (`serve-dev --batching`)."""

    static = "static"  # one left-padded `generate` a batch (batching.py)
    continuous = "continuous"  # transformers' ContinuousBatchingManager (continuous.py)


@dataclass(frozen=True)
class SamplingParams:
    max_tokens: int | None
    temperature: float
    top_p: float
    seed: int | None


@dataclass
class Generation:
    completion_ids: list[int]
    finish_reason: str  # "stop" (end-of-turn token) or "length"


STATIC_ROW_BUCKETS = 4  # a static-cache batch's rows go up to a multiple of max_batch / 4
STATIC_WIDTH_STEP = 64  # and its prompt width to a multiple of 64 tokens


class KvCache(str, Enum):
    """The batched path's KV cache. dynamic: transformers' default, grown by a concatenation a step, which copies every
    layer's whole cache each step (memory traffic that grows with batch x positions, on a GPU the bound);
    static: allocated once for the batch's prompt plus its budget, written in place (the same tokens: tested).
    On an H200 (transformers 5.17, B=2,048) static with transformers' compiled step took 27.9 ms a step against the
    default's 39.1, after ~40 s of compiling each shape; uncompiled it was slower (51.0 ms): it attends over the whole
    preallocated length (eval/bench/bench_devserver_continuous_notes.md)."""

    dynamic = "dynamic"
    static = "static"


class Engine:
    def __init__(
        self,
        model_dir: Path,
        served_name: str | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        max_batch: int = 1,
        batching: Batching | str = Batching.static,
        kv_cache: KvCache | str = "dynamic",
    ):
        model_dir = Path(model_dir)
        if not (model_dir / "config.json").is_file():
            raise DraftsetError(
                f"{model_dir} is not a model directory (no config.json)",
                hint=f"create one with: draftset model init-toy {model_dir}",
            )
        import torch

        from pipeline.targets.load import load_target
        from pipeline.targets.tokenizer import load_chat_tokenizer

        self.model_dir = model_dir
        self.served_name = served_name or model_dir.resolve().name
        self.tokenizer = load_chat_tokenizer(model_dir)
        if dtype not in ("float32", "bfloat16"):
            raise DraftsetError(f"--dtype {dtype!r}: float32 or bfloat16")
        if max_batch < 1:
            raise DraftsetError(f"--max-batch {max_batch}: at least 1")
        try:
            self.batching = Batching(batching)
        except ValueError:
            raise DraftsetError(f"--batching {batching!r}: static or continuous") from None
        try:
            self.kv_cache = KvCache(kv_cache)
        except ValueError:
            raise DraftsetError(f"--kv-cache {kv_cache!r}: dynamic or static") from None
        if self.kv_cache is KvCache.static and (max_batch < 2 or self.batching is not Batching.static):
            raise DraftsetError(  # a flag that would change nothing: said, not ignored
                "--kv-cache static applies to static batching: give it with --max-batch N > 1 and --batching static"
            )
        if self.batching is Batching.continuous and max_batch < 2:
            raise DraftsetError(
                f"--batching continuous needs --max-batch N > 1 (got {max_batch}): the most requests decoded in one step"
            )
        self.device = torch.device(device)
        self.model = load_target(model_dir, getattr(torch, dtype)).to(self.device)
        self.max_batch = max_batch
        self.max_positions = int(self.model.config.max_position_embeddings)
        self.eos_id = self.tokenizer.convert_tokens_to_ids(END_OF_TURN)
        # A vocabulary without think tokens (SmolLM2's ChatML) would map them to <unk>: no reasoning phase then.
        vocab = self.tokenizer.get_vocab()
        self.think_start_id, self.think_end_id = vocab.get(THINK_START, -1), vocab.get(THINK_END, -1)
        self._lock = threading.Lock()
        self._grammars: Grammars | None = None

    # -- prompt ------------------------------------------------------------------------------
    def render(self, messages: list[dict[str, Any]], tools: list[dict] | None, thinking: bool) -> list[int]:
        """Prompt token ids exactly as the chat template renders them (no extra BOS)."""
        from pipeline.targets.tool_render import for_template

        messages = for_template(self.tokenizer, messages)  # earlier calls visible even to a template without tools
        try:
            text = self.tokenizer.apply_chat_template(
                messages, tools=tools, tokenize=False, add_generation_prompt=True, enable_thinking=thinking
            )
        except RENDER_ERRORS as exc:  # e.g. raise_exception on an unknown role: the client's fault
            raise RequestError(f"chat template failed: {exc}") from exc
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def max_new_tokens(self, prompt_len: int, requested: int | None) -> int:
        room = self.max_positions - prompt_len
        if room <= 0:
            raise RequestError(f"prompt is {prompt_len} tokens; the model's context is {self.max_positions}")
        if requested is not None and requested < 1:
            raise RequestError("max_tokens must be at least 1")
        # Clamped to the context left, so a large client default (10,240) still gets an answer.
        return room if requested is None else min(requested, room)

    # -- generation --------------------------------------------------------------------------
    @property
    def grammars(self) -> Grammars:
        """llguidance's view of the vocabulary, built on the first constrained request (it scans the vocab)."""
        if self._grammars is None:
            from pipeline.servers.devserver.constrain import Grammars

            self._grammars = Grammars(self.tokenizer, int(self.model.config.vocab_size), self.eos_id)
        return self._grammars

    def generate(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        on_token: Callable[[int], object],
        cancelled: threading.Event | None = None,
        logits_processor: Any | None = None,
    ) -> Generation:
        import torch
        from transformers import LogitsProcessorList, StoppingCriteria, StoppingCriteriaList
        from transformers.generation.streamers import BaseStreamer

        budget = self.max_new_tokens(len(prompt_ids), params.max_tokens)
        produced: list[int] = []

        class _Collect(BaseStreamer):
            first = True

            def put(
                self, value: torch.Tensor
            ) -> None:  # the first call carries the prompt; later calls one new token each
                if self.first:
                    self.first = False
                    return
                for token in value.reshape(-1).tolist():
                    produced.append(token)
                    on_token(token)

            def end(self) -> None:
                pass

        class _Cancel(StoppingCriteria):
            def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
                flag = bool(cancelled is not None and cancelled.is_set())
                return torch.full((input_ids.shape[0],), flag, dtype=torch.bool)

        sample = params.temperature > 0
        extra = {"temperature": params.temperature, "top_p": params.top_p, "top_k": None} if sample else {}
        with self._lock, single_thread(), torch.inference_mode():
            if params.seed is not None:
                torch.manual_seed(params.seed)
            else:
                torch.seed()  # fresh entropy, so unseeded requests differ
            self.model.generate(
                torch.tensor([prompt_ids], device=self.device),
                attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long, device=self.device),
                max_new_tokens=budget,
                do_sample=sample,
                eos_token_id=self.eos_id,
                pad_token_id=self.tokenizer.pad_token_id,
                streamer=_Collect(),
                stopping_criteria=StoppingCriteriaList([_Cancel()]),
                logits_processor=LogitsProcessorList([logits_processor] if logits_processor else []),
                **extra,
            )
        finish = "stop" if produced and produced[-1] == self.eos_id else "length"
        return Generation(produced, finish)

    def generate_batch(self, prompts: list[list[int]], budgets: list[int], params: SamplingParams) -> list[Generation]:
        """One left-padded `generate` for several prompts; each row is cut at end-of-turn and at its own budget."""
        import torch

        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.eos_id
        answered = len(prompts)
        width = None
        if self.kv_cache is KvCache.static:
            # On a GPU transformers compiles the decoding step for a static cache (CUDA graphs), once per shape, and
            # falls back to eager after a few: rows and width go up to a few buckets, so a run compiles a few times
            # (the padding rows repeat the first prompt; their answers are dropped). A small batch pays for its
            # bucket's rows: the static cache is for regeneration's full batches, not for a few requests at a time.
            step = max(1, -(-self.max_batch // STATIC_ROW_BUCKETS))
            prompts = prompts + [prompts[0]] * (min(self.max_batch, -(-answered // step) * step) - answered)
            width = -(-max(map(len, prompts)) // STATIC_WIDTH_STEP) * STATIC_WIDTH_STEP
        ids, mask = left_padded(prompts, pad, width)
        sample = params.temperature > 0
        extra = {"temperature": params.temperature, "top_p": params.top_p, "top_k": None} if sample else {}
        with self._lock, torch.inference_mode():
            if params.seed is not None:
                torch.manual_seed(params.seed)
            out = self.model.generate(
                ids.to(self.device),
                attention_mask=mask.to(self.device),
                **({"cache_implementation": "static"} if self.kv_cache is KvCache.static else {}),
                max_new_tokens=max(budgets),
                do_sample=sample,
                eos_token_id=self.eos_id,
                pad_token_id=pad,
                **extra,
            )
        results = []
        for row, budget in zip(out[:answered, ids.shape[1] :].tolist(), budgets):
            row = row[:budget]
            if self.eos_id in row:
                row = row[: row.index(self.eos_id) + 1]
            results.append(Generation(row, "stop" if row and row[-1] == self.eos_id else "length"))
        return results


class Detokenizer:
    """Turns completion tokens into (reasoning, content) text deltas, splitting on the think token ids.

    Like SGLang's Kimi reasoning parser (force_reasoning off): with thinking on, the answer is reasoning
    only if it opens with `<think>`, up to `</think>`; an answer that does not open with it is all content.
    Works on token ids, never on text patterns. Each segment is re-decoded whole and only the new tail
    is emitted, so multi-byte characters split across byte-level tokens come out intact.
    """

    def __init__(self, engine: Engine, thinking: bool):
        self.engine = engine
        self.phase = "start" if thinking else "content"
        self.segment: list[int] = []
        self.emitted = 0
        self.text = {"reasoning": "", "content": ""}
        self.content_ids: list[int] = []

    def raw_content(self) -> str:
        """The content decoded with special tokens kept (Kimi's tool-call markers are special tokens)."""
        return self.engine.tokenizer.decode(self.content_ids, skip_special_tokens=False)

    def push(self, token: int) -> tuple[str, str] | None:
        """Feed one token; returns (field, new_text) when there is text to emit."""
        return self._emit(final=False) if self._take(token) else None

    def feed(self, tokens: list[int]) -> None:
        """A whole completion at once (the batched path): the same phase logic, one decode per segment.
        `push` re-decodes its segment at every token, which streaming needs; for a 192-token answer that is
        ~100x the work (4.7 ms against 0.04), and on the event loop it held back the next batch's requests."""
        for token in tokens:
            if self.phase == "reasoning" and token == self.engine.think_end_id:
                self._emit(final=True)  # the reasoning segment is complete
            self._take(token)
        self._emit(final=True)

    def _take(self, token: int) -> bool:
        """The phase logic for one token; True when it joins the current segment's text."""
        eng = self.engine
        if token == eng.eos_id:
            return False
        if self.phase == "start":
            self.phase = "reasoning" if token == eng.think_start_id else "content"
            if self.phase == "reasoning":
                return False
        if self.phase == "reasoning" and token == eng.think_end_id:
            self.phase, self.segment, self.emitted = "content", [], 0
            return False
        self.segment.append(token)
        if self.phase == "content":
            self.content_ids.append(token)  # re-decoded with special tokens to read tool-call markers
        return True

    def _emit(self, final: bool) -> tuple[str, str] | None:
        text = self.engine.tokenizer.decode(self.segment, skip_special_tokens=True)
        if text.endswith("\ufffd"):
            if not final:
                return None  # an incomplete UTF-8 sequence: wait for the next byte token
            text = text.rstrip("\ufffd")  # the segment ends inside a character: what push never emits
        delta, self.emitted = text[self.emitted :], len(text)
        if not delta:
            return None
        self.text[self.phase] += delta
        return self.phase, delta


def normalise_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI message shapes → what the template reads: text parts joined, tool-call arguments as JSON text."""
    out = []
    for i, message in enumerate(messages):
        msg = dict(message)
        if msg.get("role") == "developer":  # OpenAI's newer name for the system turn
            msg["role"] = "system"
        content = msg.get("content")
        if isinstance(content, list):
            texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
            if len(texts) != len(content):
                raise RequestError(f"messages[{i}].content: only text parts are supported")
            strings = [t for t in texts if isinstance(t, str)]
            if len(strings) != len(texts):  # {"type": "text"} without a string: a 400, not a server error
                raise RequestError(f"messages[{i}].content: a text part needs a string `text`")
            msg["content"] = "".join(strings)
        elif content is None:
            msg["content"] = ""
        elif not isinstance(content, str):
            raise RequestError(f"messages[{i}].content must be a string or a list of text parts")
        calls = msg.get("tool_calls") or []
        if not isinstance(calls, list):
            raise RequestError(f"messages[{i}].tool_calls must be a list")
        for call in calls:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and not isinstance(fn.get("arguments"), str):
                fn["arguments"] = json.dumps(fn.get("arguments"))
        out.append(msg)
    return out


def left_padded(rows: list[list[int]], pad: int, width: int | None = None) -> tuple[Any, Any]:
    """(input_ids, attention_mask) for a batch, padded on the left so every row's next token is at the end
    (to `width` columns when given, else the longest row's)."""
    import torch

    width = max(max(map(len, rows)), width or 0)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, width - len(row) :] = torch.tensor(row, dtype=torch.long)
        mask[i, width - len(row) :] = 1
    return ids, mask
