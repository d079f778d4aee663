"""Other readings of a detection, tried when its first reading rejects nearly every sampled row.

A check that rejects almost every row says more about the reading than about the rows: a dataset whose every
row is broken in the same way is rarer than a reading that does not fit it. So before proposing, detection
applies its reading to its own sample (adapters/infer/trial.py's throw-away spec); when at least NEARLY_ALL of the
rows are rejected, each alternative that the rejection reason points to is tried, and the one that maps the
most rows is kept, if it maps a clear majority. The choice is recorded in `reasons["reading"]` (visible in
`draftset adapters show`) with the evidence, and marked for review; a reading the data contradicts is never
tried (below).

Alternatives, by the reason that rejected the rows:
- "tool result with no earlier tool call": an agent that writes its command in its own text (in a fence or a
  tag, SWE-agent style) is answered by the environment as its own speaker. With no tool call anywhere in the
  sample, nothing is there for a tool result to answer: the environment's output is the observation the agent
  reads next, a user turn, as the agent's harness sent it. The evidence is in the rows: the assistant turn
  before (nearly) every such turn writes a command out in a fence or a tag. Not taken when any sampled row
  carries a call, or when the turns before the results write no command (a call deleted from a tool-calling
  set: its results answer nothing, and the rows stay rejected by name).
- "native record has no trainable assistant turn": the per-turn flag was read as "true = trained", and it is
  false on the answers of nearly every row. A dataset that trains no answer anywhere is not a training set, so
  the reading is suspect, but only a flag whose name does not say its polarity may be read the other way: a
  `mask` is a loss mask (true = counted) in some exports and an ignore mask (true = left out) in others, while
  `train`, `trainable`, `loss` and `weight` say what they mean and their rows stay rejected by name. Taken when
  the inverted flag trains an answer on a clear majority of the rows. (The mirror image with the prompts
  flagged is read inverted at detection already: adapters/infer/roles.py.)
Where a reason's alternative does not apply to the shape at all (no turn list, no flag), nothing is recorded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from adapters.detected import Detected
from adapters.infer.roles import commands_before
from adapters.infer.trial import PLACEHOLDER_SOURCE, spec_data
from adapters.map.apply import RowError, RowMapper
from adapters.map.structure import decoded, get
from adapters.spec import AdapterSpec
from catalog.errors import DraftsetError

NEARLY_ALL = 0.5  # share of sampled rows rejected by one reason that makes detection try other readings
CLEAR_MAJORITY = 0.8  # share of rows another reading must map to be taken
SAMPLE = 300


def _trial(fields: dict[str, Any], rows: list[dict[str, Any]]) -> tuple[int, Counter[str], bool] | None:
    """(rows mapped, rejection reasons, any record carries a tool call) of a reading, in native mode."""
    d = Detected(fields=dict(fields))
    try:
        mapper = RowMapper(AdapterSpec.from_data(spec_data(d, PLACEHOLDER_SOURCE, "native", "trial"), where="trial"))
    except DraftsetError:
        return None
    mapped, reasons, calls = 0, Counter[str](), False
    for i, row in enumerate(rows):
        try:
            recs = mapper.apply(i, row)
        except (RowError, ValueError) as exc:
            reasons[getattr(exc, "reason", str(exc))] += 1
            continue
        mapped += 1
        calls = calls or any(m.tool_calls for r in recs for m in r.messages)
    return mapped, reasons, calls


def _observations_as_user(d: Detected, rows: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str]:
    labels = {label for label, role in d.fields.get("role_map", {}).items() if role == "tool"}
    path, role_key, content_key = (d.fields.get(k) for k in ("messages_path", "role_key", "content_key"))
    if not (labels and path and role_key and content_key):
        return None, "no turn list with labels read as tool results"
    lists = [v for v in (decoded(get(row, path))[0] for row in rows) if isinstance(v, list)]
    assistants = {label for label, role in d.fields.get("role_map", {}).items() if role == "assistant"}
    seen, written = commands_before(lists, labels, role_key, content_key, assistants)
    if not seen or written < CLEAR_MAJORITY * seen:  # the evidence is the agent's own text, before each result
        return None, (
            f"only {written}/{seen} of the {', '.join(repr(x) for x in sorted(labels))} turns follow a command "
            "written in a fence or a tag, so they are not the environment answering it"
        )
    role_map = {**d.fields["role_map"], **dict.fromkeys(sorted(labels), "user")}
    why = (
        f"{', '.join(repr(x) for x in sorted(labels))} read as the user's turn: no sampled turn carries a tool call "
        f"and {written}/{seen} of these turns follow an assistant turn that writes its command in a fence or a tag, "
        "so the environment's output is the observation the agent reads next"
    )
    return {**d.fields, "role_map": role_map}, why


CALLS_CONTRADICT = {"tool result with no earlier tool call"}  # reasons whose other reading a tool call refutes
AMBIGUOUS_FLAGS = ("mask", "masked", "mask_flag")  # names that do not say which way they point


def _mask_inverted(d: Detected, rows: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str]:
    key = d.fields.get("train_flag_key")
    if not key:
        return None, ""  # no flag read: nothing of this reading to turn round
    if d.fields.get("train_flag_inverted") or key.lower() not in AMBIGUOUS_FLAGS:
        return None, f"the flag {key!r} says what it means, so answers it marks false are not trained"
    why = (
        f"the flag {key!r} read as `true = trained` trains no answer on nearly every row; a mask can as well mark "
        "the turns left out of the loss, so it is read inverted"
    )
    return {**d.fields, "train_flag_inverted": True}, why


# reason → (fields of the other reading, or None with why it does not fit ('' when it does not apply at all))
ALTERNATIVES: dict[str, Callable[[Detected, list[dict[str, Any]]], tuple[dict[str, Any] | None, str]]] = {
    "tool result with no earlier tool call": _observations_as_user,
    "native record has no trainable assistant turn": _mask_inverted,
}


def reread(d: Detected, sample: list[dict[str, Any]]) -> None:
    """Try the other readings when the first rejects nearly every row; keep the best, with its reason, in `d`."""
    rows = [r for r in sample[:SAMPLE] if isinstance(r, dict)]
    if d.layout is None or not rows:
        return
    first = _trial(d.fields, rows)
    if first is None:
        return
    mapped, reasons, _ = first
    if not reasons:
        return
    reason, rejected = reasons.most_common(1)[0]
    if rejected < NEARLY_ALL * len(rows) or reason not in ALTERNATIVES:
        return
    fields, why = ALTERNATIVES[reason](d, rows)
    if fields is None and not why:
        return
    first_words = f"the first reading rejects {rejected}/{len(rows)} sampled rows ({reason})"
    tried = _trial(fields, rows) if fields is not None else None
    # observations read as user turns are the reading only while nothing in the rows is a structured call
    vetoed = bool(tried and tried[2]) and reason in CALLS_CONTRADICT
    if fields is None or tried is None or vetoed or tried[0] < CLEAR_MAJORITY * len(rows) or tried[0] <= mapped:
        if fields is not None:
            why = (
                "the other reading is no better: "
                + (f"it maps {tried[0]}/{len(rows)}" if tried else "it is not a valid spec")
                + (" and its rows carry tool calls" if vetoed else "")
            )
        d.reasons["reading"] = f"{first_words}; kept, rejected by name: {why}"  # the evidence, for the review
        return
    n = tried[0]
    changed = [k for k in fields if fields[k] != d.fields.get(k)]
    relabelled = {k: v for k, v in fields.get("role_map", {}).items() if d.fields.get("role_map", {}).get(k) != v}
    d.fields.update(fields)
    d.reasons["reading"] = f"{first_words}; {why}: this reading maps {n}/{len(rows)}"
    for label, role in relabelled.items():
        d.reasons[f"role_map.{label}"] = f"{label!r} → {role}: reread (see `reading`)"
    for key in ["reading", *changed]:
        if key not in d.needs_review:
            d.needs_review.append(key)
