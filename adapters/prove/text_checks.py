"""Checks that read what the text says, over the whole sample, and fail on a *fraction* of rows: a corruption
that touches 30% of rows leaves the other 70% looking fine, so a rule that needs every row never fires.

Each check counts the rows that show it, with examples, and fails when that share reaches its threshold. The
thresholds come from what clean data shows (eval/bench/mutation_kill_notes.md): on the schema corpus every one
of these counts is 0 of the sampled rows, and in public chat data the honest cases (an answer quoting a short
prompt, a truncated reply, a translation request) stay well under the share set here. Shares are of the rows the
check can judge (exchanges with prose answers, records with calls), and at least MIN_HITS rows must show it, so
one odd row never refuses a dataset.
In regenerate mode the evidence is every answer the rows hold, but only damage that reaches the kept context
(the earlier answers the target reads as history) fails a dataset.

    answer_echo       the answer opens by repeating its whole prompt (an export that prefixed the request)
    answer_wrapped    answers wholly inside one element (`<answer>...</answer>`) the adapter does not strip
    answer_cut        prose answers that stop mid-sentence (a length-capped export)
    escaped_markup    HTML-escaped text (`&lt;div&gt;`, `&amp;`): the model would learn the entities
    answer_language   answers in another script than their prompts, where no prompt asks for a translation
    system_in_user    the system prompt of other rows pasted into the first user turn, or, where no row keeps
                      one, a persona paragraph several rows open with (adapters/prove/pasted_system.py)
    call_unanswered   a tool call the assistant follows itself, with no result between (the result was deleted)
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any

from adapters.infer.request_column import CODE_LINE
from adapters.prove.pasted_system import opens_with, pasted_preambles
from adapters.records import Conversation

MIN_HITS = 2  # rows that must show a pattern before its share is judged
SHARES = {  # failing share of the judged rows
    "answer_echo": 0.1,
    "answer_wrapped": 0.1,
    "answer_cut": 0.2,  # truncated replies exist in honest chat dumps; a capped export cuts far more
    "escaped_markup": 0.1,
    "answer_language": 0.2,
    "system_in_user": 0.1,
    "call_unanswered": 0.1,
}
WHY: dict[str, str] = {
    "answer_echo": "an answer that opens by repeating its prompt trains the model to parrot the request",
    "answer_wrapped": "a wrapper element around whole answers is markup the model would learn to emit",
    "answer_cut": "answers cut mid-sentence teach the model to stop mid-thought",
    "escaped_markup": "HTML-escaped text (&lt; &gt; &amp;) is an export artefact, trained as literal entities",
    "answer_language": "an answer in another script than its prompt, unasked, is a mis-aligned or swapped column",
    "system_in_user": "a system prompt pasted into the user's turn trains instructions as if the user said them",
    "call_unanswered": "a tool call followed by the conversation going on without its result lost the result turn",
}
OK = {
    "answer_echo": "no answer opens by repeating its prompt",
    "answer_wrapped": "answers are not wrapped in an element",
    "answer_cut": "prose answers end their sentences",
    "escaped_markup": "no HTML-escaped markup",
    "answer_language": "answers are in the script of their prompts (or were asked for another)",
    "system_in_user": "no system prompt pasted into a user turn",
    "call_unanswered": "every tool call that the conversation goes on from has its result",
}

_WRAP = re.compile(r"^\s*<([A-Za-z][\w-]{0,30})>.*</\1>\s*$", re.S)
_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|#\d{2,5}|#x[0-9a-fA-F]{2,4});")
_END = re.compile(r"""[.!?…。！？:;)\]}"'`*>|\-~\d]\s*$|```\s*$""")
_LAST_WORD = re.compile(r"[^\W\d_]{2,}\s*$", re.U)
# A last token that is an address, a path or a file name (`https://x.org/a.html`, `/etc/nginx.conf`, `a@b.com`):
# honest answers end on one without a stop ("See https://..."), so it is no sentence left open.
_ADDRESS = re.compile(r"[/@\\=_]|\.\w")
_TRANSLATE = re.compile(
    r"translat|traduc|übersetz|翻译|翻訳|번역|перевед|in (?:english|chinese|french|german|spanish|japanese|korean|"
    r"russian|arabic|hindi|portuguese|italian)|into [A-Z][a-z]+"
    # the answer's language named in the prompt's own script ("请用英语回答", "英語で", "영어로", "по-английски")
    r"|英语|英文|中文|汉语|日语|日文|英語|日本語|中国語|영어|한국어|중국어|английск|по-английски|китайск",
    re.I,
)


def _norm(text: str) -> str:
    return " ".join(text.split())


def _kept(rec: Conversation, answers_trained: bool) -> list[Any]:
    """The turns that reach training: all of them, or (regenerate) the context up to the last user turn, whose
    earlier answers the target reads as history."""
    msgs = rec.messages
    if answers_trained:
        return list(msgs)
    last_user = max((i for i, m in enumerate(msgs) if m.role == "user"), default=-1)
    return list(msgs[: last_user + 1])


def _exchanges(msgs: list[Any]) -> list[tuple[str, str]]:
    """(prompt, answer text) of each user turn the assistant answers next (a call's own text included)."""
    return [
        (m.content, msgs[i + 1].content)
        for i, m in enumerate(msgs[:-1])
        if m.role == "user" and msgs[i + 1].role == "assistant" and m.content.strip() and msgs[i + 1].content.strip()
    ]


def script(text: str) -> str | None:
    """The dominant writing system of `text`'s letters (LATIN, CJK, HANGUL, CYRILLIC, ...), None without letters."""
    counts: Counter[str] = Counter()
    for ch in text[:2000]:
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            word = name.split(" ")[0]
            counts["CJK" if word in ("CJK", "HIRAGANA", "KATAKANA") else word] += 1
    if not counts:
        return None
    top, n = counts.most_common(1)[0]
    return top if n >= 0.6 * sum(counts.values()) else None


_LIST_LINE = re.compile(r"^\s*(?:[-*•+]|\d+[.)]|#+)\s")
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
# Math and LaTeX are written in Latin letters whatever the language (`$x = 2$`, `\frac{1}{2}`, `\boxed{2}`).
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$|\\\[.*?\\\]|\\\(.*?\\\)|\\[A-Za-z]+", re.S)
# A line of code outside a fence (a code-instruction set's bare answers): a code keyword opening it, an indented
# body, or a call, assignment or brace ending it.
_CODE_LINE = re.compile(
    rf"{CODE_LINE.pattern}|^\s*(?:return|print|for|if|elif|else|while|var|try|except|echo|SELECT|#)\b|^(?: {{2,}}|\t)"
    r"|[;{}]\s*$|\w\(.*\)\W*$|\s==?\s",
    re.I,
)


def prose_of(text: str) -> str:
    """The text without its code (fenced, inline or bare lines) and math, whose letters are Latin in any language:
    what is left is the prose whose script can be judged."""
    text = _MATH.sub(" ", _CODE.sub(" ", text))
    return "\n".join(line for line in text.splitlines() if not _CODE_LINE.search(line))


def _prose(answer: str) -> bool:
    """An answer of sentences (several words, no code block, not ending on a list item or heading), whose end
    and script can be judged."""
    last = answer.rstrip().rsplit("\n", 1)[-1]
    return (
        len(answer.split()) >= 8
        and "```" not in answer
        and not answer.lstrip().startswith(("{", "[", "<"))
        and not _LIST_LINE.match(last)
    )


def _row_hits(
    rec: Conversation, kept: list[Any], systems: set[str], pasted: set[str]
) -> tuple[set[str], dict[str, str]]:
    """(the checks this row can be judged by, {check: what it shows}) reading the turns `kept`."""
    judged: set[str] = set()
    hits: dict[str, str] = {}
    pairs = _exchanges(kept)
    if pairs:
        judged |= {"answer_echo", "answer_language", "answer_wrapped"}
        echo = next((p for p, a in pairs if _echoes(p, a)), None)
        if echo is not None:
            hits["answer_echo"] = f"answer opens with its prompt {_norm(echo)[:40]!r}"
        # code and math are written in Latin letters whatever the language: judged on the prose outside them
        swap = next(
            ((sp, sa) for p, a in pairs if (sp := script(prose_of(p))) and (sa := script(prose_of(a))) and sp != sa),
            None,
        )
        if swap and not any(_TRANSLATE.search(p) for p, _ in pairs):
            hits["answer_language"] = f"prompt in {swap[0]} script, answer in {swap[1]}"
        wrapped = next((m.group(1) for _, a in pairs if (m := _WRAP.match(a))), None)
        if wrapped:
            hits["answer_wrapped"] = f"answer wholly inside <{wrapped}>"
        prose = [a for _, a in pairs if _prose(a)]
        if prose:
            judged.add("answer_cut")
            cut = next(
                (
                    a
                    for a in prose
                    if not _END.search(a) and _LAST_WORD.search(a) and not _ADDRESS.search(a.split()[-1])
                ),
                None,
            )
            if cut is not None:
                hits["answer_cut"] = f"answer ends mid-sentence: …{cut.rstrip()[-40:]!r}"
    judged.add("escaped_markup")
    escaped = next((m.content for m in kept if m.content and len(_ENTITY.findall(m.content)) >= 2), None)
    if escaped is not None:
        ent = _ENTITY.search(escaped)
        hits["escaped_markup"] = f"HTML entities in the text: {ent.group(0) if ent else ''!r}"
    first_user = next((m for m in rec.messages if m.role == "user"), None)
    if first_user is not None:
        judged.add("system_in_user")
        head = _norm(first_user.content)
        found = next((s for s in systems if len(s) >= 30 and head.startswith(s) and len(head) > len(s)), None)
        found = found or opens_with(first_user.content, pasted)
        if found:
            hits["system_in_user"] = f"first user turn opens with a system prompt {found[:40]!r}"
    msgs = rec.messages
    calls = [i for i, m in enumerate(msgs) if m.role == "assistant" and m.tool_calls]
    if calls:
        judged.add("call_unanswered")
        # the next speaker is the assistant again: nothing answered the call. (A user turn after a call is the
        # environment in agent logs that write observations as the user, SWE-agent's `OBSERVATION:`.)
        lost = next((i for i in calls if i + 1 < len(msgs) and msgs[i + 1].role == "assistant"), None)
        if lost is not None:
            lost_calls = msgs[lost].tool_calls or []
            name = lost_calls[0].function.name if lost_calls else "?"
            hits["call_unanswered"] = f"messages[{lost}] calls {name!r}, then the assistant again"
    return judged, hits


def text_problems(records: list[Conversation], answers_trained: bool = True) -> list[dict[str, Any]]:
    """[{name, level, detail, rows, count}] for every check over its threshold; [] on a clean sample.

    `answers_trained` False (regenerate mode): the evidence is still read from every answer the rows hold (an
    export that cut or escaped answers did so in the final answers too), but a check fails only when the
    pattern reaches the context up to the cut, the earlier answers the target reads as history: a wrapped or
    cut final answer alone, which the target rewrites, changes nothing. (One damaged answer in the kept
    context of a small sample is then judged with the rest of the dataset's answers, not alone.)"""
    hits: dict[str, list[tuple[int, str]]] = {name: [] for name in SHARES}
    judged: Counter[str] = Counter()
    reach: Counter[str] = Counter()  # rows whose kept context shows the pattern (all of them in native mode)
    judged_kept: Counter[str] = Counter()  # rows the kept context can be judged on
    systems = {
        _norm(r.messages[0].content) for r in records if r.messages[0].role == "system" and r.messages[0].content
    }
    pasted = pasted_preambles(
        next((m.content for m in r.messages if m.role == "user"), "")
        for r in records
        if any(m.role == "user" for m in r.messages)
    )
    for rec in records:
        row = rec.source.row_index
        can, found = _row_hits(rec, list(rec.messages), systems, pasted)
        can_kept, kept = (can, found) if answers_trained else _row_hits(rec, _kept(rec, False), systems, pasted)
        judged.update(can)
        judged_kept.update(can_kept)
        for name, detail in found.items():
            hits[name].append((row, detail + ("" if name in kept else " (after the cut)")))
            reach[name] += name in kept
    out = []
    for name, seen in hits.items():
        n, total = len({i for i, _ in seen}), judged[name]
        over = n >= MIN_HITS and n >= SHARES[name] * total and reach[name] > 0
        # the kept context alone, as its own sample (an answer cut in most multi-turn contexts of a set whose
        # single-turn rows keep none)
        over_kept = reach[name] >= MIN_HITS and reach[name] >= SHARES[name] * judged_kept[name]
        if total and (over or over_kept):
            seen.sort(key=lambda hit: hit[1].endswith("(after the cut)"))  # examples that reach training first
            where = "" if answers_trained else f" ({reach[name]} in the context kept for regeneration)"
            out.append(
                {
                    "name": name,
                    "level": "error",
                    "detail": f"{n} of {total} rows{where}: " + "; ".join(f"row {i} {d}" for i, d in seen[:3]),
                    "rows": [i for i, _ in seen][:5],
                    "count": n,
                }
            )
    return out


def _echoes(prompt: str, answer: str) -> bool:
    p, a = _norm(prompt), _norm(answer)
    return len(p) >= 20 and a.startswith(p) and len(a) > len(p) + 20
