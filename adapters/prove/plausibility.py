"""Structural plausibility of canonical records: what no real conversation looks like.

Two kinds of checks, each with a stable name (the contract's check names, counted and quarantined by):

- per record (`record_problems`): the contract runs them on its sample, ingest on every record, so a
  record that fails one is quarantined with the check's name wherever it is met. A few such rows in a
  dataset are tolerated (quarantined and counted); the dataset fails past the spec's `max_bad_fraction`.
- per dataset (`dataset_problems`): patterns over many records that one record cannot show (the prompt
  is a short label repeated across rows, answers shorter than their prompts: columns swapped or wrong).

Why each check exists is in `WHY`; the contract prints it with the failing rows.
"""

from __future__ import annotations

import re
from collections import Counter
from statistics import median
from typing import Any

from adapters.map.markup import find_markup
from adapters.records import Conversation
from catalog import limits

MEDIA_MARK = re.compile(r"<(image|audio|video)>")
DUPLICATE_MIN = 30  # chars: shorter turns repeat legitimately ("thanks", "continue")
LABEL_MAX_CHARS = 30  # a prompt this short and repeated across rows is a label, not a request
ANSWER_REPEAT_CHARS = 40  # an answer this long, the same on most rows, is a constant field, not an answer
MIN_ROWS_FOR_PATTERNS = 8
UNASKED_SHARE = 0.1  # prompts reading as requests, below which a column layout's task may be missing

WHY: dict[str, str] = {
    "content": "a turn with no text, call or media trains or prompts on nothing",
    "nesting": "content that is itself a serialised turn list means a JSON field was never decoded",
    "tool_arguments": "tool-call arguments must be a JSON object, as the OpenAI API takes them",
    "tool_links": "a tool result answers a call; one with no earlier call is a broken or mis-mapped turn",
    "observations": "a tool result belongs right after the step that called it",
    "media": "a media placeholder without its media part would be trained as text",
    "preference": "the rejected side of a preference pair must never be trained",
    "label": "an answer labelled undesirable must never be trained",
    "preference_prompt": "a preference pair is two answers to one prompt; sides with different prompts are misaligned",
    "regenerate_cut": "regeneration needs a context that ends on a user turn",
    "native_trainable": "native data must end on a trainable assistant turn",
    "system_position": "a system prompt opens a conversation; a `system` turn later is a mis-mapped speaker",
    "role_sequence": "an assistant turn answers something; two in a row (no call between) or one that opens "
    "the conversation is a dropped turn or a mis-mapped role",
    "markup": "chat-template markup or wrapper tags left in content are trained as if they were text",
    "duplicate_turns": "the same text said by two speakers of one record is one field mapped twice",
    "prompt_label_like": "a prompt that is a short value repeated across rows is a metadata column, not a request",
    "answer_shorter": "answers shorter than their prompts, and phrased as questions, on most rows: columns swapped",
    "answer_repeated": "one long answer on most rows is a constant field (a task definition) mapped as the answer",
    "prompt_column_label": "a prompt column holding one-word category values is metadata joined into the request",
    "prompt_unasked": "prompts that ask nothing, each only a template's input slot or text to label, miss their "
    "task statement (an instruction column not mapped): the target would not know what it is asked",
    "prompt_split": "one sentence split over two prompt columns, joined with a blank line, is broken mid-sentence",
    "answer_split": "an answer whose opening sits in a prompt column trains half the answer as the user's words",
}
RECORD_CHECKS = (
    "content",
    "nesting",
    "tool_arguments",
    "tool_links",
    "observations",
    "media",
    "preference",
    "preference_prompt",
    "label",
    "regenerate_cut",
    "native_trainable",
    "system_position",
    "role_sequence",
    "markup",
    "duplicate_turns",
)


def _looks_nested(content: str) -> bool:
    """Content that is itself a serialised turn list / object: a JSON field that was never decoded."""
    text = content.lstrip()
    if not text.startswith(("[{", "{")):
        return False
    try:
        value = limits.loads_limited(text)
    except limits.LimitExceeded:
        return False
    items = value if isinstance(value, list) else [value]
    return any(isinstance(v, dict) and ({"role", "from"} & v.keys()) for v in items)


def _arguments_object(arguments: str) -> bool:
    try:
        return isinstance(limits.loads_limited(arguments), dict)
    except limits.LimitExceeded:
        return False


def _tools(rec: Conversation, out: list[tuple[str, str]]) -> list[str]:
    """Calls parse and every tool turn answers an earlier call right after its step. Returns undeclared calls."""
    declared = {t.function.name for t in rec.tools or []}
    undeclared: list[str] = []
    seen: set[str] = set()
    prev = None
    for i, m in enumerate(rec.messages):
        for c in m.tool_calls or []:
            seen.add(c.id)
            if not _arguments_object(c.function.arguments):
                out.append(
                    ("tool_arguments", f"messages[{i}] call {c.function.name!r}: arguments are not a JSON object")
                )
            if c.function.name not in declared:
                undeclared.append(c.function.name)
        if m.role == "tool":
            if m.tool_call_id is None or m.tool_call_id not in seen:
                out.append(("tool_links", f"messages[{i}] tool turn answers no earlier call"))
            elif prev is None or not (prev.role == "tool" or (prev.role == "assistant" and prev.tool_calls)):
                out.append(("observations", f"messages[{i}] tool result is not attached to the step that called it"))
        prev = m
    return undeclared


def _sequence(rec: Conversation, out: list[tuple[str, str]]) -> None:
    msgs = rec.messages
    opening = 0
    while opening < len(msgs) and msgs[opening].role == "system":
        opening += 1
    for i in range(opening, len(msgs)):
        m = msgs[i]
        if m.role == "system":
            out.append(("system_position", f"messages[{i}] is a system turn after the conversation started"))
            break
    for i in range(opening, len(msgs)):
        m = msgs[i]
        if m.role != "assistant":
            continue
        prev = msgs[i - 1] if i > opening else None
        if prev is None:
            if _assistant_first(msgs[opening:], rec.mode):
                continue
            out.append(("role_sequence", f"messages[{i}] assistant turn opens the conversation: it answers nothing"))
            break
        if prev.role == "assistant" and not prev.tool_calls:
            out.append(("role_sequence", f"messages[{i}] assistant turn follows an assistant turn that called nothing"))
            break


def _assistant_first(msgs: list[Any], mode: str) -> bool:
    """A conversation the assistant opens for real (a support agent's greeting, a system-initiative dialogue):
    the opener asks, a user turn answers it and, when the record keeps its answers, the assistant has the last word.
    Roles inverted by a wrong mapping are judged across rows from the exchanges themselves (answers that read
    as requests: `_swapped`), not by who opens one row."""
    spoken = [m for m in msgs if m.role in ("user", "assistant")]
    last_word = mode != "native" or spoken[-1].role == "assistant"  # regenerate records end on the cut user turn
    # An opener that solicits ("What can I help with?"), where an answer left opening a row by a lost user turn
    # states things.
    asks = spoken[0].content.rstrip().endswith(("?", "？"))
    return len(spoken) >= 2 and spoken[1].role == "user" and last_word and asks


def _norm(text: str) -> str:
    return " ".join(text.split())


def _same(x: str, y: str) -> bool:
    short, long_ = (x, y) if len(x) <= len(y) else (y, x)
    return len(short) >= DUPLICATE_MIN and short in long_ and len(short) >= 0.8 * len(long_)


def _duplicates(rec: Conversation, out: list[tuple[str, str]]) -> None:
    """The first answer repeating its request (a prompt as its own answer), or a system prompt that is the
    first request again: one field mapped twice, which shows in the first exchange of every record. Later
    turns repeat for real (an observation echoing code the agent wrote, a user asking again)."""
    msgs = rec.messages
    first_user = next((i for i, m in enumerate(msgs) if m.role == "user"), None)
    if first_user is None:
        return
    pairs = [(first_user, first_user + 1)] if first_user + 1 < len(msgs) else []
    if first_user > 0 and msgs[0].role == "system":
        pairs.append((0, first_user))
    for i, j in pairs:
        if "tool" in (msgs[i].role, msgs[j].role):
            continue
        x, y = _norm(msgs[i].content), _norm(msgs[j].content)
        if _same(x, y):
            out.append(("duplicate_turns", f"messages[{i}] and messages[{j}] hold the same text ({x[:40]!r})"))
            return


def record_problems(rec: Conversation) -> tuple[list[tuple[str, str]], list[str]]:
    """((check name, detail) per problem of one record, names of undeclared tools called)."""
    out: list[tuple[str, str]] = []
    for i, m in enumerate(rec.messages):
        if not m.content.strip() and not m.tool_calls and not m.parts:
            out.append(("content", f"messages[{i}] ({m.role}) has empty content"))
        elif _looks_nested(m.content):
            out.append(("nesting", f"messages[{i}] content is a serialised turn list"))
        if not m.parts and MEDIA_MARK.search(m.content):
            out.append(("media", f"messages[{i}] has a media placeholder but no media part"))
        for entry, hit in find_markup(m.content, m.role):
            out.append(("markup", f"messages[{i}] ({m.role}) holds {entry.what}: {hit!r}"))
    undeclared = _tools(rec, out)
    last = rec.messages[-1]
    if rec.mode == "regenerate" and last.role != "user":
        out.append(("regenerate_cut", f"context ends on {last.role}"))
    if rec.mode == "native" and not (last.role == "assistant" and last.train):
        out.append(("native_trainable", "does not end on a trainable assistant turn"))
    if rec.preference and any(m.train for m in rec.preference.rejected):
        out.append(("preference", "trains a rejected answer"))
    if rec.preference and any(m.role in ("user", "system") for m in rec.preference.rejected):
        # the rejected side keeps only what follows the shared prompt: a user turn there means the two
        # sides were asked different things (misaligned columns), not two answers to one prompt
        out.append(("preference_prompt", "the chosen and rejected sides differ before the answer"))
    if rec.label is False and any(m.train for m in rec.messages):
        out.append(("label", "trains an answer labelled undesirable"))
    _sequence(rec, out)
    _duplicates(rec, out)
    return out, undeclared


# -- patterns over the whole sample --------------------------------------------------------------
# A request: a question (any script's question mark) or an English question word / imperative opening it.
_QUESTION = re.compile(
    r"[?？]\s*$|^\s*(?:what|why|how|when|where|which|who|can|could|is|are|do|does|should|write|explain|describe|"
    r"create|implement|give|list|summari[sz]e|generate|translate|fix|tell|show|find|compute|calculate|please|"
    r"classify|identify|determine|in this task)\b"
    r"|^\s*(?:请|解释|写|描述|识别|列出|给出|翻译|生成|计算|什么|为什么|如何|怎么|怎样|哪|説明|教えて|何|なぜ|どう)"
    # CJK requests that end on their request form, as English ones open on theirs: Japanese polite imperatives
    # and question endings, Korean imperatives and question endings, Chinese question particles
    r"|(?:ください|下さい|なさい|ませんか|ですか|ますか|でしょうか|주세요|십시오|해줘|알려줘|니까|까요|[吗呢])[。．.！!]?\s*$",
    re.I,
)


def _exchanges(rec: Conversation) -> list[tuple[str, str]]:
    """(prompt, answer) of every user turn answered by the assistant turn right after it."""
    msgs = rec.messages
    return [
        (m.content, msgs[i + 1].content)
        for i, m in enumerate(msgs[:-1])
        if m.role == "user" and msgs[i + 1].role == "assistant" and not msgs[i + 1].tool_calls
    ]


def _swapped(pairs: list[tuple[int, tuple[str, str]]], which: str) -> dict[str, Any] | None:
    """Answers shorter than their prompts that read like requests where the prompts do not: the columns are
    exchanged. Answers only shorter than their prompts are a warning (summaries and labels are short)."""
    if len(pairs) < MIN_ROWS_FOR_PATTERNS:
        return None
    shorter = [i for i, (p, a) in pairs if len(a.strip()) < len(p.strip())]
    asks_a = sum(bool(_QUESTION.search(a)) for _, (p, a) in pairs) / len(pairs)
    asks_p = sum(bool(_QUESTION.search(p)) for _, (p, a) in pairs) / len(pairs)
    mostly_shorter = len(shorter) >= 0.7 * len(pairs)
    swapped = mostly_shorter and asks_a >= 0.3 and asks_a > asks_p
    if which == "first":  # whatever the lengths: nearly every opening answer a request, no prompt one. Not on
        # the last exchange, where agents end on a question ("Anything else I can help with?") to a "thanks"
        swapped = swapped or (asks_a >= 0.7 and asks_p <= 0.1)
    if not (mostly_shorter or swapped):
        return None
    return {
        "name": "answer_shorter",
        "level": "error" if swapped else "warning",
        "detail": f"the {which} answer is shorter than its prompt in {len(shorter)}/{len(pairs)} rows"
        + (
            f"; {asks_a:.0%} of answers read as requests ({asks_p:.0%} of prompts): prompt and answer look swapped"
            if swapped
            else " (fine for summaries or labels; wrong if the columns are swapped)"
        ),
        "rows": (shorter or [i for i, _ in pairs])[:5],
    }


def _repeated_answer(pairs: list[tuple[int, tuple[str, str]]]) -> dict[str, Any] | None:
    """One long answer on most rows: a constant column (a task definition, a template) mapped as the answer.
    Short repeated answers are labels ("positive") and are fine."""
    if len(pairs) < MIN_ROWS_FOR_PATTERNS:
        return None
    top, n = Counter(a.strip() for _, (_, a) in pairs).most_common(1)[0]
    if len(top) < ANSWER_REPEAT_CHARS or n < 0.5 * len(pairs):
        return None
    return {
        "name": "answer_repeated",
        "level": "error",
        "detail": f"{n}/{len(pairs)} rows give the same answer ({top[:50]!r}): a constant field mapped as the answer",
        "rows": [i for i, (_, a) in pairs if a.strip() == top][:5],
    }


def dataset_problems(records: list[Conversation]) -> list[dict[str, Any]]:
    """Sample-wide problems: [{name, level, detail, rows}] (rows: example row indices)."""
    found: list[dict[str, Any]] = []
    prompts: list[tuple[int, str]] = []
    for r in records:
        first = next((m.content.strip() for m in r.messages if m.role == "user"), "")
        if first:
            prompts.append((r.source.row_index, first))
    if len(prompts) >= MIN_ROWS_FOR_PATTERNS:
        values = Counter(p for _, p in prompts)
        top, n_top = values.most_common(1)[0]
        short = median(len(p) for _, p in prompts) <= LABEL_MAX_CHARS
        # a label: short values from a tiny vocabulary that do not read as requests ("coding", "math");
        # short requests repeated in a demo file ("你是谁？", "hi") are not
        asks = sum(bool(_QUESTION.search(p)) for _, p in prompts) / len(prompts)
        label = short and len(values) <= max(5, 0.1 * len(prompts)) and asks < 0.5
        if label or n_top >= 0.5 * len(prompts):  # one prompt on most rows, whatever its length: not requests
            found.append(
                {
                    "name": "prompt_label_like",
                    "level": "error",
                    "detail": f"the prompt is a {'short ' if short else ''}repeated value: {len(values)} distinct in "
                    f"{len(prompts)} rows, {top[:40]!r} in {n_top}; the request is in another field",
                    "rows": [i for i, p in prompts if p == top][:5],
                }
            )
    exchanges = [(r.source.row_index, x) for r in records if (x := _exchanges(r))]
    views = [
        v
        for v in (
            _swapped([(i, x[0]) for i, x in exchanges], "first"),
            _swapped([(i, x[-1]) for i, x in exchanges], "last"),
        )
        if v is not None
    ]
    if views:  # the swapped view wins over a mere warning
        found.append(max(views, key=lambda v: v["level"] == "error"))
    repeated = _repeated_answer([(i, x[0]) for i, x in exchanges])
    if repeated:
        found.append(repeated)
    return found


_FIELD_LABEL = re.compile(r"^([A-Z][A-Za-z]{1,15}(?: [A-Za-z]{1,15})?):\s")  # `Input:`, `Review text:`


def unstated_task(spec: Any, records: list[Conversation]) -> list[dict[str, Any]]:
    """Column layouts whose prompts state no task: almost none reads as a request, and either every prompt opens
    on one field label (`Input:`, `Review:`: the input slot of a template whose instruction is elsewhere) or the
    answers are a few labels no prompt names (a classification set without the question). The task statement
    was left out (an instruction or definition column not mapped), so the target would not know what it is
    asked. Turn lists are not judged: their first user turn is a message someone sent."""
    if spec.layout != "columns":
        return []
    pairs = [x[0] for r in records if (x := _exchanges(r))]
    if len(pairs) < MIN_ROWS_FOR_PATTERNS:
        return []
    prompts = [p.strip() for p, _ in pairs]
    # a request behind a field label ("Problem: Compute ...", "Question: Name ...") still asks
    asks = sum(bool(_QUESTION.search(_FIELD_LABEL.sub("", p, count=1))) for p in prompts) / len(prompts)
    if asks >= UNASKED_SHARE:
        return []
    slot, n_slot = Counter(m.group(1) if (m := _FIELD_LABEL.match(p)) else "" for p in prompts).most_common(1)[0]
    labels = Counter(a.strip() for _, a in pairs)
    few = len(labels) <= max(5, 0.1 * len(pairs)) and median(len(a) for a in labels.elements()) <= LABEL_MAX_CHARS
    if slot and n_slot >= 0.8 * len(prompts):
        tell = f"{n_slot}/{len(prompts)} prompts open on the field label {slot + ':'!r}"
    elif few and sum(_names_labels(p, [lab for lab in labels if lab]) for p in prompts) < 0.5 * len(prompts):
        tell = f"the answers are {len(labels)} label(s) ({', '.join(repr(v) for v, _ in labels.most_common(3))}) no prompt names"
    else:
        return []
    return [
        {
            "name": "prompt_unasked",
            "level": "error",
            "detail": f"{asks:.0%} of prompts read as a request and {tell}: the task statement is in no prompt; add the "
            "column that states it (an instruction or definition) to columns.prompt",
            "rows": [],
        }
    ]


def _names_labels(prompt: str, labels: list[str]) -> bool:
    """A prompt states its label set when it names two of the labels (one where there is one) as whole words:
    a task lists its options ("good or bad"), while a review to label may say "good" once on its own."""
    low = prompt.lower()
    found = sum(bool(re.search(rf"(?<!\w){re.escape(lab.lower())}(?!\w)", low)) for lab in labels)
    return found >= min(2, len(labels))


_LABEL_TOKEN = re.compile(r"^[\w\-]{1,24}$")  # one word in any script, no punctuation ("coding", "写作")


def prompt_column_labels(spec: Any, raw: list[Any]) -> list[dict[str, Any]]:
    """Column layouts joining several prompt columns: one whose values are single words from a handful of
    values (a category, a label) is metadata joined into the request, not part of it."""
    cols = spec.columns.prompt if spec.layout == "columns" and spec.columns else []
    if len(cols) < 2:
        return []
    rows = [r.row for r in raw if r.error is None and isinstance(r.row, dict)]
    for col in cols:
        values = [v.strip() for r in rows if isinstance(v := r.get(col), str) and v.strip()]
        if len(values) < MIN_ROWS_FOR_PATTERNS:
            continue
        distinct = Counter(values)
        single = all(_LABEL_TOKEN.match(v) for v in distinct)
        if single and len(distinct) <= max(4, 0.3 * len(values)):
            return [
                {
                    "name": "prompt_column_label",
                    "level": "error",
                    "detail": f"prompt column {col!r} holds {len(distinct)} one-word value(s) over {len(values)} rows "
                    f"({', '.join(repr(v) for v, _ in distinct.most_common(3))}): a label, not part of the request; "
                    "drop it from columns.prompt (and name it under `drop:`)",
                    "rows": [],
                }
            ]
    return []
