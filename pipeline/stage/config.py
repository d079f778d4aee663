"""A stage's settings: the strict config model, and its values from a file (`--config FILE` on every stage
command) under the flags given explicitly.

Defaults live once, on the stage's config model (its Field defaults). The order is: model default, then the
file, then every flag the user actually gave (a flag left out is None and shows the file's value through).
Every key of the file must be a field of the model that the command lets a person set; anything else is a
one-line error naming the key and the file, never a traceback and never silently ignored.

One declaration per setting: a field made with `setting(default, help)` is settable (a flag of the CLI and of
`python -m pipeline.<stage>`, a --config key, a key of the service's settings), with its help text; a field made
with `derived(why=...)` is the stage's to fill (its input and output folders, what the approved spec says).
Both entry points build their options from that (pipeline/cli/stage_options.py, `add_field_arguments` below),
so they cannot drift; tests/pipeline/stage/test_setting_declarations.py holds them equal for every stage.
"""

from __future__ import annotations

import argparse
import json
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, cast, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import PydanticUndefined, to_jsonable_python

from catalog.errors import DraftsetError


class StageConfig(BaseModel):
    """Base for every stage's config: unknown keys and wrong types fail at load."""

    model_config = ConfigDict(extra="forbid", strict=True)


def setting(
    default: Any = PydanticUndefined,
    help: str = "",
    *,
    flag: str | None = None,
    inherited: bool = False,
    file_only: bool = False,
    metavar: str | None = None,
    env: str | None = None,
    default_factory: Callable[[], Any] | None = None,
    **constraints: Any,
) -> Any:
    """A field a person sets: its default (or `default_factory`, for a mutable one), its help (shown by every
    entry point), its flag when not `--field-name` (`--model` for model_dir; `--on/--off` for a bool with two),
    and its Field constraints (ge=..., the range every entry checks). `inherited`: left out, the stage decides
    (build's thinking mode follows the regeneration's), so the model's default is not filled in. `file_only`: a
    --config key (and a service setting) with no flag, for a value too structured for one (regenerate's
    partitions). `metavar`: how --help writes the value (`I/N`). `env`: the settings variable that gives the
    value when neither a flag nor the file does (`DRAFTSET_TARGET_ENDPOINTS`); the caller reads it
    (`env_values`), so this module stays free of the environment."""
    extra: dict[str, Any] = {
        "settable": True,
        **({"flag": flag} if flag else {}),
        **({"inherited": True} if inherited else {}),
        **({"file_only": True} if file_only else {}),
        **({"metavar": metavar} if metavar else {}),
        **({"env": env} if env else {}),
    }
    if env:  # the help says where a left-out value comes from, in the words every entry point shows
        help = f"{help} (default: ${env})"
    if default_factory is not None:
        return Field(default_factory=default_factory, description=help, json_schema_extra=extra, **constraints)
    return Field(default, description=help, json_schema_extra=extra, **constraints)


def derived(default: Any = PydanticUndefined, *, why: str) -> Any:
    """A field the stage fills (from its arguments, upstream manifests or the approved spec): no flag, no
    --config key; `why` says where it comes from."""
    return Field(default, description=why, json_schema_extra={"settable": False})


def _extra(model: type[BaseModel], name: str) -> dict[str, Any]:
    extra = model.model_fields[name].json_schema_extra
    return extra if isinstance(extra, dict) else {}


def declares_settings(model: type[BaseModel]) -> bool:
    """Whether the model declares each field as a `setting` or `derived` (a model not yet moved to them
    keeps its entry points' own lists)."""
    return all("settable" in _extra(model, name) for name in model.model_fields)


def settable_fields(model: type[BaseModel]) -> list[str]:
    """The fields a person may set, in declaration order."""
    return [name for name in model.model_fields if _extra(model, name).get("settable") is True]


def flag_fields(model: type[BaseModel]) -> list[str]:
    """The settable fields that have a flag (all but the `file_only` ones), in declaration order."""
    return [name for name in settable_fields(model) if not _extra(model, name).get("file_only")]


def field_metavar(model: type[BaseModel], name: str) -> str | None:
    metavar = _extra(model, name).get("metavar")
    return str(metavar) if metavar else None


def env_values(model: type[BaseModel], source: BaseModel) -> dict[str, Any]:
    """The settable fields declared with `env=VAR`, valued from `source`, a settings model whose fields read
    those variables (pipeline/settings.py; its validation_alias is the variable): what the environment (and
    .env) gives, to pass as `stage_settings(..., env=)`. A variable unset or empty gives nothing."""
    by_variable = {str(info.validation_alias): name for name, info in type(source).model_fields.items()}
    found: dict[str, Any] = {}
    for name in settable_fields(model):
        variable = _extra(model, name).get("env")
        if variable is None:
            continue
        if variable not in by_variable:
            raise TypeError(f"{model.__name__}.{name} names {variable}, which {type(source).__name__} does not read")
        value = getattr(source, by_variable[variable])
        if value not in (None, "", []):
            found[name] = value
    return found


def inherited_fields(model: type[BaseModel]) -> list[str]:
    return [name for name in settable_fields(model) if _extra(model, name).get("inherited") is True]


def field_flag(model: type[BaseModel], name: str) -> str:
    return str(_extra(model, name).get("flag") or f"--{name.replace('_', '-')}")


def field_help(model: type[BaseModel], name: str) -> str:
    return model.model_fields[name].description or ""


def settings_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The settable fields as JSON schema properties (type, default, description): the hook a service route
    or page builds its stage options from."""
    props = model.model_json_schema(mode="validation").get("properties", {})
    return {name: props[name] for name in settable_fields(model) if name in props}


def read_config_file(path: Path) -> dict[str, Any]:
    """A mapping of fields from JSON (.json), TOML (.toml) or YAML (anything else)."""
    path = Path(path)
    try:
        text = path.read_text()
        if path.suffix == ".json":
            data = json.loads(text)
        elif path.suffix == ".toml":
            data = tomllib.loads(text)
        else:
            data = yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DraftsetError(f"cannot read config file {path}: {first}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise DraftsetError(f"config file {path} must hold a mapping of fields, not {type(data).__name__}")
    return data


def field_default(model: type[StageConfig], name: str) -> Any:
    """The model's default for one field (None for a required field)."""
    info = model.model_fields[name]
    return None if info.is_required() else info.get_default(call_default_factory=True)


def check_value(model: type[StageConfig], name: str, value: Any, where: str) -> Any:
    """One value against its field's type and constraints, strict as JSON is: "512" is not a number, but a
    path may be a string (a file holds no Path objects)."""
    info = model.model_fields[name]
    try:
        field_type = cast(Any, Annotated[info.annotation, info])  # the type with the Field's constraints
        as_json = json.dumps(to_jsonable_python(value, fallback=str))  # a Path or a nested model as a file holds it
        return TypeAdapter(field_type).validate_json(as_json, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        inner = [str(part) for part in first["loc"]]  # inside a structured value: `partitions.0.concurrency`
        shown = first["input"] if inner else value
        raise DraftsetError(
            f"{where}: invalid value {shown!r} for {'.'.join([name, *inner])}: {first['msg']}",
            hint=f"see the {name} option in the command's --help",
        ) from None


def stage_settings(
    model: type[StageConfig],
    path: Path | None,
    flags: Mapping[str, Any],
    *,
    settable: Iterable[str] | None = None,
    unset: Iterable[str] = (),
    env: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Model defaults < `env` (what the environment gives, `env_values`) < `path`'s values < the flags given
    (not None), over the `settable` fields (by default the ones the model declares settable).

    `unset`: fields whose absence means "let the stage decide" (e.g. build's thinking mode, inherited from the
    regeneration): they get no model default here."""
    settable = list(settable) if settable is not None else settable_fields(model)
    unset = [*unset, *inherited_fields(model)]
    data = read_config_file(path) if path is not None else {}
    for key in data:
        if key not in model.model_fields:
            raise DraftsetError(
                f"{path}: unknown key {key!r} (not a field of {model.__name__})",
                hint=f"the keys this command takes: {', '.join(settable)}",
            )
        if key not in settable:
            raise DraftsetError(
                f"{path}: key {key!r} is derived by the stage and cannot be set in a config file",
                hint=f"the keys this command takes: {', '.join(settable)}",
            )
    skip = set(unset)
    values = {k: field_default(model, k) for k in settable if k not in skip}
    values = {k: v for k, v in values.items() if v is not None or not model.model_fields[k].is_required()}
    for key, value in (env or {}).items():
        if key in settable:
            values[key] = check_value(model, key, value, f"${_extra(model, key).get('env', key)}")
    for key, value in data.items():
        values[key] = check_value(model, key, value, str(path))
    for key, value in flags.items():
        if value is not None:
            values[key] = check_value(model, key, value, f"--{key.replace('_', '-')}")
    return values


# -- `python -m pipeline.<stage>` entry points (argparse: GPU hosts need no Typer) ----------------------------


def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None


def add_field_arguments(
    parser: argparse.ArgumentParser,
    model: type[StageConfig],
    fields: Mapping[str, str | tuple[str, str]] | None = None,
) -> None:
    """One flag per field (`--batch-tokens` for batch_tokens, or the flag given as (flag, help)), typed from the
    model, default None so a --config file's value shows through; help names the model's default. Plus --config.
    Without `fields`: every field of a model that declares its settings and gives it a flag, as declared."""
    if fields is None:
        fields = {name: (field_flag(model, name), field_help(model, name)) for name in flag_fields(model)}
    for name, spec in fields.items():
        flag, help_text = spec if isinstance(spec, tuple) else (f"--{name.replace('_', '-')}", spec)
        info = model.model_fields[name]
        kinds = getattr(info.annotation, "__args__", None) or (info.annotation,)
        default = field_default(model, name)
        plain = default is not None and default is not False and name not in inherited_fields(model)
        shown = f" (default: {default})" if plain else ""  # an inherited one's help says where it comes from
        if bool in kinds:
            on, _, off = flag.partition("/")  # `--on/--off`: two flags, one setting
            parser.add_argument(on, dest=name, action="store_true", default=None, help=help_text)
            if off:
                parser.add_argument(off, dest=name, action="store_false", default=None, help=f"not {on}")
            continue
        kind: Any = str
        if get_origin(info.annotation) is Literal:
            parser.add_argument(
                flag, dest=name, choices=get_args(info.annotation), default=None, help=help_text + shown
            )
            continue
        metavar: dict[str, Any] = {"metavar": field_metavar(model, name)} if field_metavar(model, name) else {}
        if any(get_origin(k) is list and get_args(k) == (str,) for k in kinds):  # repeatable: --endpoint A --endpoint B
            parser.add_argument(flag, dest=name, action="append", default=None, help=help_text + shown, **metavar)
            continue
        if int in kinds:
            kind = int
        elif float in kinds:
            kind = float
        elif any(getattr(k, "__origin__", None) is list for k in kinds):
            kind = _int_list
        parser.add_argument(flag, dest=name, type=kind, default=None, help=help_text + shown, **metavar)
    parser.add_argument(
        "--config", type=Path, default=None, help="JSON, TOML or YAML file of these fields; flags given override it"
    )


def parsed_settings(
    args: argparse.Namespace,
    model: type[StageConfig],
    fields: Iterable[str] | None = None,
    unset: Iterable[str] = (),
    env: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The settings `add_field_arguments` flags and --config give, over `env` and the model's defaults (without
    `fields`: the model's settable fields)."""
    if fields is not None:
        names = list(fields)
        return stage_settings(model, args.config, {n: getattr(args, n) for n in names}, settable=names, unset=unset)
    given = {n: getattr(args, n) for n in flag_fields(model)}  # a file-only setting has no flag, only a key
    return stage_settings(model, args.config, given, unset=unset, env=env)
