"""A stage command's options, built from its config model: one Typer option per settable field (flag, help,
default shown, range) as the model declares it (pipeline/stage/config.py `setting`), so `draftset STAGE` and
`python -m pipeline.STAGE` offer the same settings with the same words and neither can drift from the model.

    @stage_options(TrainConfig)
    def train(capture_name: str = typer.Argument(...), ..., flags: dict[str, Any] | None = None) -> None:
        values = stage_settings(TrainConfig, config_file, flags)   # defaults < --config < flags given

The command declares only what is not a setting (its input, --out, --config, --json); the decorator adds the
rest to the signature Typer reads and hands their values over as `flags` (None where left out).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import UnionType
from typing import Any, Union, get_args, get_origin

import click
from pydantic import BaseModel

from catalog.errors import DraftsetError
from pipeline.cli.common import field_option
from pipeline.stage import StageConfig
from pipeline.stage.config import field_flag, field_help, field_metavar, flag_fields


def _kinds(annotation: Any) -> tuple[Any, ...]:
    """The members of a union (`int | None` → int, None); anything else is itself."""
    return get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)


def _is_int_list(annotation: Any) -> bool:
    return any(get_origin(k) is list and get_args(k) == (int,) for k in _kinds(annotation))


def int_list(flag: str, text: str | None) -> list[int] | None:
    """`2,16,29` → [2, 16, 29]; a one-line error naming the flag otherwise."""
    try:
        return [int(x) for x in text.split(",")] if text else None
    except ValueError:
        raise DraftsetError(
            f"{flag} {text!r} is not a comma-separated list of integers", hint=f"e.g. {flag} 2,16,29"
        ) from None


def _parameter(model: type[StageConfig], name: str) -> inspect.Parameter:
    annotation = model.model_fields[name].annotation
    flag, help_text = field_flag(model, name), field_help(model, name)
    shown = {"metavar": metavar} if (metavar := field_metavar(model, name)) else {}
    base = next(k for k in _kinds(annotation) if k is not type(None))
    if _is_int_list(annotation):  # typed as text on the command line: `--layers 2,16,29`
        kind, option = str | None, field_option(model, name, flag, help=help_text + " (comma separated)", **shown)
    elif inspect.isclass(base) and issubclass(base, BaseModel):  # text the model parses (`--shard 1/4`)
        kind, option = str | None, field_option(model, name, flag, help=help_text, **shown)
    else:  # Typer reads int, float, str, Path, bool (a flag), Literal (choices) and list[str] (repeated) as they are
        kind, option = base | None, field_option(model, name, flag, help=help_text, **shown)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)


def stage_options(model: type[StageConfig]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add one option per settable field of `model` that has a flag to a Typer command; the command gets them as
    `flags` (a repeatable option left out is None, as any other, not an empty list)."""
    names = flag_fields(model)

    def wrap(command: Callable[..., Any]) -> Callable[..., Any]:
        own = [p for p in inspect.signature(command).parameters.values() if p.name != "flags"]
        clash = sorted({p.name for p in own} & set(names))
        if clash:
            raise TypeError(f"{command.__name__} declares {clash} itself: they are {model.__name__}'s settings")

        @functools.wraps(command)
        def run(**kwargs: Any) -> Any:
            flags = {name: kwargs.pop(name, None) for name in names}
            for name in names:
                if _is_int_list(model.model_fields[name].annotation):
                    flags[name] = int_list(field_flag(model, name), flags[name])
                elif flags[name] in ([], ()):
                    flags[name] = None
            return command(**kwargs, flags=flags)

        run.__signature__ = inspect.Signature([*own, *(_parameter(model, n) for n in names)])  # type: ignore[attr-defined]
        return run

    return wrap


def option_flags(command: click.Command) -> dict[str, str]:
    """Field name → flag of a built Typer command's options (for the test that holds the entry points equal)."""
    return {p.name: p.opts[0] for p in command.params if p.param_type_name == "option" and p.name}
