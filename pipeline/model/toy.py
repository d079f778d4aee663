"""`draftset model init-toy`: the embedded target, a tiny Llama with a locally trained Kimi-style tokenizer.

Random init, then optionally a few AdamW steps on fixture text rendered through the chat template, so
the model answers with plausible tokens and learns to close its turn with `<|im_end|>`.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from catalog.errors import DraftsetError
from pipeline.model.corpus import chat_pairs, corpus_rows
from pipeline.model.runtime import single_thread
from pipeline.model.template import CHAT_TEMPLATE
from pipeline.model.tokenizer import train_tokenizer
from pipeline.stage import StageConfig, require
from pipeline.target.tokenizer import save_clean


class ToyConfig(StageConfig):
    vocab_size: int = Field(3000, ge=300, le=32000)
    hidden_size: int = Field(64, ge=16, le=512)
    num_layers: int = Field(8, ge=4, le=32)  # >= 4 so the default taps [2, n//2, n-3] are distinct
    num_heads: int = Field(4, ge=1)
    intermediate_size: int = Field(256, ge=16)
    max_positions: int = Field(2048, ge=128)
    train_steps: int = Field(200, ge=0)
    max_train_seconds: float = Field(60.0, gt=0)  # wall-clock cap: a busy machine stops early, never hangs
    train_seq_len: int = Field(128, ge=16)
    batch_size: int = Field(16, ge=1)
    learning_rate: float = 3e-3
    seed: int = 0


def _training_texts(tokenizer: Any, pairs: list[tuple[str, str]], rng: random.Random, n: int) -> list[str]:
    """Chat renderings of (prompt, answer) pairs; half carry a short thought so both modes are seen.

    Texts are cut so a whole exchange fits `train_seq_len` (~3.5 chars per token): the model must see
    `<|im_end|>` to learn to stop.
    """
    chosen = rng.sample(pairs, min(n, len(pairs)))
    texts = []
    for i, (prompt, answer) in enumerate(chosen):
        reply = {"role": "assistant", "content": answer[:200]}
        if i % 2:
            reply["reasoning_content"] = prompt[:40]
        msgs = [{"role": "user", "content": prompt[:150]}, reply]
        texts.append(tokenizer.apply_chat_template(msgs, tokenize=False))
    return texts


def _train(
    model: Any, tokenizer: Any, texts: list[str], cfg: ToyConfig, on_step: Callable[[int, float], None]
) -> tuple[float, int]:
    import torch

    batches = tokenizer(
        texts,
        add_special_tokens=False,
        truncation=True,
        max_length=cfg.train_seq_len,
        padding="max_length",
        return_tensors="pt",
    )
    ids, mask = batches["input_ids"], batches["attention_mask"]
    labels = ids.masked_fill(mask == 0, -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate)
    gen = torch.Generator().manual_seed(cfg.seed)
    model.train()
    loss_value = float("nan")
    deadline = time.monotonic() + cfg.max_train_seconds
    done = 0
    while done < cfg.train_steps and time.monotonic() < deadline:
        pick = torch.randint(0, ids.shape[0], (cfg.batch_size,), generator=gen)
        out = model(input_ids=ids[pick], attention_mask=mask[pick], labels=labels[pick])
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss_value = float(out.loss.detach())
        done += 1
        on_step(done, loss_value)
    model.eval()
    return loss_value, done


def init_toy(
    out_dir: Path,
    cfg: ToyConfig,
    hub_dir: Path | None = None,
    on_step: Callable[[int, float], None] = lambda step, loss: None,
) -> dict:
    """Build, optionally train, and save the toy target to `out_dir`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own rich bar is the one progress display

    require(
        cfg.hidden_size % cfg.num_heads == 0,
        f"hidden_size {cfg.hidden_size} is not divisible by num_heads {cfg.num_heads}",
        hint="pick a hidden size that is a multiple of the head count",
    )
    rng = random.Random(cfg.seed)
    torch.manual_seed(cfg.seed)
    rows = corpus_rows(hub_dir)
    tokenizer = train_tokenizer((text for row in rows for text in row), vocab_size=cfg.vocab_size)
    model_config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_heads,
        intermediate_size=cfg.intermediate_size,
        max_position_embeddings=cfg.max_positions,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    model = LlamaForCausalLM(model_config)
    final_loss, steps_done = None, 0
    if cfg.train_steps:
        texts = _training_texts(tokenizer, chat_pairs(rows), rng, n=max(256, cfg.batch_size * 8))
        with single_thread():
            final_loss, steps_done = _train(model, tokenizer, texts, cfg, on_step)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id

    info = {
        "toy_config": cfg.model_dump(),
        "vocab_size": len(tokenizer),
        "final_loss": final_loss,
        "steps_done": steps_done,
        "n_parameters": sum(p.numel() for p in model.parameters()),
        "corpus_rows": len(rows),
    }
    _save(Path(out_dir), model, tokenizer, info)
    return info


def _save(out_dir: Path, model: Any, tokenizer: Any, info: dict) -> None:
    """Write into a temp dir beside `out_dir`, then swap it in: a failed save leaves no half model."""
    tmp = out_dir.with_name(f".{out_dir.name}.tmp")
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        model.save_pretrained(tmp, safe_serialization=True)
        save_clean(tokenizer)  # training tokenized with truncation+padding: never ship them in tokenizer.json
        tokenizer.save_pretrained(tmp)
        _embed_template_in_config(tmp / "tokenizer_config.json")
        (tmp / "draftset_toy.json").write_text(json.dumps(info, indent=2) + "\n")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise DraftsetError(
            f"cannot write the toy model to {out_dir}: {exc}", hint="free disk space or pick a writable directory"
        ) from exc


def _embed_template_in_config(path: Path) -> None:
    """Also keep the template inside tokenizer_config.json, where older loaders (and SGLang) look first."""
    config = json.loads(path.read_text())
    config["chat_template"] = CHAT_TEMPLATE
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
