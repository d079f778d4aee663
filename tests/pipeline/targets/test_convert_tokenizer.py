"""convert-tokenizer: a Kimi-layout tiktoken tokenizer becomes a tokenizer.json that encodes exactly as tiktoken.

The fixture is made the way Kimi ships its tokenizer: a tiktoken BPE file (ranks learned with tiktoken's
own trainer), a `tokenization_kimi.py` that is only ever parsed (it would fail if executed), and a
tokenizer_config.json whose added_tokens_decoder names some of the 258 special ids.
"""

import base64
import json
import random
import re

import pytest

tiktoken = pytest.importorskip("tiktoken")

from catalog.errors import DraftsetError  # noqa: E402
from pipeline.model.template import CHAT_TEMPLATE  # noqa: E402
from pipeline.targets.tiktoken_convert import KIMI_PATTERN, KIMI_PATTERN_PARTS, convert_tokenizer, tokenizer_sha256  # noqa: E402

CORPUS = """The quick brown fox jumps over the lazy dog. It's 2026; we've shipped 3 releases, they'll ship 12.
人工智能正在改变世界。我们今天讨论分词器的实现细节，以及中文文本的处理。
def fibonacci(n: int) -> int:\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n
for (int i = 0; i < 10; ++i) { printf("%d\\n", i); }  // C code
Emoji: 😀🚀🎉 👩‍💻 ✨ — café, naïve, Ünïcödé, ΑΒΓ, русский текст, العربية.
"""
CROSSING = ["HelloWorld", " HelloWorld", "和English混合", "123456", "isn'T", "getHTTPResponse", "Ab中"]
# Kimi's names at Kimi's offsets from len(ranks) (Kimi-K2 tokenizer_config.json), plus the template's others.
NAMED = {
    0: "[BOS]",
    1: "[EOS]",
    2: "<|im_end|>",
    3: "<|im_user|>",
    4: "<|im_assistant|>",
    6: "<|start_header_id|>",
    7: "<|end_header_id|>",
    9: "[EOT]",
    10: "<|im_system|>",
    17: "<|im_middle|>",
    20: "<think>",
    21: "</think>",
    30: "<|tool_calls_section_begin|>",
    31: "<|tool_calls_section_end|>",
    32: "<|tool_call_begin|>",
    33: "<|tool_call_argument_begin|>",
    34: "<|tool_call_end|>",
    40: "<|endoftext|>",
    41: "<|pad|>",
}
REMOTE_CODE = f"""
import this_module_does_not_exist  # executing this file would fail: the converter must only parse it
class TikTokenTokenizer:
    num_reserved_special_tokens = 256
    pat_str = "|".join({KIMI_PATTERN_PARTS!r})
"""


@pytest.fixture(scope="module")
def kimi_dir(tmp_path_factory):
    from tiktoken._educational import bpe_train

    d = tmp_path_factory.mktemp("kimi")
    # tiktoken's own trainer, then whole tokens for strings that cross the boundaries Kimi's pattern draws
    # (case, Han/Latin, digit runs): with any other split pattern these encode differently
    ranks = bpe_train(
        CORPUS, 256 + 150, r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+""", visualise=None
    )
    for word in CROSSING:
        data = word.encode()
        for end in range(2, len(data) + 1):  # a merge chain, each step one byte longer: valid BPE ranks
            ranks.setdefault(data[:end], len(ranks))
    (d / "tiktoken.model").write_text(
        "".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in sorted(ranks.items(), key=lambda kv: kv[1]))
    )
    n = len(ranks)
    (d / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "TikTokenTokenizer",
                "auto_map": {"AutoTokenizer": ["tokenization_kimi.TikTokenTokenizer", None]},
                "bos_token": "[BOS]",
                "eos_token": "<|im_end|>",
                "pad_token": "<|pad|>",
                "added_tokens_decoder": {str(n + k): {"content": v, "special": True} for k, v in NAMED.items()},
                "chat_template": CHAT_TEMPLATE,
            }
        )
    )
    (d / "tokenization_kimi.py").write_text(REMOTE_CODE)  # states the pattern as a join of literals, like Kimi's
    specials = {NAMED.get(i - n, f"<|reserved_token_{i}|>"): i for i in range(n, n + 258)}
    enc = tiktoken.Encoding("kimi-synthetic", pat_str=KIMI_PATTERN, mergeable_ranks=ranks, special_tokens=specials)
    return d, enc


def _texts() -> list[str]:
    rng = random.Random(0)
    alphabet = (
        list("abcXYZ019 \n\t.,;'\"(){}[]<>|_-") + list("中文分词器人工智能") + ["😀", "🚀", "👩‍💻", "é", "Ω", "\r\n"]
    )
    fuzz = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))) for _ in range(200)]
    markers = sorted(set(re.findall(r"<\|[a-z_]+\|>|</?think>", CHAT_TEMPLATE)))
    return [
        *CORPUS.splitlines(),
        CORPUS,
        "",
        " ",
        "   leading spaces",
        "trailing   ",
        "I'M SHOUTING, isn'T it",
        "数字123456和English混合",
        "x = {'a': [1, 2, 3]}\n\n\n    return x",
        "🎉🎉🎉",
        "<|im_end|>",
        "hello<|im_user|>user<|im_middle|>你好<|im_end|><|reserved_token_999|>",
        "[BOS][EOS]<think>思考</think>",
        *CROSSING,
        " ".join(CROSSING),
        *markers,
        *fuzz,
    ]


def test_converted_tokenizer_encodes_exactly_as_tiktoken(kimi_dir):
    from transformers import AutoTokenizer

    d, enc = kimi_dir
    result = convert_tokenizer(d)
    assert result.pattern_source == "tokenization_kimi.py" and result.n_special == 258
    tok = AutoTokenizer.from_pretrained(d)  # no trust_remote_code: the converted files load plainly
    assert type(tok).__name__ in ("PreTrainedTokenizerFast", "TokenizersBackend")
    for text in _texts():
        assert tok.encode(text, add_special_tokens=False) == enc.encode(text, allowed_special="all"), repr(text)
        assert tok.decode(enc.encode(text, allowed_special="all")) == text
    # every chat-template marker is one special id, the same as tiktoken's
    for marker in set(re.findall(r"<\|[a-z_]+\|>|</?think>", CHAT_TEMPLATE)):
        assert tok.convert_tokens_to_ids(marker) == enc.encode_single_token(marker)
    # the rendered chat template (tools, reasoning, tool calls) too
    msgs = [
        {"role": "system", "content": "你是助手"},
        {"role": "user", "content": "Write code 🚀"},
        {
            "role": "assistant",
            "content": "ok",
            "reasoning_content": "思考",
            "tool_calls": [{"id": "c0", "type": "function", "function": {"name": "run", "arguments": '{"x": 1}'}}],
        },
        {"role": "tool", "content": "done"},
    ]
    text = tok.apply_chat_template(
        msgs, tools=[{"type": "function", "function": {"name": "run"}}], tokenize=False, add_generation_prompt=True
    )
    assert tok.encode(text, add_special_tokens=False) == enc.encode(text, allowed_special="all")
    assert tok.eos_token == "<|im_end|>" and tok.eos_token_id == enc.encode_single_token("<|im_end|>")
    assert result.sha256 == tokenizer_sha256(d) and len(result.sha256) == 64


def test_rerun_is_idempotent_and_keeps_the_original_config(kimi_dir):
    from typer.testing import CliRunner

    from pipeline.cli.app import app

    d, _ = kimi_dir
    first = convert_tokenizer(d)
    result = CliRunner().invoke(app, ["model", "convert-tokenizer", str(d)])
    assert result.exit_code == 0, result.output
    assert "next: draftset build MIX --model" in result.output
    assert json.loads((d / "tokenizer_config.remote.json").read_text())["tokenizer_class"] == "TikTokenTokenizer"
    assert "auto_map" not in json.loads((d / "tokenizer_config.json").read_text())
    assert convert_tokenizer(d).sha256 == first.sha256
    listed = CliRunner().invoke(app, ["model", "convert-tokenizer", str(d), "--json"])
    (row,) = json.loads(listed.stdout)["tables"][0]["rows"]  # raw numbers, not "100,256"
    assert row["tokenizer_sha256"] == first.sha256 and row["bpe_ranks"] == first.n_ranks


def test_refuses_gapped_ranks_and_missing_file(tmp_path):
    with pytest.raises(DraftsetError, match="no tiktoken.model"):
        convert_tokenizer(tmp_path)
    (tmp_path / "tiktoken.model").write_text(
        f"{base64.b64encode(b'a').decode()} 0\n{base64.b64encode(b'b').decode()} 5\n"
    )
    with pytest.raises(DraftsetError, match="without gaps"):
        convert_tokenizer(tmp_path)


def test_capture_manifest_records_the_converted_tokenizer(kimi_dir, tmp_path):
    from pipeline.capture.layers import LayerPlan
    from pipeline.capture.run import manifest_for

    d, _ = kimi_dir
    convert_tokenizer(d)
    mcfg = {
        "num_hidden_layers": 8,
        "hidden_size": 64,
        "vocab_size": 1024,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "model_type": "deepseek_v3",
    }
    (d / "config.json").write_text(json.dumps(mcfg))
    m = manifest_for(d, tmp_path, mcfg, LayerPlan.resolve(8, None), {}, 512)
    assert m.tokenizer_sha256 == tokenizer_sha256(d) and m.chat_template_sha256 is not None
