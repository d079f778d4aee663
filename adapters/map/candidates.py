"""Several candidate answers to one prompt: ranked completions (UltraFeedback `completions[].overall_score`,
Nectar `answers[].rank`) and pairwise battles (Chatbot Arena `conversation_a`/`conversation_b` with `winner`).

A named policy decides what is trained (`CandidatesSpec.policy`):
- `regenerate` (the default): only the prompt is kept and the target answers it; no candidate is trained.
- `best`: the best-ranked or winning answer is the answer; the worst-ranked or losing one is recorded as the
  rejected side of a preference pair, never trained. A row with no single best answer (a tie, no scores) is
  rejected by name, never resolved by picking one.
Detection finds the candidates by their values (a list of objects holding text and a numeric score, or two turn
lists suffixed `_a`/`_b` with a winner column naming a side); names are priors.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from adapters.map import structure as st
from adapters.row_fields import RowError
from adapters.spec import CandidatesSpec

if TYPE_CHECKING:
    from adapters.detected import Detected
    from adapters.map.turns import TurnReader

CANDIDATE_LISTS = ("completions", "answers", "responses", "candidates", "outputs", "generations", "samples")
SCORE_KEYS = ("overall_score", "score", "rating", "reward", "fine-grained_score", "rank", "ranking")
LOWER_IS_BETTER = ("rank", "ranking")
TEXT_KEYS = ("response", "answer", "text", "completion", "output", "content")
WINNER_FIELDS = ("winner", "preference", "preferred", "label", "choice")
REGENERATED = "candidate answers: policy regenerate, the target answers the prompt (none is trained)"
SIDE = re.compile(r"^(?P<stem>.+?)[_\-](?P<side>a|b|1|2|A|B)$")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def choose_answer(
    c: CandidatesSpec, row: dict[str, Any], messages: list[dict[str, Any]], reader: TurnReader
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """(turns with the chosen answer, rejected turns or None) under the spec's policy."""
    if c.sides:
        return _battle(c, row, messages, reader)
    if c.policy == "regenerate":
        return messages, None
    items = st.get(row, c.field or "")
    if not isinstance(items, list) or not items:
        raise RowError(c.field or "<candidates>", "no candidate answers")
    scored = []
    for i, item in enumerate(items):
        text = st.get(item, c.text_key) if c.text_key and isinstance(item, dict) else item
        score = _number(st.get(item, c.score_key)) if c.score_key and isinstance(item, dict) else None
        if isinstance(text, str) and text.strip() and score is not None:
            scored.append((score if c.higher_is_better else -score, i, text))
    if not scored:
        raise RowError(c.field or "<candidates>", "no scored candidate answer: no best answer to train")
    scored.sort(key=lambda s: -s[0])
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        raise RowError(f"{c.field}[{scored[0][1]}]", "candidates tie for the best score: no single best answer")
    best, worst = scored[0], scored[-1]
    where = f"{c.field}[{best[1]}]"
    chosen = [*messages, reader.assistant(reader.text(best[2], where), where)]
    if worst[0] == best[0]:
        return chosen, None
    loser = reader.assistant(reader.text(worst[2], f"{c.field}[{worst[1]}]"), f"{c.field}[{worst[1]}]")
    return chosen, [{**loser, "train": False}]


def _battle(
    c: CandidatesSpec, row: dict[str, Any], messages: list[dict[str, Any]], reader: TurnReader
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    label = st.get(row, c.winner_field or "")
    side = c.winners.get(str(label)) if label is not None else None
    sides = [reader.read_list(st.get(row, path), path) for path in c.sides]
    asked = [[m["content"].strip() for m in turns if m["role"] == "user"] for turns in sides]
    if asked[0] != asked[1]:  # a battle is two answers to one prompt; different user turns: misaligned sides
        raise RowError(c.sides[1], "the two sides of the battle answer different user turns (misaligned sides)")
    if c.policy == "regenerate":  # the prompt only; the winner's side (else the first) gives earlier context
        return [*_head(messages, sides[side or 0]), *sides[side or 0]], None
    if side is None:
        raise RowError(c.winner_field or "<winner>", f"battle without a winner ({label!r}): no answer to train")
    won, lost = sides[side], sides[1 - side]
    head = _head(messages, won)
    shared = 0
    while shared < min(len(won), len(lost)) and won[shared]["role"] == lost[shared]["role"] == "user":
        shared += 1
    rejected = [{**m, "train": False} for m in lost[shared:]]
    return [*head, *won], (rejected or None)


def _head(messages: list[dict[str, Any]], side: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A system prompt given beside the sides (a column), kept in front of a side that has none of its own."""
    if side and side[0]["role"] == "system":
        return []
    return [m for m in messages[:1] if m["role"] == "system"]


# -- detection -------------------------------------------------------------------------------------


def detect_ranked(d: Detected, rows: list[dict[str, Any]], skip: set[str]) -> str | None:
    """A column of candidate answers (objects with text and a numeric score, or strings) → its name, decided."""
    for name in dict.fromkeys(k for r in rows for k in r):
        if name in skip:
            continue
        lists = [st.decoded(r.get(name))[0] for r in rows if r.get(name) not in (None, [])]
        if len(lists) < 0.8 * len(rows) or not all(isinstance(v, list) and v for v in lists):
            continue
        items = [i for lst in lists for i in lst]
        if sum(len(lst) for lst in lists) < 1.5 * len(lists):
            continue  # one answer per row is not a choice between candidates
        text_key = score_key = None
        if all(isinstance(i, dict) for i in items):
            keys = dict.fromkeys(k for i in items for k in i)
            text_key = max(
                (k for k in keys if st.text_stats([i.get(k) for i in items]).texty >= 0.15),
                key=lambda k: (k in TEXT_KEYS, st.text_stats([i.get(k) for i in items]).mean_chars),
                default=None,
            )
            numeric = [k for k in keys if sum(_number(i.get(k)) is not None for i in items) >= 0.8 * len(items)]
            score_key = next((k for k in SCORE_KEYS if k in numeric), numeric[0] if numeric else None)
        elif all(isinstance(i, str) for i in items) and name.lower() in CANDIDATE_LISTS:
            text_key = None
        else:
            continue
        if text_key is None and not all(isinstance(i, str) for i in items):
            continue
        if name.lower() not in CANDIDATE_LISTS and score_key is None:
            continue
        lower = bool(score_key and score_key.lower() in LOWER_IS_BETTER)
        _decide_regenerate(
            d,
            {"field": name, "text_key": text_key, "score_key": score_key, "higher_is_better": not lower},
            f"{name!r} holds {sum(map(len, lists)) / len(lists):.1f} candidate answers per prompt"
            + (
                f", ranked by {score_key!r} ({'lower' if lower else 'higher'} is better)" if score_key else ", unranked"
            ),
            best="the best-ranked answer and record the worst",
            dropped=name,
        )
        return name
    return None


def detect_battle(d: Detected, rows: list[dict[str, Any]], cands: list[dict[str, Any]]) -> bool:
    """Two turn lists of one prompt (`conversation_a`/`conversation_b`) and a column naming the winner."""
    by_stem: dict[str, dict[int, str]] = {}
    for c in cands:
        m = SIDE.match(c["path"])
        if m and c.get("kind") == "dicts":
            by_stem.setdefault(m.group("stem"), {})[0 if m.group("side") in "a1A" else 1] = c["path"]
    pair = next((sides for sides in by_stem.values() if set(sides) == {0, 1}), None)
    if pair is None:
        return False
    a, b = pair[0], pair[1]
    keys = list(dict.fromkeys(k for r in rows for k in r))
    for name in keys:
        if name.lower() not in WINNER_FIELDS:
            continue
        labels = {str(r.get(name)) for r in rows if r.get(name) is not None}
        winners = {lab: _side_of(lab, a, b, keys) for lab in labels}
        winners = {lab: s for lab, s in winners.items() if s is not None}
        if not winners or len(labels) > 8:
            continue
        ties = sorted(labels - set(winners))
        _decide_regenerate(
            d,
            {"sides": [a, b], "winner_field": name, "winners": winners},
            f"pairwise battles: {a!r} vs {b!r}, {name!r} names the winner "
            + ", ".join(f"{k}→side {v}" for k, v in sorted(winners.items()))
            + (f" ({ties} name no winner)" if ties else ""),
            best="the winner and record the loser",
            dropped=b,
            dropped_note=", the other side,",
        )
        return True
    return False


def _decide_regenerate(
    d: Detected, spec: dict[str, Any], found: str, *, best: str, dropped: str, dropped_note: str = ""
) -> None:
    """The one decision for candidates of either kind: policy regenerate, marked for review because `best`
    (train the best-ranked or winning answer, record the other as rejected) is the other choice; the column
    regenerate does not carry is dropped by name."""
    d.decide(
        "candidates",
        {**spec, "policy": "regenerate"},
        f"{found}: policy regenerate (the target answers the prompt); `best` would train {best} as rejected, "
        "never trained",
        review=True,
    )
    d.decide("drop", {dropped: REGENERATED}, f"{dropped!r}{dropped_note} is not carried under policy regenerate")


def _side_of(label: str, a: str, b: str, keys: list[str]) -> int | None:
    low = label.strip().lower()
    for side, path in ((0, a), (1, b)):
        suffix = path.rsplit("_", 1)[-1].lower()
        if low in (suffix, f"model_{suffix}", f"response_{suffix}", f"conversation_{suffix}", path.lower()):
            return side
    return None


def prompt_only(d: Detected, rows: list[dict[str, Any]], skip: set[str]) -> None:
    """The prompt column of ranked candidates: the one text column left once the candidates are set aside."""
    texts = [
        k
        for k in dict.fromkeys(k for r in rows for k in r)
        if k not in skip and st.text_stats([r.get(k) for r in rows]).texty >= 0.15
    ]
    if len(texts) != 1:
        return
    d.refusal = None
    d.decide("layout", "columns", f"the prompt is {texts[0]!r}; its answers are the candidates")
    d.decide("columns", {"prompt": texts, "response": None}, f"prompt from {texts[0]!r}, answers from the candidates")
