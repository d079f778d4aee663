"""`draftset model import-gguf FILE DIR`: a GGUF file becomes a plain Hugging Face model folder.

transformers reads GGUF (`gguf_file=`, needs the `gguf` package) and dequantizes it, but refuses to
`save_pretrained` a model it loaded that way ("quantized with gguf ... not serializable"). So the
state dict, config, generation config and tokenizer are written here by hand: config.json without the
quantization block, model.safetensors (tied embeddings stored once), tokenizer.json with no truncation
or padding baked in, and the chat template both in tokenizer_config.json (where older loaders and
SGLang look) and as chat_template.jinja. Before the folder is swapped in, it is loaded back and its
next-token logits are compared with the GGUF model's: an import that changes what the model says fails.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.errors import DraftsetError
from catalog.io import write_json_atomic

if TYPE_CHECKING:
    import torch

DTYPES = ("bfloat16", "float32")
PROBE = [{"role": "user", "content": "Write a Python function that checks whether a number is prime."}]
# Config keys that describe the GGUF load, not the model.
DROP_CONFIG = ("quantization_config", "_name_or_path", "_model_name_or_path", "transformers_version")
DROP_TOKENIZER = ("backend", "is_local", "local_files_only", "tokenizer_class")


def _load_gguf(gguf: Path) -> tuple[Any, Any]:
    import os

    import torch

    quiet = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"  # the GGUF loader's per-tensor bar; the CLI shows one status line
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        kw = {"gguf_file": gguf.name}
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, **kw)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, dtype=torch.float32, **kw).eval()
    except ImportError as exc:
        raise DraftsetError(
            f"reading GGUF needs a package that is missing: {exc}",
            hint="pip install 'draftset[model]' (it brings gguf and accelerate)",
        ) from exc
    except (ValueError, KeyError, OSError) as exc:  # unsupported architecture, truncated or foreign file
        raise DraftsetError(
            f"transformers cannot load {gguf} as a causal LM: {str(exc).splitlines()[0]}",
            hint="import-gguf supports the architectures transformers' GGUF loader does (llama, mistral, qwen2, ...)",
        ) from exc
    finally:
        if quiet is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = quiet
    return model, tokenizer


def _state_dict(model: Any, dtype: torch.dtype) -> dict:
    """Weights as plain contiguous tensors; a tied lm_head is left out (config says tie_word_embeddings)."""
    state = model.state_dict()
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    if tied:
        state.pop("lm_head.weight", None)
    return {k: v.detach().to(dtype).contiguous() for k, v in state.items()}


def _write_config(model: Any, out: Path, dtype: str) -> dict:
    config = model.config.to_dict()
    for key in DROP_CONFIG:
        config.pop(key, None)
    config["dtype"] = dtype
    config["architectures"] = [type(model).__name__]
    write_json_atomic(out / "config.json", config)
    gen = {k: getattr(model.config, k, None) for k in ("bos_token_id", "eos_token_id", "pad_token_id")}
    write_json_atomic(
        out / "generation_config.json", {**{k: v for k, v in gen.items() if v is not None}, "do_sample": False}
    )
    return config


def _write_tokenizer(tokenizer: Any, out: Path, max_positions: int) -> str:
    template = tokenizer.chat_template
    if not isinstance(template, str) or not template.strip():
        raise DraftsetError(
            "the GGUF file carries no chat template (tokenizer.chat_template)",
            hint="a target must serve a chat template: import a chat/instruct GGUF",
        )
    tokenizer.save_pretrained(out)
    tok_json = json.loads((out / "tokenizer.json").read_text())
    tok_json["truncation"], tok_json["padding"] = None, None  # rows are cut by the stages, never silently here
    write_json_atomic(out / "tokenizer.json", tok_json)
    cfg = json.loads((out / "tokenizer_config.json").read_text())
    for key in DROP_TOKENIZER:
        cfg.pop(key, None)
    # The portable class name: transformers 4.x (SGLang, vLLM) does not know transformers 5's backend class.
    cfg.update(tokenizer_class="PreTrainedTokenizerFast", chat_template=template, model_max_length=max_positions)
    write_json_atomic(out / "tokenizer_config.json", cfg)
    (out / "chat_template.jinja").write_text(template)
    return template


def _probe_agreement(gguf_model: Any, tokenizer: Any, folder: Path) -> dict:
    """Load the written folder and compare next-token logits with the GGUF model on a chat prompt."""
    import torch

    from pipeline.target.load import load_target

    text = tokenizer.apply_chat_template(PROBE, tokenize=False, add_generation_prompt=True)
    ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])
    reloaded = load_target(folder, torch.float32)
    with torch.inference_mode():
        a, b = gguf_model(ids).logits[0].float(), reloaded(ids).logits[0].float()
    return {
        "probe_tokens": int(ids.shape[1]),
        "top1_agreement": float((a.argmax(-1) == b.argmax(-1)).float().mean()),
        "max_abs_logit_diff": float((a - b).abs().max()),
        "logit_scale": float(a.abs().max()),
    }


def import_gguf(gguf: Path, out_dir: Path, dtype: str = "bfloat16", min_agreement: float = 0.95) -> dict:
    """Write the HF folder for `gguf` to `out_dir` (replaced atomically); returns what was written."""
    import torch
    from safetensors.torch import save_file

    gguf, out_dir = Path(gguf), Path(out_dir)
    if dtype not in DTYPES:
        raise DraftsetError(f"--dtype {dtype!r} is not one of {DTYPES}", hint="bfloat16 halves the folder's size")
    if not gguf.is_file():
        raise DraftsetError(f"{gguf} is not a file", hint="fetch SmolLM2's with: draftset model fetch-smollm2")
    model, tokenizer = _load_gguf(gguf)
    tmp = out_dir.with_name(f".{out_dir.name}.import")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        config = _write_config(model, tmp, dtype)
        state = _state_dict(model, getattr(torch, dtype))
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        _write_tokenizer(tokenizer, tmp, int(config.get("max_position_embeddings") or 2048))
        check = _probe_agreement(model, tokenizer, tmp)
        if check["top1_agreement"] < min_agreement:
            raise DraftsetError(
                f"the imported folder predicts differently from the GGUF model "
                f"(top-1 agreement {check['top1_agreement']:.1%} on a probe prompt)",
                hint="try --dtype float32; report the file if float32 disagrees too",
            )
        from pipeline.target.gguf_fetch import sha256_file

        info = {
            "source": str(gguf.resolve()),
            "source_sha256": sha256_file(gguf),
            "dtype": dtype,
            "architecture": config["architectures"][0],
            "n_layers": config.get("num_hidden_layers"),
            "hidden_size": config.get("hidden_size"),
            "vocab_size": config.get("vocab_size"),
            "n_parameters": sum(v.numel() for v in state.values()),
            "bytes": (tmp / "model.safetensors").stat().st_size,
            "check": check,
        }
        write_json_atomic(tmp / "draftset_import.json", info)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return info
