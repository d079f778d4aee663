"""The one schema detector: sampled rows → every field of an adapter spec, each with its reason.

Used by find (scoring, stored in the catalog's `schemas` table) and by adapter proposal (which starts
from what find stored). Decisions come from the structure of the values (adapters/map/structure.py); name
tables are priors. Things a text-only pipeline cannot take are refused by name (`refusal`): plain text
without turns, no text at all, an unsupported file type. Media rows are detected and handed to the
contract, which refuses them by name for a text-only target.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from adapters.detected import REFUSALS, Detected
from adapters.infer.answers import detect_answer_columns, detect_label
from adapters.infer.column_names import CHOSEN, REJECTED
from adapters.infer.columns import detect_columns, detect_transcript
from adapters.infer.numbered import detect_turn_columns
from adapters.infer.rereading import reread
from adapters.infer.roles import detect_turn_fields, infer_role_map
from adapters.map import structure as st
from adapters.map.aliases import CONTENT_KEYS, ROLE_KEYS, canonical_role
from adapters.map.candidates import detect_battle, detect_ranked, prompt_only
from adapters.map.declarations import detect_system_tools
from adapters.map.toolcalls import normalize_tools
from adapters.read import media as media_mod
from adapters.read.encoded import empty as holds_nothing

# The one list of target-model families (native detection) for find and proposal alike.
TARGET_FAMILIES = ("kimi", "moonshot")
MODEL_COLUMNS = ("model", "model_name", "generator", "source_model", "teacher")
PLAIN_TEXT_FILES = (".md",)  # plain text beside `datasets`' own `text` builder (.txt in any compression)
MEDIA_MODULES = ("imagefolder", "audiofolder", "videofolder")


def _file_refusal(d: Detected, file_names: Iterable[str]) -> bool:
    """Refusals the file names alone decide, by what `datasets` would read them as (adapters/read/files.py)."""
    from adapters.read.files import datasets_module, file_format

    names = [n for n in file_names if not n.lower().endswith(("readme.md", ".gitattributes"))]
    if not names:
        return False
    scripts = [n for n in names if n.lower().endswith(".py")]
    if scripts:
        d.refuse(
            "loading_script", f"{', '.join(scripts[:3])}: code that builds the rows; never run (no trust_remote_code)"
        )
        return True
    modules = {n: datasets_module(n) for n in names}
    if all(m == "text" or n.lower().endswith(PLAIN_TEXT_FILES) for n, m in modules.items()):
        d.refuse("plain_text", f"data files are plain text: {', '.join(names[:3])}")
        return True
    if all(m in MEDIA_MODULES for m in modules.values()):
        kinds = sorted({str(m) for m in modules.values()})
        d.refuse("media", f"data files are media ({', '.join(kinds)}): {', '.join(names[:3])}")
        return True
    unknown = [n for n in names if file_format(n) is None]
    if len(unknown) == len(names):
        exts = sorted({"." + n.rsplit(".", 1)[-1] if "." in n else n for n in unknown})
        read_as = sorted({m for n in unknown if (m := modules[n])})
        d.refuse(
            "unsupported_file",
            f"{', '.join(exts)} ({len(unknown)} file(s)"
            + (f"; `datasets` reads them as {', '.join(read_as)}" if read_as else "")
            + "); readable: parquet, arrow, json/jsonl, csv/tsv, in any compression fsspec reads",
        )
        return True
    return False


def _media(d: Detected, rows: list[dict[str, Any]], features: dict[str, Any]) -> set[str]:
    fields = []
    for name, ftype in (features or {}).items():
        if isinstance(ftype, dict) and ftype.get("_type") in ("Image", "Audio", "Video"):
            fields.append(name)
        elif (
            isinstance(ftype, list)
            and ftype
            and isinstance(ftype[0], dict)
            and ftype[0].get("_type") in ("Image", "Audio", "Video")
        ):
            fields.append(name)
    columns = dict.fromkeys(k for r in rows for k in r)
    for name in columns:
        if name not in fields and media_mod.is_media_field([r.get(name) for r in rows], name):
            fields.append(name)
    for name in columns:  # a mime-type column (`image/png`) beside an opaque url: an attachment, not metadata
        if name not in fields and media_mod.mime_column([r.get(name) for r in rows]):
            fields += [k for k in media_mod.attachment_columns(rows, name) if k not in fields]
    texts = [v for r in rows for _, v in st.walk(r) if isinstance(v, str)]
    texts += [
        t[k]
        for r in rows
        for v in r.values()
        if isinstance(v, list)
        for t in v
        if isinstance(t, dict)
        for k in t
        if isinstance(t.get(k), str)
    ]
    marks = media_mod.placeholders_in([t for t in texts if isinstance(t, str)])
    if fields or marks:
        d.decide(
            "media",
            {"fields": fields, "placeholders": marks, "policy": "refuse"},
            f"rows carry media ({', '.join(fields) or 'placeholders ' + ', '.join(marks)}): refused for a "
            "text-only target; set media.policy: keep for a multimodal one",
            review=True,
        )
    return set(fields)


def _tools_column(d: Detected, rows: list[dict[str, Any]], skip: set[str]) -> str | None:
    for name in dict.fromkeys(k for r in rows for k in r):
        if name in skip:
            continue
        # a row that declares nothing (`"[]"`, as chats that call no tool often do) is not evidence either way
        values = [v for v in (st.decoded(r.get(name))[0] for r in rows) if not holds_nothing(v)]
        if not values:
            continue
        ok = 0
        for v in values:
            try:
                tools = normalize_tools(v)
            except (ValueError, TypeError):
                continue
            items = v if isinstance(v, list) else [v]
            ok += (
                bool(tools)
                and all(isinstance(i, (dict, str)) for i in items)
                and any(
                    isinstance(i, dict) and ("parameters" in i or "function" in i or "description" in i) for i in items
                )
            )
        if ok >= 0.8 * len(values):
            d.decide(
                "tools_field",
                name,
                f"column {name!r} holds tool declarations ({ok}/{len(values)} rows): carried into records as `tools`",
            )
            return name
    return None


def _turn_candidates(rows: list[dict[str, Any]], skip: set[str]) -> list[dict[str, Any]]:
    found = []
    for path, (lists, encoded, kind) in st.turn_list_paths(rows).items():
        if path.split(".")[0] in skip:
            continue
        if kind == "strings":
            stats = st.text_stats([s for lst in lists for s in lst])
            if stats.texty > 0.2:
                found.append(
                    {
                        "path": path,
                        "kind": kind,
                        "lists": lists,
                        "encoded": encoded,
                        "score": 0.4 * stats.texty + st.name_prior(path),
                        "why": f"{path!r} holds lists of {stats.mean_chars:.0f}-char strings (no speaker labels)",
                    }
                )
            continue
        cand = _dicts_candidate(path, lists, encoded, kind)
        if cand is not None:
            found.append(cand)
    found += _parallel_arrays(rows, skip)
    return sorted(found, key=lambda c: (-c["score"], c["path"]))


def _dicts_candidate(path: str, lists: list[list[Any]], encoded: int, kind: str) -> dict[str, Any] | None:
    """A list of turn objects: its speaker and text keys by their values, or an unlabelled reading."""
    turns = [t for lst in lists for t in lst]
    leaves = st.leaf_paths(turns)
    roles = sorted(((*st.role_key_score(lists, p, v), p) for p, v in leaves.items()), reverse=True)
    contents = sorted(((*st.content_key_score(p, v), p) for p, v in leaves.items()), reverse=True)
    role = next((r for r in roles if r[0] > 0.3), None)
    content = next((c for c in contents if c[0] >= 0.15 and (role is None or c[2] != role[2])), None)
    if content is None:
        return None
    if role is None:
        return _unlabelled(path, lists, encoded, turns, leaves, contents)
    return {
        "path": path,
        "kind": kind,
        "lists": lists,
        "encoded": encoded,
        "turns": turns,
        "role_key": role[2],
        "role_why": role[1],
        "content_key": content[2],
        "content_why": content[1],
        "score": role[0] + 0.5 * min(1.0, content[0]) + st.name_prior(path),
        "why": f"{path!r} holds lists of turn objects",
    }


def _parallel_arrays(rows: list[dict[str, Any]], skip: set[str]) -> list[dict[str, Any]]:
    """Turns stored as parallel list columns (`speaker: [...]`, `text: [...]`, one item per turn): the columns
    whose lists have one length in every row, zipped into turn objects. A speaker column is then a role key
    like any other, never metadata beside a text list read alone (which guesses who speaks first)."""
    values = {k: [st.decoded(r.get(k)) for r in rows] for k in dict.fromkeys(k for r in rows for k in r)}
    names = [k for k, vs in values.items() if k not in skip and all(isinstance(v, list) and v for v, _ in vs)]
    # columns of one length row by row; the largest such group (a `tags` list of another length stays apart)
    by_lengths: dict[tuple[int, ...], list[str]] = {}
    for k in names:
        by_lengths.setdefault(tuple(len(v) for v, _ in values[k]), []).append(k)
    group = max(by_lengths.values(), key=len, default=[])
    if len(group) < 2:
        return []
    lists = [st.zipped({k: values[k][i][0] for k in group}) for i in range(len(rows))]
    if not all(isinstance(lst, list) and all(isinstance(t, dict) for t in lst) for lst in lists):
        return []
    cand = _dicts_candidate(group[0], lists, 0, "dicts")
    if cand is None or cand.get("kind") != "dicts":
        return []
    # only the speaker and text columns are zipped: any other array of that length is judged as its own column
    group = [k for k in group if k in (cand["role_key"], cand["content_key"])]
    cand["path"] = group[0]
    encoded = [k for k in group if any(was_json for _, was_json in values[k])]
    cand.update(
        zip_paths=group,
        zip_encoded=encoded,
        why=f"columns {group} are parallel arrays, one item per turn: zipped into turns",
    )
    return [cand]


def _unlabelled(
    path: str,
    lists: list[list[Any]],
    encoded: int,
    turns: list[dict],
    leaves: dict[str, list[Any]],
    contents: list[tuple[float, str, str]],
) -> dict[str, Any] | None:
    """Turn objects without a speaker key: exchanges (two text keys), text segments, or utterances; None when
    the values do not read as a dialogue (several models' answers to one prompt are not turns)."""
    from adapters.infer.roles import _prompt_like

    base = {"path": path, "lists": lists, "encoded": encoded}
    flags = [
        p
        for p, v in leaves.items()
        if all(isinstance(x, bool) for x in v if x is not None) and any(x is not None for x in v)
    ]
    texts = [c for c in contents if c[0] >= 0.15 and sum(isinstance(x, str) for x in leaves[c[2]]) >= 0.9 * len(turns)]
    if flags:
        return {
            **base,
            "kind": "segments",
            "score": 0.3 + st.name_prior(path),
            "why": f"{path!r} holds text segments with a boolean {flags[0]!r} and no speakers: pre-rendered text",
        }
    if len(texts) >= 2:
        a, b = texts[0][2], texts[1][2]
        first = min((a, b), key=lambda k: (-_prompt_prior(k), st.text_stats(leaves[k]).mean_chars))
        second = b if first == a else a
        if not (_prompt_prior(first) or _prompt_like(leaves[first], leaves[second])):
            return None
        return {
            **base,
            "kind": "exchanges",
            "pair_keys": [first, second],
            "score": 0.5 + st.name_prior(path),
            "why": f"{path!r} holds (user, assistant) exchanges: {first!r} asks, {second!r} answers",
        }
    if not contents:
        return None
    key = contents[0][2]
    even = [st.get(t, key) for lst in lists for t in lst[0::2] if isinstance(t, dict)]
    odd = [st.get(t, key) for lst in lists for t in lst[1::2] if isinstance(t, dict)]
    if not (_prompt_like(even, odd) or _prompt_like(odd, even)):
        return None  # items that read alike (alternatives, not a dialogue): no speakers can be inferred
    return {
        **base,
        "kind": "strings_in_dicts",
        "content_key": contents[0][2] if contents else None,
        "score": 0.3 * (contents[0][0] if contents else 0) + st.name_prior(path),
        "why": f"{path!r} holds turn objects without a speaker key; text in {contents[0][2]!r}",
    }


def _prompt_prior(key: str) -> int:
    from adapters.infer.column_names import PROMPT_NAMES

    return int(key.rsplit(".", 1)[-1].lower() in PROMPT_NAMES)


def _completion(cands: list[dict[str, Any]], chosen: dict[str, Any]) -> dict[str, Any] | None:
    """A second turn list holding only the answers to the chosen one's prompts (TRL prompt/completion)."""
    if chosen.get("kind") != "dicts":
        return None
    roles = lambda c: {canonical_role(st.get(t, c["role_key"]) or "") for t in c["turns"]}  # noqa: E731
    ends = [canonical_role(st.get(lst[-1], chosen["role_key"]) or "") for lst in chosen["lists"] if lst]
    if not ends or any(e != "user" for e in ends):
        return None
    for c in cands:
        if (
            c is not chosen
            and c.get("kind") == "dicts"
            and c.get("role_key") == chosen["role_key"]
            and roles(c) <= {"assistant", "tool", "tool_call"}
        ):
            return c
    return None


def _pick_pair(cands: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    by_name = {c["path"].rsplit(".", 1)[-1].lower(): c for c in cands}
    chosen = next((by_name[n] for n in CHOSEN if n in by_name), None)
    rejected = next((by_name[n] for n in REJECTED if n in by_name), None)
    if chosen and rejected and chosen.get("role_key") == rejected.get("role_key"):
        return chosen, rejected
    return cands[0], None


def _first_role(d: Detected, cand: dict[str, Any], card_text: str) -> str:
    """Who speaks first in unlabelled alternating lists, with the evidence."""
    lists = cand["lists"]
    items = [[t.get(cand["content_key"]) if isinstance(t, dict) else t for t in lst] for lst in lists]
    even = st.text_stats([x for lst in items for x in lst[0::2]])
    odd = st.text_stats([x for lst in items for x in lst[1::2]])
    card = (card_text or "").lower()
    if re.search(
        r"(assistant|bot|agent|model) (speaks|talks|starts|greets) first|starts with the (assistant|bot)", card
    ):
        role, why = "assistant", "the card says the assistant speaks first"
    elif (
        odd.strings
        and even.questions / max(even.strings, 1) + 0.1 < odd.questions / odd.strings
        and even.mean_chars > odd.mean_chars
    ):
        role, why = (
            "assistant",
            (
                f"odd positions ask ({odd.questions}/{odd.strings} end in '?') and even ones are "
                "longer: the assistant speaks first"
            ),
        )
    else:
        role, why = (
            "user",
            (
                f"first utterances read as prompts ({even.questions}/{even.strings} questions, mean "
                f"{even.mean_chars:.0f} chars vs {odd.mean_chars:.0f} for the replies)"
            ),
        )
    d.decide("first_role", role, f"no speaker labels; utterances alternate, {why}", review=True)
    return role


def _turn_layout(d: Detected, cand: dict[str, Any], rejected: dict[str, Any] | None, card_text: str) -> None:
    path = cand["path"]
    if cand["encoded"]:
        d.fields.setdefault("json_fields", []).append(path)
        d.reasons["json_fields"] = f"{cand['encoded']} sampled rows store {path!r} as a JSON string: decoded"
    if cand["kind"] == "segments":
        d.refuse("plain_text", cand["why"])
        return
    if cand["kind"] == "exchanges":
        d.decide("layout", "utterances", cand["why"])
        d.decide("messages_path", path, "the list of exchanges")
        d.decide(
            "pair_keys",
            cand["pair_keys"],
            f"each item holds one exchange: {cand['pair_keys'][0]!r} → user, {cand['pair_keys'][1]!r} → assistant",
            review=True,
        )
        return
    if cand["kind"] != "dicts":
        d.decide("layout", "utterances", cand["why"])
        d.decide("messages_path", path, "the list of utterances")
        if cand["kind"] == "strings_in_dicts":
            d.decide("content_key", cand["content_key"], f"text of each utterance in {cand['content_key']!r}")
        else:
            cand["content_key"] = None
        _first_role(d, cand, card_text)
    else:
        d.decide("messages_path", path, cand["why"] + (" (the chosen side of a preference pair)" if rejected else ""))
        if cand.get("zip_paths"):
            d.decide("zip_paths", cand["zip_paths"], cand["why"], review=True)
            for name in cand["zip_encoded"]:  # an array column stored as a JSON string is decoded like a turn list
                d.fields.setdefault("json_fields", []).append(name)
                d.reasons["json_fields"] = f"array column(s) {cand['zip_encoded']} stored as JSON strings: decoded"
        d.decide(
            "role_key",
            cand["role_key"],
            f"speaker key by its values: {cand['role_why']}",
            review=cand["role_key"].rsplit(".", 1)[-1] not in ROLE_KEYS,
        )
        d.decide(
            "content_key",
            cand["content_key"],
            f"text key by its values: {cand['content_why']}",
            review=cand["content_key"].rsplit(".", 1)[-1] not in CONTENT_KEYS,
        )
        infer_role_map(d, cand["turns"], cand["lists"], cand["role_key"], cand["content_key"])
        detect_turn_fields(d, cand["turns"], cand["role_key"], cand["content_key"])
        agentish = "train_flag_key" in d.fields or "null_policy" in d.fields
        d.decide(
            "layout",
            "trajectory" if agentish else "messages",
            "agent steps with per-step flags or split content keys" if agentish else "a chat turn list",
        )
    if rejected:
        d.decide(
            "preference",
            {"rejected": rejected["path"]},
            f"preference pairs: {path!r} is the chosen side, {rejected['path']!r} the rejected one "
            "(recorded, never trained)",
        )
        if rejected["encoded"]:
            d.fields.setdefault("json_fields", []).append(rejected["path"])


def detect(
    rows: list[dict[str, Any]],
    *,
    features: dict[str, Any] | None = None,
    card_text: str = "",
    file_names: Iterable[str] = (),
) -> Detected:
    """Detect the layout and every field of a spec from sampled rows (no source, mode or category)."""
    d = Detected(n_rows=len(rows))
    if _file_refusal(d, file_names):
        return d
    if not rows:
        d.decide("layout", None, "no rows to inspect", review=True)
        return d
    media_fields = _media(d, rows, features or {})
    tools = _tools_column(d, rows, media_fields)
    skip = media_fields | ({tools} if tools else set())
    ranked = detect_ranked(d, rows, skip)  # candidate answers are not turns: read them before turn lists
    skip |= {ranked} if ranked else set()
    cands = _turn_candidates(rows, skip)
    if cands:
        cand, rejected = _pick_pair(cands)
        completion = None if rejected else _completion(cands, cand)
        if completion is None and cand.get("kind") == "dicts" and _completion(cands, cands[-1]) is cand:
            cand, completion = cands[-1], cand  # the answers list scored first: start from the prompts
        if not (rejected or ranked) and detect_battle(d, rows, cands):
            cand = next(c for c in cands if c["path"] == d.fields["candidates"]["sides"][0])
        _turn_layout(d, cand, rejected, card_text)
        if completion is None and d.layout in ("messages", "trajectory"):
            detect_answer_columns(d, rows, cand)
        if completion is not None:
            d.decide(
                "completion_path",
                completion["path"],
                f"{completion['path']!r} holds the answers to the prompts in {cand['path']!r}: appended after them",
            )
            if completion["encoded"]:
                d.fields.setdefault("json_fields", []).append(completion["path"])
    elif (
        not detect_turn_columns(d, rows, skip)
        and not detect_transcript(d, rows, skip)
        and not detect_columns(d, rows, skip, card_text)
    ):
        lists = sorted(
            p for p, (_, _, kind) in st.turn_list_paths(rows).items() if kind == "dicts" and p.split(".")[0] not in skip
        )
        if media_fields and d.refusal in ("plain_text", "no_text"):  # captions / labels beside images
            d.refuse("media", f"media in {sorted(media_fields)} with {REFUSALS[d.refusal]} beside them")
        elif lists and d.refusal == "no_text":  # unreadable turn lists are not "no text": nobody decided yet
            d.refusal = None
            d.decide(
                "layout",
                None,
                f"lists of objects at {lists}, but no speaker key or text key could be told "
                "from their values: undecided (write the spec, or --policy llm)",
                review=True,
            )
    if ranked and d.refusal == "plain_text":  # the prompt is the one text column; the answers are the candidates
        prompt_only(d, rows, skip)
    if d.layout is not None:
        detect_label(d, rows)
    d.json_strings = json_string_fields(rows, d.fields.get("messages_path"))
    if d.layout and d.layout != "columns":
        _system_column(d, rows, skip)
    elif d.layout == "columns" and "system_field" not in d.fields:
        _system_column(d, rows, skip | set(d.fields["columns"]["prompt"]) | {d.fields["columns"].get("response")})
    detect_system_tools(d, rows)
    reread(
        d, rows
    )  # a reading that rejects nearly every row is checked against the others (adapters/infer/rereading.py)
    return d


def _system_column(d: Detected, rows: list[dict[str, Any]], skip: set[str]) -> None:
    from adapters.map.aliases import SYSTEM_COLUMNS

    for name in dict.fromkeys(k for r in rows for k in r):
        if name in skip or (name.lower() not in SYSTEM_COLUMNS and "system" not in name.lower()):
            continue
        values = [r.get(name) for r in rows]
        if any(isinstance(v, str) and v.strip() for v in values) and all(
            v is None or isinstance(v, str) for v in values
        ):
            d.decide("system_field", name, f"column {name!r} holds a system prompt, prepended as a system turn")
            return


def json_string_fields(rows: list[dict[str, Any]], messages_path: str | None) -> list[str]:
    """Columns whose string values are JSON arrays/objects, plus JSON-string tool-call arguments in turns."""
    found = []
    for col in dict.fromkeys(k for r in rows for k in r):
        strings = [r[col] for r in rows if isinstance(r.get(col), str)]
        if strings and sum(st.decoded(v)[1] for v in strings) >= 0.5 * len(strings):
            found.append(col)
    turns = [
        t
        for r in rows
        for t in (st.decoded(st.get(r, messages_path))[0] if messages_path else None) or []
        if isinstance(t, dict)
    ]
    args = [
        c.get("function", {}).get("arguments")
        for t in turns
        if isinstance(t.get("tool_calls"), list)
        for c in t["tool_calls"]
        if isinstance(c, dict) and isinstance(c.get("function"), dict)
    ]
    if any(isinstance(a, str) for a in args):
        found.append("tool_calls[].function.arguments")
    return found


def guess_category(d: Detected, mode: str) -> str:
    """A first guess, always marked for review (the find ranking's category wins when there is one)."""
    roles = set(d.fields.get("role_map", {}).values())
    if mode == "native":
        return "native"
    if (
        d.layout == "trajectory"
        or roles & {"tool", "tool_call"}
        or "tool_calls_key" in d.fields
        or "tools_field" in d.fields
        or "text_tool_calls" in d.fields
    ):
        return "agentic"
    if "reasoning.delimiters" in d.fields or "reasoning.key" in d.fields:
        return "reasoning"
    return "coding" if d.layout == "columns" else "chat"


def family_patterns(families: Iterable[str] = TARGET_FAMILIES) -> tuple[str, ...]:
    """Word-start regexes for family names (`kimi` matches Kimi-K2.5 and moonshotai/Kimi-K2, not `akimitsu`)."""
    return tuple(rf"\b{re.escape(f)}" for f in families)


DEFAULT_TARGET_PATTERNS = family_patterns()


def names_target(
    card_text: str, rows: list[dict[str, Any]], patterns: Iterable[str] = DEFAULT_TARGET_PATTERNS
) -> str | None:
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
            return f"the dataset card names the target family: …{card_text[start : m.end() + 40].strip()}…"
    return None
