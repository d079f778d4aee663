"""The toy target on disk: a real Llama checkpoint, a Kimi-style tokenizer, a prefix-stable template."""

from __future__ import annotations

import json

import pytest

from pipeline.model.corpus import FALLBACK_ROWS
from pipeline.model.template import SPECIAL_TOKENS

CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4", "reasoning_content": "add them"},
    {"role": "user", "content": "And 3+3?"},
    {
        "role": "assistant",
        "content": "6",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "calc", "arguments": '{"x": 6}'}}],
    },
    {"role": "tool", "content": "6"},
    {"role": "assistant", "content": "Six."},
]


@pytest.fixture(scope="module")
def tokenizer(toy_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(toy_model_dir)


def test_checkpoint_is_a_tiny_untied_llama(toy_model_dir, tokenizer):
    config = json.loads((toy_model_dir / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"]) == (8, 64, 4)
    assert config["max_position_embeddings"] == 2048 and config["tie_word_embeddings"] is False
    assert config["vocab_size"] == len(tokenizer)
    assert (toy_model_dir / "model.safetensors").is_file()
    assert "<|im_assistant|>" in json.loads((toy_model_dir / "tokenizer_config.json").read_text())["chat_template"]

    from safetensors import safe_open

    with safe_open(toy_model_dir / "model.safetensors", "np") as weights:
        keys = set(weights.keys())
    assert "lm_head.weight" in keys and "model.embed_tokens.weight" in keys  # untied: both stored


def test_special_tokens_are_single_ids(tokenizer):
    for token in SPECIAL_TOKENS:
        ids = tokenizer(token, add_special_tokens=False)["input_ids"]
        assert ids == [tokenizer.convert_tokens_to_ids(token)], token
    assert tokenizer.eos_token == "<|im_end|>"


def test_template_renders_kimi_layout(tokenizer):
    text = tokenizer.apply_chat_template(CONVERSATION[:4], tokenize=False, add_generation_prompt=True)
    assert text == (
        "<|im_system|>system<|im_middle|>Be brief.<|im_end|>"
        "<|im_user|>user<|im_middle|>What is 2+2?<|im_end|>"
        "<|im_assistant|>assistant<|im_middle|><think>add them</think>4<|im_end|>"
        "<|im_user|>user<|im_middle|>And 3+3?<|im_end|>"
        "<|im_assistant|>assistant<|im_middle|>"
    )
    off = tokenizer.apply_chat_template(
        CONVERSATION[:4], tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    assert "add them" not in off and off.endswith("<|im_assistant|>assistant<|im_middle|><think></think>")
    full = tokenizer.apply_chat_template(CONVERSATION, tokenize=False)
    assert (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.calc:0<|tool_call_argument_begin|>"
        '{"x": 6}<|tool_call_end|><|tool_calls_section_end|><|im_end|><|im_system|>tool<|im_middle|>6'
    ) in full


@pytest.mark.parametrize("thinking", [True, False])
def test_template_is_prefix_stable_at_every_assistant_turn(tokenizer, thinking):
    for j, message in enumerate(CONVERSATION):
        if message["role"] != "assistant":
            continue
        context = tokenizer.apply_chat_template(
            CONVERSATION[:j], tokenize=False, add_generation_prompt=True, enable_thinking=thinking
        )
        upto = tokenizer.apply_chat_template(CONVERSATION[: j + 1], tokenize=False, enable_thinking=thinking)
        assert upto.startswith(context) and upto.endswith("<|im_end|>")


def test_unknown_role_is_refused_by_the_template(tokenizer):
    with pytest.raises(Exception, match="unknown role: narrator"):
        tokenizer.apply_chat_template([{"role": "narrator", "content": "x"}], tokenize=False)


def test_model_loads_and_predicts_over_the_vocabulary(toy_model_dir, tokenizer):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(toy_model_dir).eval()
    ids = tokenizer("hello world", add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model(ids, output_hidden_states=True)
    assert out.logits.shape == (1, ids.shape[1], len(tokenizer))
    assert len(out.hidden_states) == 9  # embeddings + 8 blocks
    assert torch.isfinite(out.logits).all()


def test_cli_init_toy_writes_a_loadable_model(tmp_path):
    from typer.testing import CliRunner

    from pipeline.cli.app import app

    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "rows.jsonl").write_text('{"q": "zebra crossing", "a": "zebras cross here"}\n')
    result = CliRunner().invoke(
        app,
        [
            "model",
            "init-toy",
            str(tmp_path / "m"),
            "--train-steps",
            "2",
            "--vocab-size",
            "400",
            "--corpus",
            str(tmp_path / "corpus"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    (shown,) = json.loads(result.stdout)["tables"][0]["rows"]  # --json: the table's raw numbers, stdout only
    assert shown["train_steps"] == 2 and isinstance(shown["parameters"], int) and isinstance(shown["final_loss"], float)
    info = json.loads((tmp_path / "m" / "draftset_toy.json").read_text())
    assert info["toy_config"]["train_steps"] == 2 == info["steps_done"] and info["final_loss"] > 0
    assert info["corpus_rows"] == 1 + len(FALLBACK_ROWS)
    assert not list(tmp_path.glob(".m.tmp"))  # the temp dir was renamed, not left behind


@pytest.mark.parametrize("args", [["--hidden-size", "600"], ["--vocab-size", "40000"], ["--corpus", "/no/such/dir"]])
def test_cli_init_toy_refuses_bad_options_before_building(tmp_path, args):
    from typer.testing import CliRunner

    from pipeline.cli.app import app

    result = CliRunner().invoke(app, ["model", "init-toy", str(tmp_path / "m"), *args])
    assert result.exit_code == 2 and "Invalid value" in result.output, result.output
    assert not (tmp_path / "m").exists()


def test_toy_tokenizer_is_saved_without_training_truncation_or_padding(toy_model_dir):
    # Training tokenizes with truncation + fixed padding; the saved file must not keep them, or every
    # length measured with it is clipped/padded to train_seq_len (issue 16: everything measured 128).
    saved = json.loads((toy_model_dir / "tokenizer.json").read_text())
    assert saved["truncation"] is None and saved["padding"] is None


def test_cli_init_toy_next_line_quotes_the_model_dir(tmp_path):
    """The `next:` line pastes as one command: a folder with a space or brackets is one quoted word, not markup."""
    import shlex

    from typer.testing import CliRunner

    from pipeline.cli.app import app

    out = tmp_path / "toy [red]model"
    args = ["model", "init-toy", str(out), "--train-steps", "1", "--vocab-size", "400"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"next: draftset serve-dev {shlex.quote(str(out))} --port 8000" in result.output
