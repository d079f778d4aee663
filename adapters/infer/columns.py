"""Layouts without a turn list: single-turn columns (by content statistics) and dialogue transcripts.

Single-turn: the text columns are found by their values (wordy, varied, not ids or labels); the prompt is
the prompt-like one (questions, instructions, earlier in the row) and the answer the long response-like
one, whatever their names; names only break ties. A row with one text column is plain text without
turns and is refused by name; a row with none has no text at all. Transcripts are text columns whose
lines start with speaker markers (`Human:` / `Assistant:`, `### Instruction:` / `### Response:`).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from adapters.infer.column_names import (
    CHOSEN,
    EXTRA_PROMPT_NAMES,
    INSTRUCTION_NAMES,
    LABEL_NAMES,
    PROMPT_NAMES,
    REJECTED,
    RESPONSE_NAMES,
    SCORE_NAMES,
)
from adapters.infer.continuation import continued_columns
from adapters.infer.roles import detect_markers
from adapters.map import structure as st
from adapters.map.aliases import canonical_role
from adapters.map.rendered import BY_NAME

if TYPE_CHECKING:
    from adapters.detected import Detected

MARKER = re.compile(r"(?:^|\n)[ \t]*((?:#{1,3} ?)?[A-Za-z][A-Za-z_]{1,20}(?: [A-Za-z]{2,12})?):")


CHATML = re.compile(BY_NAME["chatml"].markers[0][0])  # ChatML's header, as its grammar declares it
SPEAKERS = ("user", "assistant", "system", "tool")


def _speaker(marker: str) -> str | None:
    """The role a full marker (`Human:`, `### Response:`, `<|im_start|>user`) names."""
    name = marker.removeprefix("<|im_start|>").rstrip(":").lstrip("# ")
    role = canonical_role(name)
    return role if role in SPEAKERS else None


def _markers(text: str) -> list[str]:
    """Speaker markers at line starts: `Name:` lines, or ChatML `<|im_start|>role` headers."""
    found = [f"{m}:" for m in MARKER.findall(text)] + [f"<|im_start|>{m}" for m in CHATML.findall(text)]
    return [m for m in found if _speaker(m)]


def detect_transcript(d: Detected, rows: list[dict[str, Any]], skip: set[str]) -> bool:
    from adapters.infer.learned_markers import learn_grammar
    from adapters.map.rendered import BY_NAME, Grammar, best_grammar

    found: dict[str, tuple[dict[str, str], int, int]] = {}
    grammars: dict[str, Grammar] = {}
    for name in dict.fromkeys(k for r in rows for k in r):
        values = [r[name] for r in rows if isinstance(r.get(name), str)]
        if name in skip or len(values) < 0.8 * len(rows) or not values:
            continue
        per_row = [_markers(v) for v in values]
        ok = [m for m in per_row if {_speaker(x) for x in m} >= {"user", "assistant"}]
        # A public chat template first (its markers need not start a line), unless line-start speaker markers
        # it does not know (glaive's `FUNCTION RESPONSE:`) would be swallowed into its turns.
        rendered = best_grammar(values)
        if rendered and rendered[2] >= 0.8 * len(values) and {x for m in ok for x in m} <= set(rendered[1]):
            read_by, markers, n_ok = rendered
            found[name], grammars[name] = (markers, n_ok, len(values)), read_by
            continue
        if len(ok) >= 0.8 * len(values):
            counts = Counter(x for m in ok for x in m)
            found[name] = ({x: _speaker(x) or "user" for x in counts}, len(ok), len(values))
            continue
        # No listed template and no line-start labels: markers learned from the rows, when consistent.
        learned = learn_grammar(values)
        if learned:
            found[name], grammars[name] = (learned[1], learned[2], len(values)), learned[0]
    if not found:
        return False
    chosen = next((n for n in CHOSEN if n in found), None)
    rejected = next((n for n in REJECTED if n in found), None)
    name = chosen if chosen and rejected else max(found, key=lambda n: found[n][1])
    markers, n_ok, total = found[name]
    grammar = grammars.get(name)
    section: dict[str, Any] = {"field": name, "markers": markers}
    if grammar is not None:
        section.update(template=grammar.name, anchored=grammar.anchored, ends=list(grammar.ends))
        section.update(preamble=grammar.preamble, merge=grammar.merge)
        where = (
            f"rendered by the {grammar.name} chat template (adapters/map/rendered.py)"
            if grammar.name in BY_NAME
            else "rendered by a template not in adapters/map/rendered.py: markers learned from the rows, consistent "
            "across them (adapters/infer/learned_markers.py)"
        )
    else:
        where = "at line starts"
    d.decide(
        "layout",
        "transcript",
        f"column {name!r} holds whole dialogues: {n_ok}/{total} rows have speaker markers {sorted(markers)} {where}",
    )
    d.decide(
        "transcript",
        section,
        "speaker markers → roles: "
        + ", ".join(f"{k}→{v}" for k, v in markers.items())
        + (f"; text before the first marker is the {grammar.preamble} prompt" if grammar and grammar.preamble else "")
        + ("; adjacent segments of one role are one turn" if grammar and grammar.merge else ""),
        review=True,
    )
    if chosen and rejected:
        d.decide(
            "preference",
            {"rejected": rejected},
            f"preference pairs: {chosen!r} chosen, {rejected!r} rejected (recorded, never trained)",
        )
    from adapters.map.rendered import split

    anchored, ends = section.get("anchored", True), section.get("ends") or ()
    texts = [
        t
        for r in rows
        if isinstance(r.get(name), str)
        for role, t in split(r[name], markers, anchored, ends)
        if role == "assistant"
    ]
    detect_markers(d, texts)
    return True


def _calls_column(values: list[Any]) -> bool:
    decoded = [st.decoded(v)[0] for v in values if v not in (None, "")]
    return bool(decoded) and all(
        isinstance(v, (list, dict))
        and all(
            isinstance(c, dict) and isinstance(c.get("name") or (c.get("function") or {}).get("name"), str)
            for c in (v if isinstance(v, list) else [v])
        )
        for v in decoded
    )


def _name_score(name: str, names: tuple[str, ...]) -> float:
    low = name.lower()
    if low in names:
        return 0.6 - 0.02 * names.index(low)
    return 0.25 if any(n in low for n in names[:8]) else 0.0


def detect_columns(d: Detected, rows: list[dict[str, Any]], skip: set[str], card_text: str = "") -> bool:
    order = [k for k in dict.fromkeys(k for r in rows for k in r) if k not in skip]
    stats = {k: st.text_stats([r.get(k) for r in rows]) for k in order}
    # Text by its values; a well-known prompt/answer name (`instruction`, `response`) is enough for string
    # columns whose sample is too short to judge (a prior, it never overrides values that read as ids).
    named = set(PROMPT_NAMES[:6] + RESPONSE_NAMES[:6])
    # a system prompt column is neither side of the exchange: it becomes the system turn (detect._system_column),
    # never the answer of a prompt set that has no answer
    system = set(_system_names(order))
    texts = [
        k
        for k in order
        if k not in system
        and stats[k].strings >= 0.5 * len(rows)
        and (stats[k].texty >= 0.15 or (k.lower() in named and len(rows) < 5))
        and not all(st.decoded(r.get(k))[1] for r in rows if isinstance(r.get(k), str))
    ]
    from adapters.infer.request_column import request_annotations

    notes = request_annotations(rows, texts) if len(texts) > 1 else {}
    if notes and len(notes) < len(texts):  # text about the request is neither the request nor its answer
        texts = [k for k in texts if k not in notes]
        d.decide("drop", {**d.fields.get("drop", {}), **notes}, "columns that annotate the request", review=True)
    # Short answers (`Paris`) and one-word instructions (`hi`, `你好`) read like labels by their values; a
    # prompt- or answer-named column of varied strings beside a text column of the other kind is still that
    # side of the exchange (short-answer QA, identity sets), never a label set.
    for names, other in ((RESPONSE_NAMES, PROMPT_NAMES), (PROMPT_NAMES, RESPONSE_NAMES)):
        if texts and any(_name_score(k, other) for k in texts):
            texts += [
                k
                for k in order
                if k not in texts
                and k.lower() in names
                and stats[k].strings >= 0.9 * len(rows)
                and stats[k].distinct >= 2
                and not any(st.decoded(r.get(k))[1] for r in rows if isinstance(r.get(k), str))
            ]
    calls = [k for k in order if k not in texts and _calls_column([r.get(k) for r in rows])]
    if not texts:
        d.refuse("no_text", f"no column holds natural-language text among {order}")
        return False
    speaker = _speaker_column(rows, order)
    if speaker:
        d.refuse(
            "message_per_row",
            f"column {speaker!r} holds a role label per row: every row is one message "
            "(a message tree or log), not a conversation; rebuild conversations first",
        )
        return False
    chosen = next((k for k in texts if k.lower() in CHOSEN), None)
    rejected = next((k for k in texts if k.lower() in REJECTED), None)
    pool = [k for k in texts if k not in (chosen, rejected)]
    if chosen and rejected and pool:
        prompt = max(pool, key=lambda k: (_name_score(k, PROMPT_NAMES), -order.index(k)))
        response, why = chosen, f"preference pair: {chosen!r} chosen, {rejected!r} rejected"
        d.decide(
            "preference",
            {"rejected": rejected, **_scores(order)},
            f"preference pairs: the rejected answer {rejected!r} is recorded, never trained",
        )
    elif calls and pool + ([chosen] if chosen else []):
        pool = texts
        prompt = max(pool, key=lambda k: (_name_score(k, PROMPT_NAMES), -order.index(k)))
        response, why = calls[0], f"{calls[0]!r} holds the answer as a list of tool calls"
    elif chosen and rejected:  # the two sides of a pair never answer each other
        d.refuse("no_dialogue", f"preference pair {chosen!r} / {rejected!r} with no prompt column beside it")
        return False
    elif len(texts) < 2:  # a set of prompts (regenerate mode), or plain text: by the evidence both ways
        from adapters.infer.request_column import requests_only

        return "candidates" not in d.fields and requests_only(d, rows, texts[0], card_text) or _plain(d, texts[0])
    else:
        pair_prompt, pair_response, why = _pair(texts, stats, order)
        if pair_prompt is None or pair_response is None:
            d.refuse("no_dialogue", why)
            return False
        from adapters.infer.request_column import split_request

        # the pair is all the text there is, and the "answer" is the rest of the request: prompts alone
        if len(texts) == 2 and split_request(d, rows, pair_prompt, pair_response):
            return True
        prompt, response = pair_prompt, pair_response
    left_out = {rejected, *_system_names(order), *d.fields.get("drop", {})}
    prompt_cols = _prompt_columns(rows, order, prompt, response, left_out)
    history = next((k for k in order if k not in texts and _exchanges([r.get(k) for r in rows])), None)
    if history:
        d.reasons["columns.history"] = (
            f"column {history!r} holds earlier (user, assistant) exchanges: they come before the prompt"
        )
    from adapters.infer.answer_head import split_answer

    paired = bool(chosen and rejected)  # a preference pair's sides are whole answers, never halves of one
    head = None if response in calls or paired else split_answer(rows, prompt_cols, response, texts)
    if head and head[1] == prompt:
        head = None  # the column read as the request opens nothing
    if head:  # one answer over two columns: the opening leaves the prompt, the rest is the response
        prompt_cols, response = head[0], head[2]
    answer = f"[{head[1]!r}, {response!r}]" if head else repr(response)
    d.decide("layout", "columns", f"no turn list; single-turn columns {prompt_cols} → {answer} ({why})")
    continues = continued_columns(rows, prompt_cols)
    d.decide(
        "columns",
        {
            "prompt": prompt_cols,
            "response": response,
            "response_is_tool_calls": response in calls,
            **({"history": history} if history else {}),
            **({"continues": continues} if continues else {}),
            **({"response_head": head[1]} if head else {}),
        },
        f"prompt from {prompt_cols} ({stats[prompt].mean_chars:.0f} chars, {stats[prompt].questions} "
        f"questions), answer from {response!r}"
        + (f"; {continues} continue the sentence of the column before them (joined with a space)" if continues else "")
        + (f"; {head[3]} (the two joined with a space)" if head else ""),
        review=not _name_score(prompt, PROMPT_NAMES) or bool(continues) or bool(head),
    )
    json_cols = [c for c in (response,) if any(st.decoded(r.get(c))[1] for r in rows)]
    if json_cols:
        d.fields.setdefault("json_fields", []).extend(json_cols)
    label = next((k for k in order if k.lower() in LABEL_NAMES and _boolish([r.get(k) for r in rows])), None)
    if label:
        d.decide(
            "label_field",
            label,
            f"column {label!r} labels each answer true/false (KTO-style): "
            "undesirable answers are recorded, never trained",
        )
    detect_markers(d, [r[response] for r in rows if isinstance(r.get(response), str)])
    return True


def _plain(d: Detected, column: str) -> bool:
    if d.refusal is None:  # ranked candidates read the prompt themselves (adapters/map/candidates.py)
        d.refuse("plain_text", f"one text column {column!r} and no second one to answer it")
    return False


def _system_names(order: list[str]) -> list[str]:
    from adapters.map.aliases import SYSTEM_COLUMNS

    return [k for k in order if k.lower() in SYSTEM_COLUMNS]


def _prompt_columns(
    rows: list[dict[str, Any]], order: list[str], prompt: str, response: str, skip: set[str | None]
) -> list[str]:
    """Every column the prompt is made of: an instruction/definition/task column first, then the prompt and the
    context columns (alpaca `input`, dolly `context`, Natural-Instructions `inputs`) in row order. A context
    column is judged on its non-empty values, so an `input` that is empty on most rows is still joined where it
    holds text, never dropped. Text columns after the answer are left to the contract's field accounting."""
    before = order.index(response) if response in order else len(order)
    extra = []
    for k in order:
        if k in (prompt, response) or k in skip:
            continue
        filled = [r[k] for r in rows if isinstance(r.get(k), str) and r[k].strip()]
        if not filled or any(r.get(k) is not None and not isinstance(r.get(k), str) for r in rows):
            continue
        if any(st.decoded(v)[1] for v in filled):
            continue
        stats = st.text_stats(filled)
        named = k.lower() in INSTRUCTION_NAMES + EXTRA_PROMPT_NAMES
        # by position only when it varies: one value on every row is metadata (a role name, a source), not text
        varied = stats.distinct >= 2 or len(filled) < 3
        if named or (order.index(k) < before and stats.texty >= 0.15 and varied):
            extra.append(k)
    head = [k for k in extra if k.lower() in INSTRUCTION_NAMES and prompt.lower() not in INSTRUCTION_NAMES]
    if prompt.lower() in INSTRUCTION_NAMES:
        head = [prompt]
    # the rest in row order: a request split over two columns reads in the order the columns were written
    return [*head, *(k for k in order if (k == prompt or k in extra) and k not in head)]


def _exchanges(values: list[Any]) -> bool:
    present = [v for v in values if v not in (None, [])]
    return bool(present) and all(
        isinstance(v, list)
        and all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in v)
        for v in present
    )


def _speaker_column(rows: list[dict[str, Any]], order: list[str]) -> str | None:
    """A column whose values are role labels (one message per row)."""
    for k in order:
        values = [r[k] for r in rows if isinstance(r.get(k), str)]
        labels = set(values)
        if (
            len(values) >= 0.8 * len(rows)
            and 2 <= len(labels) <= 6
            and all(canonical_role(v) in ("user", "assistant", "system") for v in labels)
        ):
            return k
    return None


def _scores(order: list[str]) -> dict[str, str]:
    out = {}
    for side, names in SCORE_NAMES.items():
        hit = next((k for k in order if k.lower() in names), None)
        if hit:
            out[f"{side}_score"] = hit
    return out


def _boolish(values: list[Any]) -> bool:
    present = [v for v in values if v is not None]
    return bool(present) and all(
        isinstance(v, bool) or v in (0, 1) or (isinstance(v, str) and v.lower() in ("true", "false")) for v in present
    )


def _pair(texts: list[str], stats: dict[str, st.TextStats], order: list[str]) -> tuple[str | None, str | None, str]:
    """(prompt, response, why) among ≥2 text columns: names where they speak, else the values."""

    def prompt_score(k: str) -> float:
        s = stats[k]
        return _name_score(k, PROMPT_NAMES) + 0.4 * s.questions / max(s.strings, 1) - 0.05 * order.index(k)

    def response_score(k: str) -> float:
        return _name_score(k, RESPONSE_NAMES) + 0.3 * min(1.0, stats[k].mean_chars / 1500)

    # a task definition / instruction column states the task: it leads the prompt, it never answers it
    pairs = [(p, r) for p in texts for r in texts if p != r and r.lower() not in INSTRUCTION_NAMES]
    if not pairs:
        return None, None, f"text columns {texts} all state the task: no column answers it"
    p, r = max(
        pairs,
        key=lambda pr: (
            prompt_score(pr[0])
            + response_score(pr[1])
            + (0.15 if stats[pr[1]].mean_chars > stats[pr[0]].mean_chars else 0.0)
        ),
    )
    named = _name_score(p, PROMPT_NAMES) and _name_score(r, RESPONSE_NAMES)
    answer_like = stats[r].mean_chars >= 1.3 * stats[p].mean_chars or stats[p].questions >= 0.3 * max(
        stats[p].strings, 1
    )
    if not named and not _name_score(r, RESPONSE_NAMES) and not _name_score(p, PROMPT_NAMES) and not answer_like:
        return (
            None,
            None,
            (
                f"text columns {texts} read alike (mean "
                + ", ".join(f"{k} {stats[k].mean_chars:.0f}" for k in texts)
                + " chars, few questions): no prompt with its answer"
            ),
        )
    why = (
        "named prompt/answer columns"
        if named
        else (
            f"by content: {p!r} is prompt-like (mean {stats[p].mean_chars:.0f} chars, "
            f"{stats[p].questions}/{stats[p].strings} questions), {r!r} answer-like (mean {stats[r].mean_chars:.0f} chars)"
        )
    )
    return p, r, why
