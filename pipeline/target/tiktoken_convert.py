"""Convert a tiktoken-format tokenizer (Kimi-K2/K2.5's `tiktoken.model` + `tokenization_kimi.py`) into a
plain `tokenizer.json` that transformers loads without remote code.

Everything is read as data, nothing is executed:
- the BPE ranks: one `base64(token bytes) rank` per line (tiktoken's format, parsed here);
- the split pattern and the reserved-special count: string/int literals read out of the remote
  tokenizer's source with `ast` (never imported), else Kimi's published layout below;
- special tokens: ids `len(ranks) .. len(ranks) + n_reserved + 1`, named from `added_tokens_decoder`
  in tokenizer_config.json, the rest `<|reserved_token_{id}|>` (Kimi's rule). All of them are added in
  id order, so each gets its original id; listing only the named ones would shift every id.
- the chat template stays where it is (tokenizer_config.json or chat_template.jinja).

The vocabulary and merges come from transformers' own TikTokenConverter.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.errors import DraftsetError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# Kimi-K2 / K2.5 / Kimi-Linear `tokenization_kimi.py` (TikTokenTokenizer.pat_str, num_reserved_special_tokens).
# Its character-class intersections (`&&`) are understood by tiktoken (fancy-regex) and tokenizers (Oniguruma).
KIMI_PATTERN_PARTS = [
    r"""[\p{Han}]+""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
]
KIMI_PATTERN = "|".join(KIMI_PATTERN_PARTS)
KIMI_RESERVED = 256  # plus 2: the remote code adds `num_reserved_special_tokens + 2` ids
RANKS_FILES = ("tiktoken.model",)
REMOTE_CONFIG = "tokenizer_config.remote.json"  # the original config, kept beside the converted one


@dataclass
class Converted:
    out_dir: Path
    n_ranks: int
    n_special: int
    pattern_source: str
    sha256: str


def read_ranks(path: Path) -> dict[bytes, int]:
    """tiktoken's BPE file: `base64 rank` per line. Ranks must be 0..n-1 (ids are ranks)."""
    ranks: dict[bytes, int] = {}
    for n, line in enumerate(Path(path).read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except ValueError as exc:
            raise DraftsetError(
                f"{path}:{n} is not a `base64 rank` line",
                hint="pass the tiktoken.model file of the target (tiktoken BPE format)",
            ) from exc
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise DraftsetError(
            f"{path}: ranks are not 0..{len(ranks) - 1} without gaps",
            hint="a tiktoken file whose ranks have gaps cannot map ranks to ids one to one",
        )
    return ranks


def _literal(node: ast.AST) -> Any:
    """A str/int literal, or `"|".join([literals...])`, evaluated without running anything."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
        and len(node.args) == 1
    ):
        return node.func.value.value.join(ast.literal_eval(node.args[0]))
    return ast.literal_eval(node)


def read_remote_layout(model_dir: Path) -> tuple[str, int, str]:
    """(split pattern, reserved count, where they came from), from `tokenization_*.py` parsed as a syntax
    tree (class attributes `pat_str` and `num_reserved_special_tokens`), else Kimi's layout."""
    for source in sorted(Path(model_dir).glob("tokenization_*.py")):
        found: dict[str, Any] = {}
        for node in ast.walk(ast.parse(source.read_text(), filename=str(source))):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            for t in targets:
                if isinstance(t, ast.Name) and t.id in ("pat_str", "num_reserved_special_tokens"):
                    try:
                        found[t.id] = _literal(value)
                    except (ValueError, TypeError, SyntaxError):
                        pass
        if isinstance(found.get("pat_str"), str):
            reserved = found.get("num_reserved_special_tokens", KIMI_RESERVED)
            return str(found["pat_str"]), int(reserved), source.name
    return KIMI_PATTERN, KIMI_RESERVED, "builtin Kimi layout"


def special_tokens(config: dict, n_ranks: int, n_reserved: int) -> dict[int, str]:
    """id → name for every special id, exactly as the remote tokenizer numbers them."""
    named = {
        int(i): (v["content"] if isinstance(v, dict) else str(v))
        for i, v in (config.get("added_tokens_decoder") or {}).items()
    }
    return {i: named.get(i, f"<|reserved_token_{i}|>") for i in range(n_ranks, n_ranks + n_reserved + 2)}


def build_tokenizer(ranks: dict[bytes, int], pattern: str, specials: dict[int, str]) -> Tokenizer:
    """A `tokenizers.Tokenizer` with the same vocabulary, merges, split and special ids."""
    from tokenizers import AddedToken, Regex  # noqa: F401  (Regex: fail early if tokenizers is missing)
    from transformers.convert_slow_tokenizer import TikTokenConverter

    class _Converter(TikTokenConverter):  # the ranks are parsed here, so the tiktoken package is not needed
        @staticmethod
        def load_tiktoken_bpe(_url: str) -> dict[bytes, int]:
            return ranks

    tok = _Converter(vocab_file="<parsed>", pattern=pattern).converted()
    for i in sorted(specials):  # in id order: each is appended at the next id, i.e. its own
        tok.add_special_tokens([AddedToken(specials[i], normalized=False, special=True)])
        if tok.token_to_id(specials[i]) != i:
            raise DraftsetError(
                f"special token {specials[i]!r} landed at id {tok.token_to_id(specials[i])}, not {i}",
                hint="its name collides with a BPE token or another special; check added_tokens_decoder",
            )
    return tok


def convert_tokenizer(model_dir: Path, out_dir: Path | None = None) -> Converted:
    """Write tokenizer.json + a remote-code-free tokenizer_config.json into `out_dir` (default: model_dir)."""
    from transformers import PreTrainedTokenizerFast

    model_dir = Path(model_dir)
    out_dir = Path(out_dir or model_dir)
    ranks_path = next((model_dir / f for f in RANKS_FILES if (model_dir / f).is_file()), None)
    if ranks_path is None:
        raise DraftsetError(
            f"no {' or '.join(RANKS_FILES)} in {model_dir}",
            hint="point at the target's snapshot dir (Kimi-K2.5 ships tiktoken.model)",
        )
    config_path = (
        model_dir / REMOTE_CONFIG if (model_dir / REMOTE_CONFIG).is_file() else model_dir / "tokenizer_config.json"
    )
    config = json.loads(config_path.read_text()) if config_path.is_file() else {}
    ranks = read_ranks(ranks_path)
    pattern, n_reserved, pattern_source = read_remote_layout(model_dir)
    specials = special_tokens(config, len(ranks), n_reserved)
    tok = build_tokenizer(ranks, pattern, specials)
    names = set(specials.values())
    role = {k: config.get(k) for k in ("bos_token", "eos_token", "pad_token", "unk_token")}
    role = {k: (v["content"] if isinstance(v, dict) else v) for k, v in role.items() if v}
    unknown = {k: v for k, v in role.items() if v not in names}
    if unknown:
        raise DraftsetError(
            f"{config_path.name} names {unknown} but no special id carries that name",
            hint="check added_tokens_decoder in tokenizer_config.json",
        )
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        **role,
        clean_up_tokenization_spaces=False,
        model_max_length=int(config.get("model_max_length") or 1 << 20),
    )
    if isinstance(config.get("chat_template"), str):
        wrapped.chat_template = config["chat_template"]
    out_dir.mkdir(parents=True, exist_ok=True)
    if out_dir == model_dir and config_path.name == "tokenizer_config.json" and config.get("auto_map"):
        shutil.copyfile(config_path, model_dir / REMOTE_CONFIG)  # keep the original: re-runs read it
    elif out_dir != model_dir and (model_dir / "chat_template.jinja").is_file():
        shutil.copyfile(model_dir / "chat_template.jinja", out_dir / "chat_template.jinja")
    for stale in ("tokenizer_config.json",):  # a symlink into an HF cache must not be written through
        if (out_dir / stale).is_symlink():
            (out_dir / stale).unlink()
    wrapped.save_pretrained(str(out_dir))
    return Converted(out_dir, len(ranks), len(specials), pattern_source, tokenizer_sha256(out_dir) or "")


def tokenizer_sha256(model_dir: Path) -> str | None:
    """sha256 of a model dir's tokenizer.json (what capture manifests record), None if it has none."""
    path = Path(model_dir) / "tokenizer.json"
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
