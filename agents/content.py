"""What a dataset's sampled rows contain, as a small set of named content signals find's relevance reads.

Cards and names say what a dataset is *about*; rows say what it *is*. A card can use the domain's words
in another sense ("insurance agents", "genetic coding sequences", "medical coding", a film's secret agent),
and a relevant dataset can have a one-line or non-English card. So relevance also counts, over a few
sampled rows, the kinds of content a category's data must contain (each brief's `evidence`, agents/categories/briefs/):

  code        programming code: a fenced block, or two or more lines shaped like code in any common language
  shell       shell command lines ("$ " prompts, a command word with flags, paths or pipes) or a shell code block
  tool_calls  tool use: tool-call keys, tool/function roles, {name, arguments} objects, function schemas, typed
              tool blocks, tool-call tags, Python-style calls, ReAct action/observation lines, or tool turns in
              the adapter's mapping of the row
  exchange    a conversation: labelled turns with an answering (assistant-mapped) turn, prompt and answer
              columns, or a row the adapter maps to a record with a prompt
  dialogue    a multi-turn exchange: at least two answering turns in one row
  math        formulas: LaTeX, or several arithmetic expressions
  stepwise    written-out reasoning: thought tags or step markers
  long_prose  a long text in prose (600+ characters, 90+ words, not code)
  varied      set-level: the sampled prompts do not all open the same way (a mix, not one templated task)

Each signal is a fixed pattern over the row's own text and structure (no names of datasets, nothing fitted
to a fixture), so the evidence a verdict cites can be checked by reading the rows. Hand-written regexes,
because no library classifies "is there code in this string" cheaply and explainably.
Rows are untrusted: JSON strings are decoded with json.loads only, nothing is evaluated. Work is bounded:
at most MAX_ROWS rows, MAX_LEAF_CHARS per string and MAX_ROW_CHARS per row are read, and line-shaped patterns
see only lines up to MAX_LINE_CHARS, so a hostile row cannot make the regexes work quadratically on a long line.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from adapters.detected import Detected
from adapters.records import Conversation
from agents import topics
from agents.categories.kinds import KIND_NAMES

MAX_ROWS = 8
MAX_LEAF_CHARS = 6000
MAX_ROW_CHARS = 24000
MAX_LINE_CHARS = 400  # line-shaped patterns (code, shell, ReAct) read only lines this short: bounded regex work
MAX_DEPTH = 8
KINDS = tuple(KIND_NAMES)  # the one list of kinds: agents/categories/kinds.py

_CODE_LINE = re.compile(
    r"""^\s*(?:
        (?:async\s+)?def\s+\w+\s*\(.*\)\s*(?:->.*)?:\s*$        # python def
      | class\s+\w+(?:\(.*\))?\s*[:{]\s*$                    # python / java / c++ class
      | (?:from\s+[\w.]+\s+)?import\s+[\w.*{},\s]+;?\s*$       # python / js / java imports
      | \#include\s*[<"]                                       # c / c++
      | (?:public|private|protected|static)\s+[\w<>\[\],\s]+\(.*\)\s*\{?\s*$
      | (?:function\s+\w+|fn\s+\w+|func\s+\w+)\s*\(.*\)\s*.*\{?\s*$
      | (?:const|let|var)\s+\w+\s*=.+;?\s*$
      | (?:if|for|while|switch)\s*\(.*\)\s*\{\s*$
      | return\b.*;?\s*$
      | (?:SELECT|INSERT\s+INTO|UPDATE|CREATE\s+TABLE|DELETE\s+FROM)\b.+
      | (?:@@\s+-\d+|\+\+\+\s+[ab]/|---\s+[ab]/)              # unified diff
      | [\w.\[\]]+\s*(?:=|\+=|-=)\s*[\w.\[\]"'(]+.*\)\s*;?\s*$   # assignment from a call
      | \w[\w.]*\(.*\)\s*;\s*$                                 # a call statement ending in ;
      | [}\]]\s*;?\s*$                                         # a closing brace line
    )""",
    re.VERBOSE | re.MULTILINE,
)
_FENCE = re.compile(r"```")
_SHELL_FENCE = re.compile(r"```(?:bash|sh|shell|console|zsh|terminal)[ \t]*\n\s*\S")  # a command in a shell block
# A prompt line ("$ du -sh /var"), or a common command word of a POSIX shell session with an argument shaped
# like a flag, a path, a pipe or a redirection, so English prose ("find the answer") does not count.
_SHELL_LINE = re.compile(
    r"""^\s*\$\s+[a-z][\w.-]*(?:\s+\S+)+\s*$
    |^\s*(?:>\s+)?(?:sudo\s+)?
    (?:ls|cd|git|grep|rg|python3?|pip3?|cat|sed|awk|find|make|pytest|npm|npx|yarn|docker|curl|wget|echo|mkdir|
       rm|cp|mv|chmod|chown|bash|sh|apt|apt-get|head|tail|tar|ssh|export|cargo|go|node|kubectl|touch|diff|wc|
       du|ps|kill|which|conda|uv|jq|ruff|mypy|systemctl|journalctl)
    (?:\s+\S+)*?\s+(?:-{1,2}[\w-]+|\S*/\S*|\S+\.\w{1,5}|\||&&|>{1,2}|2>&1)(?:\s+\S+)*\s*$""",
    re.VERBOSE | re.MULTILINE,
)
# A developer tool's own subcommand ("git status", "pytest tests/", "cargo build"): these words are not English,
# so no argument shape is needed. Commands an agent writes inside tags (`<bash>git diff</bash>`, `<execute>`)
# are read as lines once the tags are taken off (_TAG).
_DEV_COMMAND = re.compile(
    r"^\s*(?:\$\s+)?(?:sudo\s+)?(?:git|pytest|pip3?|npm|npx|yarn|pnpm|docker|cargo|kubectl|conda|mvn|gradle|cmake"
    r"|ruff|mypy|rustc|gcc|g\+\+|javac|tox|poetry)\s+[a-z][\w.-]*(?:\s+\S+)*\s*$",
    re.MULTILINE,
)
_TAG = re.compile(r"</?[A-Za-z_][\w-]{0,30}(?:[=\s][^<>\n]{0,80})?>")  # <bash>, <cmd id="1">, <parameter=command>
_CALL_KEYS = {"arguments", "parameters", "args", "input_schema"}
_CALL_TYPES = {"tool_use", "tool_result", "tool_call", "function_call", "function_call_output"}  # content blocks
CALL_SHAPE = "{name, arguments}"  # marker in a row's key set: some object had a name and arguments/parameters
_TOOL_KEYS = {
    CALL_SHAPE,
    "tool_calls",
    "tool_call",
    "function_call",
    "function_calls",
    "tools",
    "functions",
    "tool_uses",
}
_TOOL_ROLES = {"tool", "function", "ipython", "observation", "tool_response", "tool_result"}
_TOOL_TEXT = re.compile(
    r"<tool_call>|<function_?calls?>|<function=[\w.-]+>|<\|tool_call|\[TOOL_CALLS\]|<tool_use>|<invoke name="
    r"|<\|python_tag\|>"
    r"|\"name\"\s*:\s*\"[\w.-]+\"\s*,\s*\"(?:arguments|parameters|args)\"\s*:"
    r"|\[\s*[a-zA-Z_]\w*\((?:\s*\w+\s*=[^()]*)?\)\s*(?:,\s*[a-zA-Z_]\w*\([^()]*\)\s*)*\]",
)
# ReAct-style tool use: an action line and an observation line in one row.
_REACT_ACTION = re.compile(r"^\s*Action(?:\s+Input)?\s*:\s*\S", re.MULTILINE)
_REACT_OBSERVATION = re.compile(r"^\s*Observation\s*:", re.MULTILINE)
# A whole string that is one keyword-argument call, `get_weather(city="Oslo", days=3)` (a calls column).
_CALL_LEAF = re.compile(r"\s*[a-zA-Z_][\w.]*\(\s*\w+\s*=\s*[^()]*\)\s*")
_MATH = re.compile(r"\\(?:frac|sqrt|boxed|sum|int|cdot|times)\b|\$[^$\n]{1,80}\$|\b\d+(?:\.\d+)?\s*[-+*/×÷^=]\s*\d+")
_STEP = re.compile(
    r"<think>|<thought>|<reasoning>|<\|begin_of_thought\|>|\bstep\s*\d+\b|step[- ]by[- ]step|let'?s think"
    r"|\btherefore\b|\bhence\b|\bthus\b|the answer is|^####\s",
    re.IGNORECASE | re.MULTILINE,
)
_SYMBOL = re.compile(r"[^\w\s]")  # neither a letter, a digit nor space: prose has few
_LABEL_KEYS = ("role", "from", "speaker", "author", "sender", "type")


def _leaves(value: Any, depth: int = 0) -> tuple[list[str], set[str], list[list[dict[str, Any]]]]:
    """Strings, dict keys and lists of dicts (turn lists) under a value; JSON text is decoded once."""
    strings: list[str] = []
    keys: set[str] = set()
    lists: list[list[dict[str, Any]]] = []
    stack = [(value, depth)]
    while stack:
        item, d = stack.pop()
        if d > MAX_DEPTH:
            continue
        if isinstance(item, str):
            text = item[:MAX_LEAF_CHARS]
            if text[:1] in "[{" and len(item) <= MAX_LEAF_CHARS:
                try:
                    stack.append((json.loads(item), d + 1))
                    continue
                except (ValueError, RecursionError):  # not JSON, or nested past the decoder's limit
                    pass
            strings.append(text)
        elif isinstance(item, dict):
            keys.update(str(k) for k in item)
            if ("name" in item and _CALL_KEYS & item.keys()) or item.get("type") in _CALL_TYPES:
                keys.add(CALL_SHAPE)  # a {name, arguments} call, a function schema, or a typed tool block
            stack.extend((v, d + 1) for v in reversed(list(item.values())))  # read in row order
        elif isinstance(item, list):
            if len(item) >= 2 and all(isinstance(x, dict) for x in item):
                lists.append(item)
            stack.extend((v, d + 1) for v in reversed(item))
    return strings, keys, lists


def _labels(turns: list[dict[str, Any]]) -> list[str]:
    for key in _LABEL_KEYS:
        values = [t.get(key) for t in turns]
        if all(isinstance(v, str) and 0 < len(v) <= 40 for v in values):
            return [str(v).lower() for v in values]
    return []


def row_signals(row: dict[str, Any], answer_labels: set[str], answered: bool = False) -> set[str]:
    """The content kinds one row shows. answer_labels: role labels the detector maps to `assistant`;
    answered: the detector reads this row as a prompt with its answer (columns, rendered transcripts)."""
    strings, keys, lists = _leaves(row)
    kept = _bounded(strings)
    text = "\n".join(kept)
    lines = _short_lines(_TAG.sub("\n", text))
    found: set[str] = set()
    if _FENCE.search(text) or len(set(m.group(0).strip() for m in _CODE_LINE.finditer(lines))) >= 2:
        found.add("code")
    if _SHELL_LINE.search(lines) or _DEV_COMMAND.search(lines) or _SHELL_FENCE.search(text):
        found.add("shell")
    roles = [label for turns in lists for label in _labels(turns)]
    if (
        keys & _TOOL_KEYS
        or set(roles) & _TOOL_ROLES
        or _TOOL_TEXT.search(text)
        or (_REACT_ACTION.search(lines) and _REACT_OBSERVATION.search(lines))
        or any(_CALL_LEAF.fullmatch(s) for s in kept if len(s) < 2000)
    ):
        found.add("tool_calls")
    answering = [sum(label in answer_labels for label in _labels(turns)) for turns in lists]
    if any(answering) or answered:
        found.add("exchange")
    if any(n >= 2 for n in answering):
        found.add("dialogue")
    if len(_MATH.findall(text)) >= 2:
        found.add("math")
    if _STEP.search(text):
        found.add("stepwise")
    if any(_is_prose(s) for s in kept):
        found.add("long_prose")
    return found


def _bounded(strings: list[str]) -> list[str]:
    """The row's strings up to MAX_ROW_CHARS in all."""
    budget, kept = MAX_ROW_CHARS, []
    for s in strings:
        if budget <= 0:
            break
        kept.append(s[:budget])
        budget -= len(s)
    return kept


def row_text(row: dict[str, Any]) -> str:
    """The row's own text (JSON strings decoded), bounded as the signals read it: what agents/topics.py reads."""
    return "\n".join(_bounded(_leaves(row)[0]))


def _short_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if len(line) <= MAX_LINE_CHARS)


def _is_prose(text: str) -> bool:
    """A long text in prose: 600+ characters and 90+ words, mostly letters and digits, few code-shaped lines."""
    if len(text) < 600:
        return False
    if len(text.split()) < 90 or len(_SYMBOL.findall(text)) > 0.2 * len(text):
        return False
    return len(_CODE_LINE.findall(_short_lines(text))) <= 2


def _is_exchange(rec: Conversation | None) -> bool:
    return rec is not None and bool(rec.context_text().strip())


def _record_kinds(rec: Conversation | None) -> set[str]:
    """Tool use the adapter found in a mapped record: declared tools, calls, or tool turns."""
    if rec is None:
        return set()
    if rec.tools or any(m.tool_calls or m.role == "tool" for m in rec.messages):
        return {"tool_calls"}
    return set()


def _answered(row: dict[str, Any], detected: Detected | None) -> bool:
    """The detector reads this row as a prompt and its answer without a list of labelled turns: prompt and
    response columns both filled, or a transcript rendered into one text column."""
    if detected is None:
        return False
    fields = detected.fields
    if fields.get("layout") == "columns":
        cols = fields["columns"]
        response = cols.get("response")
        return any(_filled(row.get(c)) for c in cols.get("prompt") or []) and (
            isinstance(response, str) and _filled(row.get(response))
        )
    transcript = fields.get("transcript")
    field = transcript.get("field") if isinstance(transcript, dict) else None
    return fields.get("layout") == "transcript" and isinstance(field, str) and _filled(row.get(field))


def _filled(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) or isinstance(value, (list, dict)) and bool(value)


def _opening(row: dict[str, Any], detected: Detected | None) -> str | None:
    """The first words of a row's prompt (columns: the prompt column; turns: the first user turn)."""
    if detected is None:
        return None
    fields = detected.fields
    text: Any = None
    if fields.get("layout") == "columns":
        text = row.get(fields["columns"]["prompt"][0])
    elif fields.get("messages_path"):
        _, _, lists = _leaves(row.get(fields["messages_path"]))
        users = {k for k, v in (fields.get("role_map") or {}).items() if v == "user"}
        content = fields.get("content_key") or "content"
        for turns in lists:
            labels = _labels(turns)
            text = next((t.get(content) for t, lab in zip(turns, labels, strict=False) if lab in users), None)
            if text:
                break
    if not isinstance(text, str) or not text.strip():
        return None
    return " ".join(re.findall(r"\w+", text.lower())[:40])


def signals(
    rows: list[dict[str, Any]], detected: Detected | None, records: list[Conversation | None] | None = None
) -> dict[str, Any]:
    """Per kind, how many of the sampled rows show it; `rows`: how many were read; `opening`: the most
    common prompt opening and its count (set-level evidence for `varied`). records: the rows as the adapter
    maps them (adapters.infer.trial.trial_records), when the caller has them: a mapped record is a conversation
    whatever the raw layout (numbered columns, utterance lists, rendered transcripts), and its canonical
    tool turns are tool use."""
    indexed = [(i, r) for i, r in enumerate(rows[:MAX_ROWS]) if isinstance(r, dict)]
    sample = [r for _, r in indexed]
    role_map = (detected.fields.get("role_map") if detected is not None else None) or {}
    answers = {str(k).lower() for k, v in role_map.items() if v == "assistant"}
    mapped = [records[i] if records is not None and i < len(records) else None for i, _ in indexed]
    counts = Counter(
        kind
        for row, rec in zip(sample, mapped, strict=True)
        for kind in row_signals(row, answers, _answered(row, detected) or _is_exchange(rec)) | _record_kinds(rec)
    )
    prompts = [o.split() for o in (_opening(r, detected) for r in sample) if o]
    # A preamble every prompt shares ("Below is an instruction that describes a task ...") is a template's
    # wrapper, not the task: the opening is read after it.
    shared = 0
    while len(prompts) >= 3 and all(len(p) > shared + 1 for p in prompts) and len({p[shared] for p in prompts}) == 1:
        shared += 1
    openings = Counter(" ".join(p[shared : shared + 3]) for p in prompts)
    opening, repeats = openings.most_common(1)[0] if openings else ("", 0)
    n_prompts = sum(openings.values())
    # A mix: at least three prompts read and no one opening on more than half of them.
    if n_prompts >= 3 and repeats <= n_prompts / 2:
        counts["varied"] = len(sample)
    return {
        "rows": len(sample),
        "counts": {k: counts.get(k, 0) for k in KINDS},
        "topics": topics.topics([row_text(r) for r in sample]),
        "opening": {
            "words": opening,
            "rows": repeats,
            "of": n_prompts,
            "shared": " ".join(prompts[0][:shared]) if prompts else "",
        },
    }
