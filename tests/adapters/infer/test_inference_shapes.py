"""Inference on shapes that used to fall through: text in spaceless scripts, rendered chat templates, Python call
code, declarations inside system text, answers beside a prompt turn list, tool results that answer nothing."""

from __future__ import annotations

import pytest

from adapters.infer.detect import detect
from adapters.map import structure as st
from adapters.map.apply import RowError, RowMapper
from adapters.map.declarations import tools_in_text
from adapters.map.pycalls import PyCallError, parse_calls
from adapters.map.rendered import BY_NAME, best_grammar, turns_of
from adapters.spec import AdapterSpec, SourceSpec

SOURCE = SourceSpec(repo_id="t/x", revision="0" * 40, config="default", split="train", data_files=["a.jsonl"])


def test_chinese_and_japanese_prose_is_text_not_ids():
    zh = st.text_stats(["识别并解释给定列表中的两个科学理论：细胞理论和日心说。", "写出狗和猫的两个不同之处。"])
    ja = st.text_stats(["東京は日本の首都で、人口が最も多い都市です。", "猫と犬の違いを説明してください。"])
    ids = st.text_stats(["a1b2c3d4", "e5f6a7b8"])
    assert zh.idlike == 0 and ja.idlike == 0 and zh.texty > 0.3 and ja.texty > 0.3
    assert ids.texty == 0.0


def test_alpaca_with_one_word_and_chinese_instructions_and_empty_input_maps_as_columns():
    rows = [
        {"instruction": q, "input": "", "output": a}
        for q, a in [
            ("hi", "Hello! I am an assistant. How can I help you today?"),
            ("你好", "您好，我是一个人工智能助手，很高兴认识您。请问我能为您做些什么？"),
            ("谢谢", "不客气。我是人工智能助手，很高兴能帮到您。"),
            ("Who are you?", "I am an AI assistant developed by a small team."),
        ]
        * 3
    ]
    d = detect(rows)
    assert d.refusal is None and d.layout == "columns"
    assert d.fields["columns"]["prompt"][0] == "instruction" and d.fields["columns"]["response"] == "output"


def test_a_definition_column_leads_the_prompt_and_a_sparse_input_is_still_joined():
    rows = [
        {
            "task_name": "task001",
            "definition": "In this task you are given a sentence. Classify its sentiment as positive or negative.",
            "inputs": f"Sentence: the film number {i} was a delight from start to end.",
            "targets": "positive" if i % 2 else "negative",
            "note": "see the extra context" if i == 3 else "",
        }
        for i in range(8)
    ]
    d = detect(rows)
    assert d.layout == "columns"
    assert d.fields["columns"]["prompt"][:2] == ["definition", "inputs"]


@pytest.mark.parametrize(
    ("text", "grammar", "want"),
    [
        (
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nWhat is 2+2? [/INST] It is 4. </s><s>[INST] And 3+3? [/INST] 6. </s>",
            "llama2",
            [
                ("system", "Be brief."),
                ("user", "What is 2+2?"),
                ("assistant", "It is 4."),
                ("user", "And 3+3?"),
                ("assistant", "6."),
            ],
        ),
        (
            "Below is an instruction.\n\n### Instruction:\nSort the list.\n\n### Input:\n[3, 1]\n\n### Response:\n[1, 3]",
            "alpaca",
            [("system", "Below is an instruction."), ("user", "Sort the list.\n\n[3, 1]"), ("assistant", "[1, 3]")],
        ),
        (
            "A chat between a user and an assistant. USER: Hello there? ASSISTANT: Hi!</s>USER: Bye? ASSISTANT: Bye.</s>",
            "vicuna",
            [
                ("system", "A chat between a user and an assistant."),
                ("user", "Hello there?"),
                ("assistant", "Hi!"),
                ("user", "Bye?"),
                ("assistant", "Bye."),
            ],
        ),
        (
            "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n",
            "chatml",
            [("system", "Be kind."), ("user", "Hi?"), ("assistant", "Hello.")],
        ),
        (
            "### Human: How are you?### Assistant: Fine, thanks.",
            "guanaco",
            [("user", "How are you?"), ("assistant", "Fine, thanks.")],
        ),
        (
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi?<|eot_id|><|start_header_id|>assistant"
            "<|end_header_id|>\n\nHello.<|eot_id|>",
            "llama3",
            [("user", "Hi?"), ("assistant", "Hello.")],
        ),
        (
            "<start_of_turn>user\nHi?<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>",
            "gemma",
            [("user", "Hi?"), ("assistant", "Hello.")],
        ),
    ],
)
def test_each_public_template_splits_back_into_its_turns(text, grammar, want):
    found = best_grammar([text])
    assert found is not None and found[0].name == grammar
    g, markers = BY_NAME[grammar], found[1]
    got = turns_of(text, markers, anchored=g.anchored, ends=g.ends, preamble=g.preamble, merge=g.merge)
    assert got == want


def test_text_before_the_first_marker_is_never_dropped_unseen():
    with pytest.raises(ValueError, match="before the first speaker marker"):
        turns_of("stray note\nHuman: hi\nAssistant: hello", {"Human:": "user", "Assistant:": "assistant"})


def test_python_call_code_is_parsed_never_evaluated():
    assert parse_calls('[get_weather(city="Oslo", unit="celsius"), calc(expression="2*3")]') == [
        {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}},
        {"name": "calc", "arguments": {"expression": "2*3"}},
    ]
    assert parse_calls("math.factorial(n=5)") == [{"name": "math.factorial", "arguments": {"n": 5}}]
    assert parse_calls("[f(3, b=(1, 2))]", {"f": ["a", "b"]}) == [{"name": "f", "arguments": {"a": 3, "b": [1, 2]}}]
    for hostile in (
        '[__import__("os").system("id")]',
        "[f(a=open('/etc/passwd'))]",
        "[f(**kw)]",
        "[f(1)]",
        "[x for x in y]",
        "[f(a={1, 2})]",
    ):
        with pytest.raises(PyCallError):
            parse_calls(hostile)


def test_declarations_in_system_text_become_tools():
    text = (
        'You may call these:\n[{"name": "get_weather", "description": "Weather", "parameters": {"type": "object", '
        '"properties": {"city": {"type": "string"}}}}]\nAnswer as [func(a=b)].'
    )
    tools = tools_in_text(text)
    assert tools is not None and [t["function"]["name"] for t in tools] == ["get_weather"]
    assert tools_in_text('The call {"name": "f", "arguments": {}} is not a declaration') is None


def _spec(**fields) -> AdapterSpec:
    return AdapterSpec.from_data({"source": SOURCE.model_dump(), "mode": "native", **fields})


def test_a_tool_result_with_no_earlier_call_rejects_its_row_by_name():
    spec = _spec(
        layout="messages",
        messages_path="c",
        role_key="from",
        content_key="value",
        role_map={"human": "user", "gpt": "assistant", "observation": "tool"},
    )
    row = {
        "c": [{"from": "human", "value": "hi"}, {"from": "observation", "value": "{}"}, {"from": "gpt", "value": "ok"}]
    }
    with pytest.raises(RowError, match="no earlier tool call"):
        RowMapper(spec).apply(0, row)


def test_chosen_and_rejected_turn_objects_beside_the_prompt_list():
    rows = [
        {
            "conversations": [{"from": "human", "value": f"How do I sort list number {i} in Python quickly?"}],
            "chosen": {"from": "gpt", "value": f"Use sorted(xs) for list {i}; it returns a new sorted list."},
            "rejected": {"from": "gpt", "value": "No."},
        }
        for i in range(6)
    ]
    d = detect(rows)
    assert d.fields["completion_path"] == "chosen" and d.fields["preference"] == {"rejected": "rejected"}
    assert d.fields["role_map"] == {"human": "user", "gpt": "assistant"}


def test_numbered_message_columns_are_one_conversation_in_number_order():
    rows = [
        {
            "message_2": f"Use a binary search for list {i}; it halves the range on every step until it finds it.",
            "message_1": f"How do I find item {i} in a sorted list quickly?",
            "message_3": "And if the list is not sorted?" if i % 2 else None,
            "message_4": "Then sort it first, or scan it once; a scan is linear in the list length." if i % 2 else None,
        }
        for i in range(6)
    ]
    d = detect(rows)
    assert d.layout == "turn_columns"
    assert [(t["field"], t["role"]) for t in d.fields["turn_columns"]] == [
        ("message_1", "user"),
        ("message_2", "assistant"),
        ("message_3", "user"),
        ("message_4", "assistant"),
    ]
    spec = _spec(layout="turn_columns", turn_columns=d.fields["turn_columns"])
    rec = RowMapper(spec).apply(1, rows[1])[0]
    assert [m.role for m in rec.messages] == ["user", "assistant", "user", "assistant"]
    with pytest.raises(RowError, match="after the empty turn column"):
        RowMapper(spec).apply(0, {**rows[0], "message_2": None, "message_3": "stray"})


def test_numbered_options_that_read_alike_are_not_a_dialogue():
    rows = [
        {
            "question": f"Which sorting algorithm is stable, case {i}?",
            "option_1": "merge sort is stable",
            "option_2": "heap sort is not stable",
            "option_3": "quick sort is not stable",
            "answer": "1",
        }
        for i in range(6)
    ]
    assert detect(rows).layout != "turn_columns"


def _ranked_rows():
    return [
        {
            "instruction": f"How do I profile slow function number {i} in a Python service?",
            "completions": [
                {
                    "response": f"Use cProfile on function {i} and sort the output by cumulative time.",
                    "overall_score": 9,
                },
                {"response": "Guess.", "overall_score": 2},
                {"response": f"Add timing logs around function {i} and compare the runs.", "overall_score": 6},
            ],
        }
        for i in range(6)
    ]


def test_ranked_candidates_regenerate_by_default_and_best_never_trains_the_loser():
    rows = _ranked_rows()
    d = detect(rows)
    assert d.fields["candidates"]["field"] == "completions" and d.fields["candidates"]["policy"] == "regenerate"
    fields = {k: v for k, v in d.fields.items() if k in ("layout", "columns", "candidates")}
    regen = RowMapper(_spec(**fields).model_copy(update={"mode": "regenerate"})).apply(0, rows[0])[0]
    assert [m.role for m in regen.messages] == ["user"]
    best = _spec(**{**fields, "candidates": {**fields["candidates"], "policy": "best"}})
    rec = RowMapper(best).apply(0, rows[0])[0]
    assert rec.messages[-1].content.startswith("Use cProfile") and rec.messages[-1].train is True
    assert rec.preference is not None and rec.preference.rejected[0].content == "Guess."
    assert all(m.train is False for m in rec.preference.rejected)
    tie = {
        **rows[0],
        "completions": [{"response": "a b c", "overall_score": 5}, {"response": "d e f", "overall_score": 5}],
    }
    with pytest.raises(RowError, match="tie"):
        RowMapper(best).apply(0, tie)


def test_a_battle_without_a_winner_trains_nothing():
    conv = lambda a: [{"role": "user", "content": "Why is my build slow?"}, {"role": "assistant", "content": a}]  # noqa: E731
    rows = [
        {
            "conversation_a": conv(f"Cache the dependencies, run {i}."),
            "conversation_b": conv("No idea."),
            "winner": ["model_a", "model_b", "tie"][i % 3],
        }
        for i in range(6)
    ]
    d = detect(rows)
    c = d.fields["candidates"]
    assert c["sides"] == ["conversation_a", "conversation_b"] and c["winners"] == {"model_a": 0, "model_b": 1}
    spec = _spec(
        layout="messages",
        messages_path="conversation_a",
        role_key="role",
        content_key="content",
        role_map={"user": "user", "assistant": "assistant"},
        candidates={**c, "policy": "best"},
    )
    won = RowMapper(spec).apply(1, rows[1])[0]
    assert won.messages[-1].content == "No idea." and won.preference.rejected[0].train is False
    with pytest.raises(RowError, match="without a winner"):
        RowMapper(spec).apply(2, rows[2])


def test_a_model_naming_a_template_gets_its_grammar_and_the_contract_still_decides():
    """Fake LLM replies (ModelSpec objects, labelled as such): a right and a wrong template name."""
    from adapters.infer.infer import build_proposal
    from adapters.infer.llm_spec import ModelSpec, _detected
    from adapters.prove.contract import run_contract
    from adapters.read.source import RawRow

    rows = [
        {"t": f"<s>[INST] Why does build {i} take so long on CI? [/INST] The cache for build {i} is cold. </s>"}
        for i in range(6)
    ]
    raw = [RawRow(i, r, None) for i, r in enumerate(rows)]
    for template, passes in (("llama2", True), ("chatml", False)):
        reply = ModelSpec(layout="transcript", transcript_field="t", transcript_template=template, why="fake reply")
        d = _detected(reply, "structure undecided", rows)
        if not passes and not d.fields["transcript"]["markers"]:
            d.fields["transcript"]["markers"] = {"<|im_start|>user": "user"}  # the wrong template finds nothing
        spec = build_proposal(d, list(enumerate(rows)), SOURCE, "").spec
        assert run_contract(spec, raw).passed is passes, template


def test_battle_sides_that_answer_different_prompts_are_rejected():
    spec = _spec(
        layout="messages",
        messages_path="a",
        role_key="role",
        content_key="content",
        role_map={"user": "user", "assistant": "assistant"},
        mode="regenerate",
        candidates={"sides": ["a", "b"], "winner_field": "winner", "winners": {"model_a": 0, "model_b": 1}},
    )
    a = [{"role": "user", "content": "Why is CI slow?"}, {"role": "assistant", "content": "Cold caches."}]
    b = [{"role": "user", "content": "Cold caches."}, {"role": "assistant", "content": "Why is CI slow?"}]
    with pytest.raises(RowError, match="misaligned"):
        RowMapper(spec).apply(0, {"a": a, "b": b, "winner": "model_a"})


@pytest.mark.parametrize(
    "family",
    [
        "llama2-rendered-text",
        "camel-numbered-messages",
        "ultrafeedback-ranked-completions",
        "chatbot-arena-battles",
        "toolace-pythonic-calls",
        "natural-instructions-definition",
    ],
)
def test_new_layouts_round_trip_through_yaml_with_the_same_hash(family):
    import json as _json

    from adapters.infer.infer import build_proposal
    from eval.bench.schema_scoreboard import DEFAULT_CORPUS, _rows

    folder = DEFAULT_CORPUS / family
    meta = _json.loads((folder / "family.json").read_text())
    rows = [(r.row_index, r.row) for r in _rows(folder, meta["files"]) if r.row is not None]
    spec = build_proposal(detect([r for _, r in rows], file_names=meta["files"]), rows, SOURCE, "").spec
    again = AdapterSpec.from_yaml(spec.to_yaml())
    assert again == spec and again.spec_hash() == spec.spec_hash()


def test_specs_without_the_new_fields_keep_their_hash():
    spec = _spec(
        layout="transcript", transcript={"field": "t", "markers": {"Human:": "user", "Assistant:": "assistant"}}
    )
    payload = spec.hashed_payload()
    assert payload["transcript"] == {"field": "t", "markers": {"Human:": "user", "Assistant:": "assistant"}}
    for name in ("candidates", "turn_columns", "tools_in_system"):
        assert name not in payload
