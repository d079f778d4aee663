"""SmolLM2's ChatML (a template that ignores tools and tool_calls) in build: calls become <tool_call> blocks.
Needs the real target's fetch (pipeline.target.gguf_fetch, from the `real` helper's import-gguf work)."""

from __future__ import annotations

import json

import pytest

from pipeline.servers.devserver.toolcalls import parse_tool_calls
from tests.pipeline.build.test_tool_masks import _agentic, _rows, _trained


@pytest.mark.slow
def test_smollm2_chatml_gets_calls_as_tool_call_blocks(tmp_path):
    from transformers import AutoTokenizer

    from pipeline.target.gguf_fetch import fetch_smollm2
    from pipeline.target.tool_render import renders_tool_calls

    gguf = fetch_smollm2()
    smol = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    assert not renders_tool_calls(smol)  # SmolLM2's template ignores tool_calls: they would vanish
    call_row, answer_row = _rows(smol, _agentic(), "<|im_end|>")
    trained = _trained(smol, call_row)
    assert trained == '<tool_call>\n{"name": "search", "arguments": {"q": "x"}}\n</tool_call><|im_end|>'
    text = smol.decode(answer_row.input_ids, skip_special_tokens=False)
    assert "<|im_start|>tool\n3 hits<|im_end|>" in text and _trained(smol, answer_row) == "There are 3 hits.<|im_end|>"
    _, calls = parse_tool_calls(trained, {"search"})
    assert json.loads(calls[0]["function"]["arguments"]) == {"q": "x"}
