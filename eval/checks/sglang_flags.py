"""SGLang's command-line surface, kept as data, and an argparse parser rebuilt from it.

SGLang parses `python -m sglang.launch_server ...` and `sglang serve ...` with a stock
`argparse.ArgumentParser(prog="sglang serve")` filled by `ServerArgs.add_cli_args`
(python/sglang/srt/server_args.py, `prepare_server_args`). Whether a flag is accepted therefore
depends on the *whole* table: argparse takes any unique prefix (`--speculative-algo`), exits 2 on a
prefix that matches several flags (`--speculative-draft`: -model-path, -model-revision, -load-format,
...) and on any unknown flag. So the checker keeps every option SGLang registers (names, aliases,
how many values each takes, value type, choices, required) in one data file named by the SGLang
version, and rebuilds a real argparse parser from it: the same stdlib code then decides prefixes,
ambiguity, `--flag=value` and exit codes exactly as the server would.

When `sglang` itself is importable (the production venv), `native_parser()` builds SGLang's own
parser; `describe()` turns either parser into the table form so the two can be compared.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any, NoReturn

SGLANG_VERSION = "0.5.23"
TABLE = Path(__file__).parent / "data" / f"sglang_{SGLANG_VERSION}_flags.json"
SOURCE = ("python/sglang/srt/server_args.py", SGLANG_VERSION)  # ServerArgs.add_cli_args / prepare_server_args


class ParseFailure(Exception):
    """What argparse would print before `exit(2)`."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse prints usage and exits 2; we keep the message
        raise ParseFailure(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:  # -h/--help
        raise ParseFailure(message or "help requested (the server prints usage and exits)", status)


_KINDS = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "BooleanOptionalAction": "bool_optional",
    "_HelpAction": "help",
    "_StoreConstAction": "store_const",
    "_AppendAction": "append",
    "_CountAction": "count",
}
# SGLang's own Action subclasses, by the builtin they behave like on the command line.
_CUSTOM = {
    "DeprecatedStoreTrueAction": "store_true",
    "DeprecatedAction": "store",
    "DeprecatedAliasStoreAction": "store",
    "DeprecatedStoreConstAction": "store",
    "LoRAPathAction": "store",
}


def describe(parser: argparse.ArgumentParser) -> list[dict]:
    """Every option of `parser` as plain data (the form of the built-in table)."""
    out = []
    for a in parser._actions:
        if not a.option_strings:
            continue
        name = type(a).__name__
        kind = _KINDS.get(name) or _CUSTOM.get(name) or "store"
        type_name = getattr(a.type, "__name__", None) if a.type is not None else None
        out.append(
            {
                "flags": list(a.option_strings),
                "dest": a.dest,
                "kind": kind,
                "nargs": a.nargs if kind in ("store", "append") else None,
                "type": type_name
                if type_name in _TYPES or type_name is None
                else ("json" if type_name == "loads" else "other"),
                "choices": [str(c) for c in a.choices] if a.choices is not None else None,
                "required": bool(a.required),
            }
        )
    return out


@lru_cache(maxsize=1)
def builtin_table() -> dict:
    return json.loads(TABLE.read_text())


def _human_readable_int(value: str) -> int:
    """SGLang's human_readable_int (srt/utils/common.py): 128k = 128000, 4Ki = 4096, else a plain int."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value.strip())
    if not m:
        return int(value)
    number, suffix = m.groups()
    if suffix.endswith("i"):
        if "." in number:
            raise ValueError(value)
        return int(number) * 2 ** (10 * "KMGT".index(suffix[0]) + 10)
    return int(Decimal(number) * 10 ** (3 * "kMGT".index(suffix) + 3))


def _nullable_str(value: str) -> str | None:
    return None if not value or value == "None" else value


_TYPES: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "human_readable_int": _human_readable_int,
    "json_list_type": json.loads,
    "nullable_str": _nullable_str,
}


def _type(name: str | None) -> Callable[[str], Any]:
    return json.loads if name == "json" else _TYPES.get(name or "", str)


def build_parser(actions: list[dict] | None = None) -> argparse.ArgumentParser:
    """A stdlib argparse parser with SGLang's options (allow_abbrev on, as in prepare_server_args)."""
    parser = _Parser(prog="sglang serve", add_help=False)
    for spec in actions if actions is not None else builtin_table()["actions"]:
        kw: dict = {"dest": spec["dest"], "required": spec["required"]}
        kind = spec["kind"]
        if kind == "help":
            kw = {"action": "help"}
        elif kind in ("store_true", "store_false"):
            kw["action"] = kind
        elif kind == "bool_optional":
            kw["action"] = argparse.BooleanOptionalAction
        elif kind == "count":
            kw["action"] = "count"
        else:
            kw.update(action="append" if kind == "append" else "store", type=_type(spec["type"]))
            if spec["nargs"] is not None:
                kw["nargs"] = spec["nargs"]
            if spec["choices"] is not None:
                kw["choices"] = [
                    _type(spec["type"])(c) if spec["type"] in ("int", "float") else c for c in spec["choices"]
                ]
        parser.add_argument(*spec["flags"], **kw)
    return parser


def native_parser() -> argparse.ArgumentParser | None:
    """SGLang's own parser when `sglang` is importable, else None (it is not installed in draftset's venv)."""
    try:
        from sglang.srt.server_args import ServerArgs
    except Exception:  # noqa: BLE001  absent, or unimportable without its GPU stack: use the table
        return None
    parser = _Parser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    return parser


def native_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("sglang")
    except Exception:  # noqa: BLE001  metadata absent (a source checkout): ask the package
        try:
            from sglang.version import __version__

            return str(__version__)
        except Exception:  # noqa: BLE001
            return None
