"""Public chat templates as data: how a conversation rendered into one text column is split back into turns.

Each `Grammar` names a template family and says, as plain data, which literal markers open a turn of which
role, whether markers count only at a line start, which end-of-turn tokens are stripped, where text before
the first marker goes (a system prompt, as in Alpaca's preamble and Vicuna's system line) and whether adjacent
segments of one role are one turn (Alpaca's `### Instruction:` + `### Input:`). Detection tries every grammar on
the sampled values and keeps the one that reads the most rows as a dialogue; the adapter spec then carries the
literal markers (`TranscriptSpec`), so the reviewer sees exactly what splits the text and the spec stays data.
The one home for template grammars: add a template here, nowhere else.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from adapters.map.aliases import canonical_role

SPEAKERS = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class Grammar:
    name: str
    # regex → role; a pattern with a group takes the role from the group (`<|im_start|>(\w+)`), else `role`
    markers: tuple[tuple[str, str | None], ...]
    anchored: bool = False  # markers count only at a line start
    ends: tuple[str, ...] = ()  # end-of-turn / sequence tokens, stripped from segments
    preamble: str | None = None  # role of text before the first marker (None: such text rejects the row)
    merge: bool = False  # adjacent segments of one role are one turn
    roles: dict[str, str] = field(default_factory=dict)  # group label → role, beyond the alias table


GRAMMARS: tuple[Grammar, ...] = (
    Grammar(
        "chatml",
        ((r"<\|im_start\|>([A-Za-z_]+)", None),),
        ends=("<|im_end|>", "<|endoftext|>"),
    ),
    Grammar(
        "llama3",
        ((r"<\|start_header_id\|>([A-Za-z_]+)<\|end_header_id\|>", None),),
        ends=("<|eot_id|>", "<|begin_of_text|>", "<|end_of_text|>"),
    ),
    Grammar(
        "llama2",  # <s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s>
        ((r"\[INST\]", "user"), (r"<<SYS>>", "system"), (r"<</SYS>>", "user"), (r"\[/INST\]", "assistant")),
        ends=("<s>", "</s>"),
    ),
    Grammar(
        "gemma",
        ((r"<start_of_turn>([A-Za-z_]+)", None),),
        ends=("<end_of_turn>", "<bos>", "<eos>"),
        roles={"model": "assistant"},
    ),
    Grammar(
        "zephyr",  # also Phi-3: <|user|>\n...<|end|>
        ((r"<\|(system|user|assistant)\|>", None),),
        ends=("</s>", "<|end|>", "<|endoftext|>"),
    ),
    Grammar(
        "alpaca",  # {preamble}\n\n### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n{output}
        ((r"### Instruction:", "user"), (r"### Input:", "user"), (r"### Response:", "assistant")),
        anchored=True,
        ends=("</s>", "<|endoftext|>"),
        preamble="system",
        merge=True,
    ),
    Grammar(
        "vicuna",  # {system} USER: {user} ASSISTANT: {assistant}</s>USER: ...
        ((r"USER:", "user"), (r"ASSISTANT:", "assistant")),
        ends=("</s>",),
        preamble="system",
    ),
    Grammar(
        "guanaco",  # ### Human: {user}### Assistant: {assistant} (timdettmers/openassistant-guanaco, Baize): inline
        ((r"### Human:", "user"), (r"### Assistant:", "assistant")),
        ends=("</s>", "<|endoftext|>"),
    ),
    Grammar(
        "human-assistant",  # \n\nHuman: {user}\n\nAssistant: {assistant} (Anthropic HH): at line starts
        ((r"Human:", "user"), (r"Assistant:", "assistant")),
        anchored=True,
        ends=("</s>", "<|endoftext|>"),
    ),
)
BY_NAME = {g.name: g for g in GRAMMARS}
# Every end-of-turn / sequence token of every grammar: what a line-start transcript strips (adapters/map/turns.py).
END_TOKENS = tuple(dict.fromkeys(token for g in GRAMMARS for token in g.ends))


def _role(grammar: Grammar, label: str) -> str | None:
    role = grammar.roles.get(label.lower()) or canonical_role(label)
    return role if role in SPEAKERS else None


def literal_markers(grammar: Grammar, texts: list[str]) -> dict[str, str]:
    """The literal markers of `grammar` that occur in `texts`, each with its role (`<|im_start|>user` → user)."""
    found: dict[str, str] = {}
    for pattern, fixed in grammar.markers:
        rx = re.compile(pattern)
        for text in texts:
            for m in rx.finditer(text):
                role = fixed or _role(grammar, m.group(1))
                if role and (not grammar.anchored or _at_line_start(text, m.start())):
                    found.setdefault(m.group(0), role)
    return found


def _at_line_start(text: str, pos: int) -> bool:
    return not text[text.rfind("\n", 0, pos) + 1 : pos].strip()


def best_grammar(texts: list[str]) -> tuple[Grammar, dict[str, str], int] | None:
    """The grammar that reads the most texts as a dialogue (a user and an assistant turn), with its markers."""
    best: tuple[Grammar, dict[str, str], int] | None = None
    for grammar in GRAMMARS:
        markers = literal_markers(grammar, texts)
        if not {"user", "assistant"} <= set(markers.values()):
            continue
        ok = 0
        for text in texts:
            roles = Counter(role for role, _ in split(text, markers, grammar.anchored, grammar.ends))
            ok += roles["user"] > 0 and roles["assistant"] > 0
        if best is None or ok > best[2]:
            best = (grammar, markers, ok)
    return best


def split(
    text: str, markers: dict[str, str], anchored: bool, ends: tuple[str, ...] | list[str] = ()
) -> list[tuple[str, str]]:
    """(role, text) segments in order; text before the first marker comes back with role `""`."""
    if not markers:
        return []
    hits = list(_splitter(tuple(markers), anchored).finditer(text))
    out: list[tuple[str, str]] = []
    if hits:
        head = _strip(text[: hits[0].start()], ends)
        if head:
            out.append(("", head))
    for i, m in enumerate(hits):
        end = hits[i + 1].start() if i + 1 < len(hits) else len(text)
        out.append((markers[m.group(1)], _strip(text[m.end() : end], ends)))
    return out


@lru_cache(maxsize=256)
def _splitter(markers: tuple[str, ...], anchored: bool) -> re.Pattern[str]:
    """One compiled pattern per marker set (apply calls `split` once per row)."""
    alternatives = "|".join(re.escape(m) for m in sorted(markers, key=len, reverse=True))
    return re.compile(rf"(?:^|\n)[ \t]*({alternatives})[ \t]?" if anchored else rf"({alternatives})[ \t]?")


def turns_of(
    text: str,
    markers: dict[str, str],
    *,
    anchored: bool = True,
    ends: tuple[str, ...] | list[str] = (),
    preamble: str | None = None,
    merge: bool = False,
) -> list[tuple[str, str]]:
    """The turns of a rendered conversation: empty segments dropped (`[INST] <<SYS>>` opens an empty user
    segment), text before the first marker given the preamble role, adjacent turns of one role joined when the
    template splits one turn in two. Raises ValueError when text precedes the first marker and the template
    has no place for it (nothing is dropped unseen)."""
    out: list[tuple[str, str]] = []
    for role, body in split(text, markers, anchored, ends):
        if not body:
            continue
        if role == "":
            if preamble is None:
                raise ValueError(f"text before the first speaker marker: {body[:60]!r}")
            role = preamble
        if merge and out and out[-1][0] == role:
            out[-1] = (role, f"{out[-1][1]}\n\n{body}")
        else:
            out.append((role, body))
    return out


def _strip(body: str, ends: tuple[str, ...] | list[str]) -> str:
    body = body.strip()
    changed = True
    while changed and ends:  # end tokens may stack (`</s><s>`) at either side of a segment
        changed = False
        for token in ends:
            if body.endswith(token):
                body, changed = body[: -len(token)].strip(), True
            if body.startswith(token):
                body, changed = body[len(token) :].strip(), True
    return body
