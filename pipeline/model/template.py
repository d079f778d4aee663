"""The Kimi-style chat template of the toy target, and the special tokens it needs.

Layout follows Kimi-K2: `<|im_{role}|>{name}<|im_middle|>{content}<|im_end|>`, reasoning as
`<think>…</think>` before the assistant content, tool calls in Kimi's section tokens. The template is
PREFIX-STABLE on purpose: `render(messages[:j], add_generation_prompt=True)` is a prefix of
`render(messages[:j+1])` for every assistant turn j, so the build stage can take loss masks from the
generation boundary. That holds because every past turn keeps its reasoning, no default system prompt
is injected (the system-prompt policy belongs to the stages, recorded in their manifests), and with
thinking disabled both the generation prompt and past assistant turns carry the same empty `<think></think>`.
"""

from __future__ import annotations

END_OF_TURN = "<|im_end|>"
THINK_START = "<think>"
THINK_END = "</think>"

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|pad|>",
    "<|im_system|>",
    "<|im_user|>",
    "<|im_assistant|>",
    "<|im_middle|>",
    END_OF_TURN,
    THINK_START,
    THINK_END,
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
]

# Whitespace control (`{%-`) keeps the rendering free of stray newlines, so token boundaries sit on
# special tokens only.
CHAT_TEMPLATE = """\
{%- if tools -%}
<|im_system|>tool_declare<|im_middle|>{{ tools | tojson }}<|im_end|>
{%- endif -%}
{%- set thinking = enable_thinking if enable_thinking is defined else true -%}
{%- for message in messages -%}
{%- set content = message['content'] if message['content'] is string else '' -%}
{%- if message['role'] == 'system' -%}
<|im_system|>system<|im_middle|>{{ content }}<|im_end|>
{%- elif message['role'] == 'user' -%}
<|im_user|>user<|im_middle|>{{ content }}<|im_end|>
{%- elif message['role'] == 'tool' -%}
<|im_system|>tool<|im_middle|>{{ content }}<|im_end|>
{%- elif message['role'] == 'assistant' -%}
<|im_assistant|>assistant<|im_middle|><think>
{%- if thinking and message.get('reasoning_content') -%}{{ message['reasoning_content'] }}{%- endif -%}
</think>{{ content }}
{%- if message.get('tool_calls') -%}
<|tool_calls_section_begin|>
{%- for call in message['tool_calls'] -%}
{%- set fn = call['function'] if call.get('function') else call -%}
<|tool_call_begin|>functions.{{ fn['name'] }}:{{ loop.index0 }}<|tool_call_argument_begin|>
{%- if fn['arguments'] is string -%}{{ fn['arguments'] }}{%- else -%}{{ fn['arguments'] | tojson }}{%- endif -%}
<|tool_call_end|>
{%- endfor -%}
<|tool_calls_section_end|>
{%- endif -%}
<|im_end|>
{%- else -%}
{{ raise_exception('unknown role: ' ~ message['role']) }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|im_assistant|>assistant<|im_middle|>
{%- if not thinking -%}<think></think>{%- endif -%}
{%- endif -%}
"""
