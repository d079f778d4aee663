"""Tools and tool calls through the chat template in build: the toy target's Kimi-style template renders
them itself; SmolLM2's ChatML ignores them, so calls are written into the content as <tool_call> blocks
(what the model writes and the dev server parses back). Masks still come from the generation boundary:
the trained tokens of a tool-calling turn are exactly its call and end-of-turn token."""

from __future__ import annotations

import json

from adapters.records import Conversation, Message, Source, Tool
from pipeline.build.render import MaskBuilder, template_messages, template_tools, trainable_turns
from pipeline.servers.devserver.toolcalls import parse_tool_calls

SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the docs.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


def _agentic(mode: str = "native") -> Conversation:
    return Conversation(
        id="t-0",
        source=Source(repo_id="hand/written", revision="0" * 40, config="default", split="train", row_index=0),
        category="agentic",
        mode=mode,
        tools=[Tool.model_validate(SEARCH)],
        messages=[
            Message(role="user", content="How many hits for x?"),
            Message.model_validate(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}
                    ],
                }
            ),
            Message(role="tool", content="3 hits", tool_call_id="call_1", name="search"),
            Message(role="assistant", content="There are 3 hits."),
        ],
    )


def _rows(tokenizer, conv, end_of_turn):
    builder = MaskBuilder(tokenizer, thinking=False, end_of_turn=end_of_turn)
    msgs = template_messages(conv, None)
    return builder.rows(msgs, trainable_turns(conv.messages, 0), per_turn=True, tools=template_tools(conv))


def _trained(tokenizer, row) -> str:
    return tokenizer.decode([t for t, m in zip(row.input_ids, row.loss_mask) if m], skip_special_tokens=False)


def test_kimi_template_renders_declarations_calls_and_results(tokenizer):
    call_row, answer_row = _rows(tokenizer, _agentic(), "<|im_end|>")
    text = tokenizer.decode(answer_row.input_ids, skip_special_tokens=False)
    assert (
        text.startswith("<|im_system|>tool_declare<|im_middle|>") and '"name": "search"' in text.split("<|im_end|>")[0]
    )
    assert "<|im_system|>tool<|im_middle|>3 hits<|im_end|>" in text  # the tool result, in context
    # thinking off: the generation prompt ends in <think></think>, so training starts at the call itself
    assert _trained(tokenizer, call_row) == (
        "<|tool_calls_section_begin|><|tool_call_begin|>"
        'functions.search:0<|tool_call_argument_begin|>{"q": "x"}'
        "<|tool_call_end|><|tool_calls_section_end|><|im_end|>"
    )
    assert _trained(tokenizer, answer_row) == "There are 3 hits.<|im_end|>"
    assert call_row.input_ids == answer_row.input_ids[: len(call_row.input_ids)]  # one history, two boundaries
    # what the model is trained to write is what serve-dev reads back as the same call
    _, calls = parse_tool_calls(_trained(tokenizer, call_row), {"search"})
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [("search", {"q": "x"})]


def test_without_tools_the_declaration_block_is_absent(tokenizer):
    conv = _agentic().model_copy(update={"tools": None})
    [_, row] = _rows(tokenizer, conv, "<|im_end|>")
    assert "tool_declare" not in tokenizer.decode(row.input_ids, skip_special_tokens=False)
