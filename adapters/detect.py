"""Schema detection over sampled rows: layout, paths, role vocabulary, keys, markers, mode.

Pure functions over a few hundred rows (never one). Every decided field gets a reason; anything
guessed is listed for review. Role labels are mapped only through the alias table; unknown labels
stay out of the role map so the contract fails naming them.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from adapters.aliases import (
    ANSWER_WRAPPERS,
    COLUMN_PAIRS,
    CONTENT_KEYS,
    REASONING_DELIMITERS,
    REASONING_KEYS,
    ROLE_KEYS,
    SYSTEM_COLUMNS,
    TRAIN_FLAG_KEYS,
    TURN_LIST_COLUMNS,
    canonical_role,
)
from catalog import limits

DEFAULT_TARGET_PATTERNS = (r"\bkimi\b", r"kimi-k2", r"moonshot")
TEXT_TOOL_MARKERS = ("<tool_call>", "<function=", "<functioncall>")
MODEL_COLUMNS = ("model", "model_name", "generator", "source_model", "teacher")


@dataclass
class Detected:
    fields: dict[str, Any] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    needs_review: list[str] = field(default_factory=list)
    role_counts: dict[str, int] = field(default_factory=dict)
    json_strings: list[str] = field(default_factory=list)  # every JSON-text column / per-turn path seen

    def decide(self, name: str, value: Any, reason: str, review: bool = False) -> None:
        self.fields[name] = value
        self.reasons[name] = reason
        if review:
            self.needs_review.append(name)


def _decoded(value: Any) -> tuple[Any, bool]:
    """(value, was_json_string): strings holding a JSON array/object are decoded for inspection."""
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            return limits.loads_limited(value), True
        except limits.LimitExceeded:  # bad, too deep or huge: inspected as the plain string it is
            pass
    return value, False


def _turn_lists(rows: list[dict[str, Any]]) -> dict[str, tuple[list[list[dict]], int]]:
    """Column → (turn lists seen, how many were JSON strings), for columns holding lists of objects."""
    found: dict[str, tuple[list[list[dict]], int]] = {}
    columns = dict.fromkeys(k for r in rows for k in r)
    for col in columns:
        lists, encoded = [], 0
        for r in rows:
            value, was_json = _decoded(r.get(col))
            if isinstance(value, list) and value and all(isinstance(t, dict) for t in value):
                lists.append(value)
                encoded += was_json
        if lists and len(lists) >= 0.5 * sum(r.get(col) is not None for r in rows):
            found[col] = (lists, encoded)
    return found


def _role_key(turns: list[dict]) -> tuple[str | None, float]:
    """The key whose string values the alias table maps best (ties: the usual key names first)."""
    best, best_score = None, 0.0
    keys = dict.fromkeys(k for t in turns for k in t)
    for key in keys:
        values = [t.get(key) for t in turns if isinstance(t.get(key), str)]
        distinct = set(values)
        if not values or len(distinct) > 20:
            continue
        mapped = sum(1 for v in values if canonical_role(v)) / len(values)
        score = mapped + (0.01 * (len(ROLE_KEYS) - ROLE_KEYS.index(key)) if key in ROLE_KEYS else 0.0)
        if mapped > 0 and score > best_score:
            best, best_score = key, score
    if best is None:  # no label is known: take the key by its name, so the contract names the labels
        best = next((k for k in ROLE_KEYS if k in keys and any(isinstance(t.get(k), str) for t in turns)), None)
        best_score = 0.001 if best else 0.0
    return best, best_score


def _content_key(turns: list[dict], role_key: str) -> str | None:
    lengths: dict[str, list[int]] = defaultdict(list)
    for t in turns:
        for k, v in t.items():
            if k != role_key and isinstance(v, str):
                lengths[k].append(len(v))
    for name in CONTENT_KEYS:
        if name in lengths:
            return name
    return max(lengths, key=lambda k: sum(lengths[k]) / len(lengths[k]), default=None)


def _detect_turn_fields(d: Detected, turns: list[dict], role_key: str, content_key: str) -> None:
    labels = Counter(t[role_key] for t in turns if isinstance(t.get(role_key), str))
    d.role_counts = dict(labels.most_common())
    role_map = {}
    for label in labels:
        role = canonical_role(label)
        if role is None:
            d.reasons[f"role_map.{label}"] = (f"{label!r} ({labels[label]} turns) is not in the alias table: left "
                                              "unmapped, the contract fails until a person maps it")
            d.needs_review.append(f"role_map.{label}")
        else:
            role_map[label] = role
    d.decide("role_map", role_map, "labels mapped through the alias table: "
             + ", ".join(f"{k}→{v}" for k, v in role_map.items()))
    by_role: dict[str, list[dict]] = defaultdict(list)
    for t in turns:
        role = canonical_role(t.get(role_key, "")) if isinstance(t.get(role_key), str) else None
        if role:
            by_role[role].append(t)
    null_policy = {}
    for role, role_turns in by_role.items():
        nulls = [t for t in role_turns if t.get(content_key) is None]
        if not nulls:
            continue
        others = [k for k in nulls[0] if k not in (role_key, content_key)
                  and all(isinstance(t.get(k), str) and t[k].strip() for t in nulls)]
        # Prefer a key named after the role (system_prompt for system), then the longest text.
        others.sort(key=lambda k: (role not in k.lower(), -sum(len(t[k]) for t in nulls)))
        if others:
            null_policy[role] = others[0]
            d.reasons[f"null_policy.{role}"] = (f"{len(nulls)} {role} turns have {content_key}=null; their text "
                                                f"is in {others[0]!r}")
    if null_policy:
        d.fields["null_policy"] = null_policy
    keys = dict.fromkeys(k for t in turns for k in t)
    for key in TRAIN_FLAG_KEYS:
        values = [t[key] for t in turns if t.get(key) is not None]
        if key in keys and values and all(isinstance(v, bool) for v in values):
            d.decide("train_flag_key", key, f"per-turn boolean {key!r} read as the training flag", review=True)
            break
    if "tool_calls" in keys:
        d.decide("tool_calls_key", "tool_calls", "turns carry structured tool_calls; kept on the messages")
    for key in REASONING_KEYS:
        if any(isinstance(t.get(key), str) and t[key].strip() for t in turns):
            d.decide("reasoning.key", key, f"turns carry separated reasoning in {key!r}")
            break
    assistant_texts = [t.get(content_key) for t in by_role.get("assistant", []) if isinstance(t.get(content_key), str)]
    _detect_markers(d, assistant_texts)


def _detect_markers(d: Detected, texts: Iterable[str]) -> None:
    texts = list(texts)
    delims = [pair for pair in REASONING_DELIMITERS if any(t.lstrip().startswith(pair[0]) for t in texts)]
    if delims:
        d.decide("reasoning.delimiters", delims, "assistant text starts with " + ", ".join(p[0] for p in delims))
    embedded = [m for m in TEXT_TOOL_MARKERS if any(m in t for t in texts)]
    if embedded:
        d.reasons["tool_calls_in_text"] = (f"tool calls are embedded in assistant text ({', '.join(embedded)}): "
                                           "kept as text, not parsed into tool_calls")
    wraps = [pair for pair in ANSWER_WRAPPERS if any(pair[0] in t for t in texts)]
    if wraps:
        d.decide("reasoning.unwrap", wraps, "answers wrapped in " + ", ".join(p[0] for p in wraps))


def _detect_columns(d: Detected, rows: list[dict[str, Any]]) -> bool:
    present = {k for r in rows for k, v in r.items() if v is not None}
    for prompt_cols, response in COLUMN_PAIRS:
        if prompt_cols[0] in present and response in present:
            prompt = [c for c in prompt_cols if c in present]
            decoded = [_decoded(r.get(response)) for r in rows]
            calls = all(isinstance(v, list) and all(isinstance(c, dict) for c in v) for v, _ in decoded)
            d.decide("layout", "columns", f"no turn-list column; single-turn columns {prompt} → {response!r}")
            d.decide("columns", {"prompt": prompt, "response": response, "response_is_tool_calls": calls},
                     f"prompt from {prompt}, answer from {response!r}" + (" (a list of tool calls)" if calls else ""))
            for col in [*prompt, response]:
                if any(was_json for _, was_json in (_decoded(r.get(col)) for r in rows)):
                    d.fields.setdefault("json_fields", []).append(col)
            _detect_markers(d, [v for v, _ in decoded if isinstance(v, str)])
            return True
    return False


def detect(rows: list[dict[str, Any]]) -> Detected:
    """Detect the layout and every field of a spec from sampled rows (no source, mode or category)."""
    d = Detected()
    candidates = {}
    for col, (lists, encoded) in _turn_lists(rows).items():
        turns = [t for lst in lists for t in lst]
        role_key, score = _role_key(turns)
        if role_key:
            candidates[col] = (turns, role_key, score, encoded)
    if candidates:
        order = {c: i for i, c in enumerate(TURN_LIST_COLUMNS)}
        col = min(candidates, key=lambda c: (-candidates[c][2], order.get(c, len(order)), c))
        turns, role_key, _, encoded = candidates[col]
        why = f"column {col!r} holds lists of turns keyed by {role_key!r}"
        if "chosen" in candidates and "rejected" in candidates:
            col, turns, role_key = "chosen", candidates["chosen"][0], candidates["chosen"][1]
            encoded = candidates["chosen"][3]
            why = "preference data (chosen + rejected): the chosen side only"
        content_key = _content_key(turns, role_key)
        d.decide("messages_path", col, why)
        d.decide("role_key", role_key, f"the turn key whose values are role labels ({role_key!r})")
        d.decide("content_key", content_key, f"the turn key holding the text ({content_key!r})",
                 review=content_key not in CONTENT_KEYS)
        if encoded:
            d.decide("json_fields", [col], f"{encoded} sampled rows store {col!r} as a JSON string: decoded")
        _detect_turn_fields(d, turns, role_key, content_key)
        agentish = "train_flag_key" in d.fields or "null_policy" in d.fields
        d.decide("layout", "trajectory" if agentish else "messages",
                 "agent steps with per-step flags or split content keys" if agentish else "a chat turn list")
    elif not _detect_columns(d, rows):
        columns = sorted({k for r in rows for k in r})
        d.decide("layout", None, f"no turn list and no known column pair among {columns}", review=True)
    d.json_strings = json_string_fields(rows, d.fields.get("messages_path"))
    if d.json_strings:
        d.reasons["json_strings"] = ("JSON text found in " + ", ".join(d.json_strings) + "; only the fields the "
                                     "spec reads are decoded, tool-call arguments stay strings (OpenAI format)")
    if any("tools" in r for r in rows):
        d.reasons["tools"] = ("the `tools` column (tool schemas) is not carried into records: the canonical "
                              "record has no tools field; check regeneration does not need it")
        d.needs_review.append("tools")
    for col in SYSTEM_COLUMNS:
        if any(isinstance(r.get(col), str) and r[col].strip() for r in rows):
            d.decide("system_field", col, f"column {col!r} holds a system prompt, prepended as a system turn")
            break
    return d


def json_string_fields(rows: list[dict[str, Any]], messages_path: str | None) -> list[str]:
    """Columns whose string values are JSON arrays/objects, plus JSON-string tool-call arguments in turns."""
    found = []
    for col in dict.fromkeys(k for r in rows for k in r):
        strings = [r[col] for r in rows if isinstance(r.get(col), str)]
        if strings and sum(_decoded(v)[1] for v in strings) >= 0.5 * len(strings):
            found.append(col)
    turns = [t for r in rows for t in (_decoded(r.get(messages_path))[0] if messages_path else None) or []
             if isinstance(t, dict)]
    args = [c.get("function", {}).get("arguments") for t in turns if isinstance(t.get("tool_calls"), list)
            for c in t["tool_calls"] if isinstance(c, dict) and isinstance(c.get("function"), dict)]
    if any(isinstance(a, str) for a in args):
        found.append("tool_calls[].function.arguments")
    return found


def guess_category(d: Detected, mode: str) -> str:
    """A first guess, always marked for review (the find ranking's category wins when there is one)."""
    roles = set(d.fields.get("role_map", {}).values())
    if mode == "native":
        return "native"
    if d.fields.get("layout") == "trajectory" or "tool" in roles or "tool_calls_key" in d.fields:
        return "agentic"
    if "reasoning.delimiters" in d.fields or "reasoning.key" in d.fields:
        return "reasoning"
    return "coding" if d.fields.get("layout") == "columns" else "chat"


def names_target(card_text: str, rows: list[dict[str, Any]], patterns: Iterable[str]) -> str | None:
    """Why the data came from the target model family (card text or a model column), or None."""
    regexes = [re.compile(p, re.IGNORECASE) for p in patterns]
    for col in MODEL_COLUMNS:
        values = Counter(str(r[col]) for r in rows if r.get(col) is not None)
        hits = [v for v in values if any(rx.search(v) for rx in regexes)]
        if hits and sum(values[v] for v in hits) >= 0.5 * sum(values.values()):
            return f"column {col!r} names the target family ({hits[0]!r})"
    for rx in regexes:
        m = rx.search(card_text or "")
        if m:
            start = max(0, m.start() - 40)
            return f"the dataset card names the target family: …{card_text[start:m.end() + 40].strip()}…"
    return None
