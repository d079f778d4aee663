"""Reading and showing text that strangers wrote: card YAML, error bodies, catalog text for a terminal.

- `load_card_yaml`: PyYAML's safe loader under the card limits. Aliases are expanded by reference in
  the node graph, so the expanded size is counted on the graph (memoised, linear) before anything is
  constructed: a 400-byte alias bomb is refused in microseconds instead of building gigabytes.
- `redact`: tokens and API keys cut out of any text we echo (an endpoint may echo the key in its 401).
- `clean_text`: terminal escape sequences and control characters removed, so catalog or card text
  printed to a terminal cannot move the cursor, retitle the window or hide text.
- `command`, `shell_word`, `label_word`/`label_from_word`: the one way a suggested command (a hint, a
  `next:` line) embeds a value from a dataset, the Hub or an LLM: every such word is shell-quoted, so
  pasting the suggestion runs draftset and nothing else; a role label that a terminal would mangle (NUL,
  ANSI, newlines) is written as its JSON string, which `adapters map` reads back to the exact label.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from typing import Any

import yaml

from catalog.limits import MAX_CARD_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES, LimitExceeded


def _expanded_size(root: yaml.Node) -> int:
    """Nodes of the document once every alias is expanded; raises past the limits. Iterative."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        if depth > MAX_YAML_DEPTH:
            raise LimitExceeded("yaml_too_deep", f"card YAML nested deeper than {MAX_YAML_DEPTH}")
        if id(node) in sizes:
            continue
        if isinstance(node, yaml.ScalarNode):
            sizes[id(node)] = 1
            continue
        children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else list(node.value)
        if children_done:
            total = 1 + sum(sizes.get(id(c), 0) for c in children)
            if total > MAX_YAML_NODES:
                raise LimitExceeded(
                    "yaml_too_large", f"card YAML expands to more than {MAX_YAML_NODES:,} nodes (an alias bomb?)"
                )
            sizes[id(node)] = total
            continue
        stack.append((node, depth, True))
        # A node that refers back to itself (recursive alias) would never finish: refuse it.
        stack.extend((c, depth + 1, False) for c in children if id(c) not in sizes)
        if len(stack) > 10 * MAX_YAML_NODES:
            raise LimitExceeded("yaml_too_large", "card YAML has a recursive or exploding alias")
    return sizes[id(root)]


def load_card_yaml(text: str, where: str = "card") -> Any:
    """yaml.safe_load with size, depth and alias-expansion limits; YAML errors stay yaml.YAMLError."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_CARD_BYTES:
        raise LimitExceeded(
            "card_too_large", f"{where}: YAML of {len(text):,} chars, over the {MAX_CARD_BYTES:,}-byte card limit"
        )
    # Flow/block nesting is composed recursively by PyYAML: count the openers first.
    if text.count("[") + text.count("{") > MAX_YAML_DEPTH and _flow_depth(text) > MAX_YAML_DEPTH:
        raise LimitExceeded("yaml_too_deep", f"{where}: YAML nested deeper than {MAX_YAML_DEPTH}")
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise LimitExceeded("yaml_too_deep", f"{where}: YAML nested too deep") from None
        if node is None:
            return None
        _expanded_size(node)  # linear in the composed graph: aliases are counted, not copied
        try:
            return loader.construct_document(node)
        except RecursionError:
            raise LimitExceeded("yaml_too_deep", f"{where}: YAML nested too deep") from None
    finally:
        loader.dispose()


_FRONT_MATTER = re.compile(r"\A\s*---\s*\n(.*?\n)?---\s*(?:\n|\Z)", re.S)


def split_card(text: str) -> tuple[str | None, str]:
    """(YAML front matter or None, markdown body) of a dataset card (README.md)."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return None, text
    return match.group(1) or "", text[match.end() :]


def check_card(raw: bytes, where: str = "card") -> None:
    """Refuse a card whose size or YAML breaks the limits, before a library (`datasets`, RepoCard)
    parses it with a plain yaml.safe_load. YAML syntax errors are left to those libraries to report."""
    if len(raw) > MAX_CARD_BYTES:
        raise LimitExceeded(
            "card_too_large", f"{where}: {len(raw):,} bytes, over the {MAX_CARD_BYTES:,}-byte card limit"
        )
    front, _ = split_card(raw.decode("utf-8-sig", errors="replace"))
    if front is not None:
        try:
            load_card_yaml(front, where)
        except yaml.YAMLError:
            pass


def _flow_depth(text: str) -> int:
    depth = peak = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            peak = max(peak, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return peak


# -- secrets ---------------------------------------------------------------------------------
# Each pattern's group 1 is kept (the label), the rest is the secret.
_SECRET_PATTERNS = [
    re.compile(r"()\bhf_[A-Za-z0-9]{16,}"),  # Hugging Face tokens
    re.compile(r"()\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{12,}"),  # OpenAI-style keys
    re.compile(r"(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=\-]{8,}"),  # Authorization values
    re.compile(
        r"(?i)((?:api[_-]?key|access[_-]?token|secret|password|authorization)[\"']?\s*[:=]\s*[\"']?)"
        r"[^\s\"',;&]{4,}"
    ),
]
_SECRET_ENV = re.compile(r"(?i)(token|key|secret|password)")


def _env_secrets() -> list[str]:
    """Values of secret-looking environment variables (HF_TOKEN, OPENAI_API_KEY, ...): cut them verbatim."""
    return sorted((v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 6), key=len, reverse=True)


def redact(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """`text` with known secrets and anything shaped like a token or key replaced by ***."""
    for secret in [*secrets, *_env_secrets()]:
        if secret and len(secret) >= 6:
            text = text.replace(secret, "***")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + "***", text)
    return text


# -- terminal-safe text ----------------------------------------------------------------------
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]"
)
# C0 (but tab and newline), DEL, C1, and the bidi overrides that reorder what a terminal shows.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\ufeff]")


def clean_text(text: str, keep_newlines: bool = True) -> str:
    """Printable text: escape sequences removed, other control characters shown as U+FFFD."""
    text = _ANSI.sub("", text)
    text = _CONTROL.sub("\ufffd", text)
    if not keep_newlines:
        text = text.replace("\n", " ")
    # A lone surrogate cannot be written to a UTF-8 terminal: show it as a replacement character.
    return text.encode("utf-8", "replace").decode("utf-8")


_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")  # [text](url) and ![alt](src): the words, not the address
_MD_MARKS = re.compile(r"(^|\s)(#{1,6}|>|[-*+]|\d+\.)\s+|[*_`~]{1,3}|<[^>\n]{0,200}>|\|")


def card_text(text: str, limit: int = 160) -> str:
    """A card's summary as plain words for a page or a table cell: markdown's marks (headings, emphasis,
    links, lists, tables, HTML tags) dropped, whitespace folded, cut at `limit` with an ellipsis. Never
    rendered: the words stay untrusted text, escaped where they are shown."""
    _, body = split_card(text or "")
    words = " ".join(_MD_MARKS.sub(" ", _MD_LINK.sub(r"\1", clean_text(body))).split())
    return words if len(words) <= limit else words[: limit - 1].rstrip() + "…"


def is_plain(text: str) -> bool:
    """Text a terminal shows as it is: no escape sequence, control character, bidi override or surrogate."""
    return not (_ANSI.search(text) or _CONTROL.search(text) or "\n" in text or "\t" in text) and text == (
        text.encode("utf-8", "replace").decode("utf-8")
    )


# -- suggested commands ------------------------------------------------------------------------
class Verbatim(str):
    """A word of a suggested command that we wrote (a placeholder such as ROLE, `--note "why"`): not quoted."""


def shell_word(value: object) -> str:
    """`value` as one shell word: pasted, it is that one argument, never code (shlex.quote). A value a
    terminal would mangle is shown cleaned (it could not be typed back either); it still runs nothing."""
    text = str(value)
    if not is_plain(text):
        text = clean_text(text, keep_newlines=False)
    return shlex.quote(text)


def command(*words: object) -> str:
    """A suggested command line: every word quoted by shell_word unless it is Verbatim.

    command("draftset", "adapters", "map", repo, label_word(label) + "=ROLE")"""
    return " ".join(w if isinstance(w, Verbatim) else shell_word(w) for w in words)


def label_word(label: str) -> str:
    """How a command line names a role label: the label itself when a terminal shows it as it is,
    else its JSON string ("\\u001b[31mred"), which is printable ASCII and which `label_from_word`
    reads back exactly. A label that itself looks like a JSON string, or holds "=", is JSON too."""
    if is_plain(label) and not label.startswith('"') and "=" not in label:
        return label
    return json.dumps(label, ensure_ascii=True)


def label_from_word(word: str) -> str:
    """The label a command-line word names (inverse of label_word)."""
    if len(word) >= 2 and word.startswith('"') and word.endswith('"'):
        try:
            value = json.loads(word)
        except ValueError:
            return word
        if isinstance(value, str):
            return value
    return word


def split_assignment(text: str) -> tuple[str, str, bool]:
    """(label, value, had "=") of a LABEL=VALUE word, LABEL written as label_word writes it."""
    if text.startswith('"'):
        try:
            label, end = json.JSONDecoder().raw_decode(text)
        except ValueError:
            label, end = None, 0
        if isinstance(label, str) and text[end : end + 1] == "=":
            return label, text[end + 1 :], True
    label, sep, value = text.partition("=")
    return label, value, bool(sep)


_DOUBLE_QUOTE_SAFE = re.compile(r'[^"$`\\!]*')


def sql_command(query: str) -> str:
    """`draftset sql "QUERY"`: double quotes (readable, SQL's single quotes inside) when nothing in the
    query means anything to a shell inside double quotes, else shell_word's single-quoting."""
    if is_plain(query) and _DOUBLE_QUOTE_SAFE.fullmatch(query):
        return f'draftset sql "{query}"'
    return command("draftset", "sql", query)


def suggested_commands(text: str) -> list[str]:
    """The command lines a hint or check detail suggests: from each `draftset ` to the end of its command,
    which is a backtick, '), ', '; ', ' (' or a closing ')' outside quotes, or the end of the text. The scan
    honours shell quoting, so a quoted value holding any of those stays inside its command (tests, probes)."""
    found, i = [], 0
    while (start := text.find("draftset ", i)) >= 0:
        quote, j = None, start
        while j < len(text):
            ch = text[j]
            if quote:
                quote = None if ch == quote else quote
            elif ch in "'\"":
                quote = ch
            elif ch == "`" or text.startswith(("), ", "; ", " (", ")"), j):
                break
            j += 1
        found.append(text[start:j].rstrip(" ,."))
        i = j
    return found
