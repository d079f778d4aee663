"""Role maps and per-turn fields of a detected turn list.

Known labels map through the alias table. Unknown labels are inferred only from structure, never
guessed freely: when the turns alternate between two speakers and one side is known (or neither is),
the unknown side takes the role its position and text say (who speaks first, who writes longer
answers), with the evidence in the reason and the field marked for review. An unknown label whose turns follow
an assistant turn that writes a command out in its text (a fence, a tag) is the environment answering it: the
observation the agent reads next, a user turn. Anything else stays unmapped so the contract fails naming it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from adapters.map.aliases import ANSWER_WRAPPERS, REASONING_DELIMITERS, REASONING_KEYS, TRAIN_FLAG_KEYS, canonical_role
from adapters.map.structure import get, text_stats
from adapters.map.toolcalls import COMMAND_IN_TEXT, detect_text_format, result_tag

if TYPE_CHECKING:
    from adapters.detected import Detected

OBSERVES = 0.8  # share of a label's turns right after a command written in text that make it the environment


def _label(t: dict[str, Any], key: str) -> Any:
    return get(t, key)


def infer_role_map(d: Detected, turns: list[dict], lists: list[list[dict]], role_key: str, content_key: str) -> None:
    labels = Counter(_label(t, role_key) for t in turns if isinstance(_label(t, role_key), str))
    d.role_counts = dict(labels.most_common())
    role_map: dict[str, str] = {}
    unknown = []
    for label in labels:
        role = canonical_role(label)
        if role is None:
            unknown.append(label)
        else:
            role_map[label] = role
    texts: dict[str, list[Any]] = defaultdict(list)
    first: Counter[str] = Counter()
    for lst in lists:
        speakers = [_label(t, role_key) for t in lst if isinstance(t, dict)]
        speakers = [s for s in speakers if role_map.get(s) != "system"]
        if speakers:
            first[speakers[0]] += 1
        for t in lst:
            if isinstance(t, dict):
                texts[_label(t, role_key)].append(get(t, content_key))
    conversational = [lab for lab in unknown if labels[lab] >= 0.1 * len(turns)]
    known_roles = {r for r in role_map.values() if r in ("user", "assistant")}
    if conversational and len(conversational) + len(known_roles) == 2 and len(conversational) <= 2:
        missing = [r for r in ("user", "assistant") if r not in known_roles]
        if len(conversational) == 1:
            label = conversational[0]
            other = next(lab for lab in labels if role_map.get(lab) in known_roles)
            user_side, answer_side = (label, other) if missing[0] == "user" else (other, label)
            if _prompt_like(texts[user_side], texts[answer_side]):
                role_map[label] = missing[0]
                d.reasons[f"role_map.{label}"] = (
                    f"{label!r} is not a known label; it alternates with the {role_map[other]} side and the "
                    f"{user_side!r} side reads like prompts, so it is the {missing[0]}"
                )
                d.needs_review.append(f"role_map.{label}")
        else:
            a, b = conversational
            opener = max((a, b), key=lambda lab: first[lab])
            longer = max((a, b), key=lambda lab: text_stats(texts[lab]).mean_chars)
            other = b if opener == a else a
            if (opener != longer or first[opener] > first[other]) and _prompt_like(texts[opener], texts[other]):
                role_map[opener], role_map[other] = "user", "assistant"
                for lab in (a, b):
                    d.reasons[f"role_map.{lab}"] = (
                        f"unknown labels {a!r}/{b!r} alternate; {opener!r} opens {first[opener]} of {len(lists)} "
                        f"dialogues and {longer!r} writes longer turns: {opener!r}→user, {other!r}→assistant"
                    )
                    d.needs_review.append(f"role_map.{lab}")
    assistants = {lab for lab, r in role_map.items() if r == "assistant"}
    for label in unknown:
        seen, written = commands_before(lists, {label}, role_key, content_key, assistants)
        if label not in role_map and seen >= 3 and written >= OBSERVES * seen:
            role_map[label] = "user"
            d.reasons[f"role_map.{label}"] = (
                f"{label!r} is not a known label; {written}/{seen} of its turns follow an assistant turn that writes "
                "a command in a fence or a tag: the environment's output the agent reads next, a user turn"
            )
            d.needs_review.append(f"role_map.{label}")
    for label in unknown:
        if label not in role_map:
            d.reasons[f"role_map.{label}"] = (
                f"{label!r} ({labels[label]} turns) is not a known role label and its "
                "place in the dialogue does not decide it: left unmapped, the "
                "contract fails until a person maps it"
            )
            d.needs_review.append(f"role_map.{label}")
    d.decide("role_map", role_map, "labels mapped: " + ", ".join(f"{k}→{v}" for k, v in role_map.items()))


def commands_before(
    lists: list[list[Any]], labels: set[str], role_key: str, content_key: str, assistants: set[str]
) -> tuple[int, int]:
    """(turns of `labels`, those right after an assistant turn that writes a command in a fence or a tag)."""
    seen = written = 0
    for turns in lists:
        for before, turn in zip(turns, turns[1:]):
            if not (isinstance(turn, dict) and _label(turn, role_key) in labels):
                continue
            seen += 1
            text = get(before, content_key) if isinstance(before, dict) else None
            written += (
                isinstance(before, dict)
                and _label(before, role_key) in assistants
                and isinstance(text, str)
                and COMMAND_IN_TEXT.search(text) is not None
            )
    return seen, written


def _prompt_like(asks: list[Any], answers: list[Any]) -> bool:
    """Does one side read like prompts next to the other (more questions, or clearly shorter)? Two sides that
    read alike (two models' answers, two annotators) are not a dialogue: no role is inferred from them."""
    a, b = text_stats(asks), text_stats(answers)
    if not a.strings or not b.strings:
        return False
    more_questions = a.questions / a.strings >= b.questions / b.strings + 0.2
    return more_questions or a.mean_chars <= 0.7 * b.mean_chars


def _flag_polarity(d: Detected, turns: list[dict], key: str, role_key: str) -> None:
    """A flag named like a training flag can mark the turns left *out* of the loss (a `mask` over the prompt):
    then it is true on the user and system turns, which are never trained, and false on (nearly) only the
    answers. The mirror of a training flag is read inverted, with the counts as its evidence."""
    role_map = d.fields.get("role_map", {})
    answer = [role_map.get(_label(t, role_key)) == "assistant" for t in turns]
    set_on = [a for t, a in zip(turns, answer) if bool(t[key])]
    clear_on = [a for t, a in zip(turns, answer) if not bool(t[key])]
    if not set_on or not clear_on or sum(set_on) >= 0.5 * len(set_on) or sum(clear_on) < 0.9 * len(clear_on):
        return
    d.decide(
        "train_flag_inverted",
        True,
        f"{key!r} is true on {len(set_on) - sum(set_on)}/{len(set_on)} non-assistant turns (never trained) and false "
        f"on {sum(clear_on)}/{len(clear_on)} assistant turns: it marks the turns left out of the loss, read inverted",
        review=True,
    )


def detect_turn_fields(d: Detected, turns: list[dict], role_key: str, content_key: str) -> None:
    role_map = d.fields.get("role_map", {})
    by_role: dict[str, list[dict]] = defaultdict(list)
    for t in turns:
        role = role_map.get(_label(t, role_key)) if isinstance(_label(t, role_key), str) else None
        if role:
            by_role[role].append(t)
    null_policy = {}
    for role, role_turns in by_role.items():
        nulls = [t for t in role_turns if get(t, content_key) is None]
        if not nulls or role in ("assistant", "tool_call"):
            continue
        others = [
            k
            for k in nulls[0]
            if k not in (role_key, content_key) and all(isinstance(t.get(k), str) and t[k].strip() for t in nulls)
        ]
        # Prefer a key named after the role (system_prompt for system), then the longest text.
        others.sort(key=lambda k: (role not in k.lower(), -sum(len(t[k]) for t in nulls)))
        if others:
            null_policy[role] = others[0]
            d.reasons[f"null_policy.{role}"] = (
                f"{len(nulls)} {role} turns have {content_key}=null; their text is in {others[0]!r}"
            )
    if null_policy:
        d.fields["null_policy"] = null_policy
    keys = dict.fromkeys(k for t in turns for k in t)
    for key in keys:
        values = [t[key] for t in turns if t.get(key) is not None]
        ints = key in TRAIN_FLAG_KEYS and all(type(v) is int and v in (0, 1) for v in values)
        if key in (role_key, content_key) or not values or not (ints or all(isinstance(v, bool) for v in values)):
            continue
        flagged = [t for t in turns if t.get(key) is True]
        on_assistant = sum(role_map.get(_label(t, role_key)) == "assistant" for t in flagged)
        if key in TRAIN_FLAG_KEYS or (flagged and on_assistant >= 0.9 * len(flagged)):
            d.decide(
                "train_flag_key",
                key,
                f"per-turn boolean {key!r} is true on {on_assistant}/{len(flagged)} "
                "assistant turns: read as the training flag",
                review=True,
            )
            _flag_polarity(d, [t for t in turns if t.get(key) is not None], key, role_key)
            break
    for key in keys:
        values = [t.get(key) for t in turns if t.get(key) not in (None, [], "")]
        calls = [v if isinstance(v, list) else [v] for v in values]  # legacy OpenAI `function_call`: one dict
        if (
            values
            and all(isinstance(v, (list, dict)) for v in values)
            and all(
                c
                and all(
                    isinstance(x, dict)
                    and ("function" in x or ("name" in x and "arguments" in x) or "name" in x and isinstance(v, list))
                    for x in c
                )
                for v, c in zip(values, calls)
            )
        ):
            d.decide("tool_calls_key", key, f"turns carry structured tool calls in {key!r} ({len(values)} turns)")
            break
    tool_turns = by_role.get("tool", [])
    for wanted, names in (
        ("tool_call_id_key", ("tool_call_id", "call_id", "tool_use_id")),
        ("tool_name_key", ("name", "tool_name", "function_name")),
    ):
        key = next((k for k in names if any(isinstance(t.get(k), str) and t[k] for t in tool_turns)), None)
        if key:
            d.decide(
                wanted, key, f"tool turns name the {'call they answer' if 'id' in wanted else 'function'} in {key!r}"
            )
    for key in REASONING_KEYS:
        if key != content_key and any(isinstance(t.get(key), str) and t[key].strip() for t in turns):
            d.decide("reasoning.key", key, f"turns carry separated reasoning in {key!r}")
            break
    assistant_texts = [get(t, content_key) for t in by_role.get("assistant", [])]
    detect_markers(d, [t for t in assistant_texts if isinstance(t, str)], structured="tool_calls_key" in d.fields)
    if "text_tool_calls" in d.fields:
        user_texts = [t for t in (get(x, content_key) for x in by_role.get("user", [])) if isinstance(t, str)]
        tags = sorted({tag for t in user_texts if (tag := result_tag(t))})
        if tags:
            n = sum(result_tag(t) is not None for t in user_texts)
            d.decide(
                "text_tool_results",
                tags,
                f"{n} user turn(s) are wholly a {', '.join(f'<{t}>' for t in tags)} element: after a call, "
                "they are its tool result, not the user speaking",
                review=True,
            )


def detect_markers(d: Detected, texts: list[str], structured: bool = False) -> None:
    """Reasoning delimiters, answer wrappers and tool calls written in assistant text."""
    delims = [pair for pair in REASONING_DELIMITERS if any(t.lstrip().startswith(pair[0]) for t in texts)]
    if delims:
        d.decide("reasoning.delimiters", delims, "assistant text starts with " + ", ".join(p[0] for p in delims))
    wraps = [pair for pair in ANSWER_WRAPPERS if any(pair[0] in t for t in texts)]
    if wraps:
        d.decide("reasoning.unwrap", wraps, "answers wrapped in " + ", ".join(p[0] for p in wraps))
    if not structured and texts:
        fmt, why = detect_text_format(texts)
        if fmt:
            d.decide("text_tool_calls", fmt, f"{why}: parsed into structured tool_calls")
