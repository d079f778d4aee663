"""The `draftset` command. Each area registers its commands from its own module.

pipeline's own modules are imported here; the floors above pipeline (eval) are found through the
`draftset.commands` entry-point group declared in pyproject.toml, so no import runs back up.
"""

from __future__ import annotations

import errno
import os
import sys
from importlib.metadata import entry_points

import typer

# typer 0.29 ships its own copy of click and raises these classes, not the `click` package's.
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.exceptions import Abort

from catalog.errors import DraftsetError
from pipeline.cli import (
    adapters_cmd,
    data_cmd,
    draft_cmd,
    find_cmd,
    flags_cmd,
    hub_cmd,
    model_cmd,
    regen_cmd,
    serve_cmd,
    sql_cmd,
)
from pipeline.cli.common import err_console, safe
from pipeline.cli.team import guard_local_only

app = typer.Typer(
    name="draftset",
    help="Find, vet and prepare training data for EAGLE-3 draft models of a large target model.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"draftset {version('draftset')}")
        raise typer.Exit()


@app.callback()
def _root(
    _version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    ),
) -> None:
    # Also keeps a lone command a subcommand (typer collapses single-command apps).
    pass


COMMAND_GROUP = "draftset.commands"


def _register_all(target: typer.Typer) -> None:
    # Registration order; `--help` lists plain commands first, then the groups (hub, adapters, model, check).
    for module in (
        hub_cmd,
        find_cmd,
        sql_cmd,
        adapters_cmd,
        flags_cmd,
        data_cmd,
        regen_cmd,
        model_cmd,
        draft_cmd,
        serve_cmd,
    ):
        module.register(target)
    # Then every installed package's commands (eval: report, check), in entry-point name order.
    for entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda e: e.name):
        entry.load()(target)


_register_all(app)
guard_local_only(app)  # team mode: the local-only commands refuse first (pipeline/cli/team.py)


# OS errors a user can fix themselves; anything else is a bug and keeps its traceback.
_OS_HINTS = {
    errno.ENOSPC: "free disk space (or point DRAFTSET_HOME at a bigger disk), then re-run: stages resume by id",
    errno.EDQUOT: "free space within your quota, then re-run: stages resume by id",
    errno.EACCES: "check the permissions of that path, or set DRAFTSET_HOME to a folder you can write",
    errno.EROFS: "set DRAFTSET_HOME to a writable file system",
}


def _fail(message: str, hint: str | None, code: int = 1) -> None:
    # Messages quote Hub answers, card text and file names: printed literally, secrets redacted.
    err_console.print(f"[bold red]error:[/] {safe(message)}", highlight=False)
    if hint:
        err_console.print(f"[yellow]next:[/] {safe(hint)}", highlight=False)
    sys.exit(code)


# The same conditions as libraries word them when they do not raise an OSError (DuckDB's IOException,
# SQLite's OperationalError from find's checkpoints, pyarrow's ArrowIOError...).
_OS_TEXTS = {
    "no space left on device": errno.ENOSPC,
    "database or disk is full": errno.ENOSPC,
    "disk quota exceeded": errno.EDQUOT,
    "permission denied": errno.EACCES,
    "read-only file system": errno.EROFS,
}


def _causes(exc: BaseException) -> list[BaseException]:
    """exc, its causes and contexts, and the members of exception groups (TaskGroup, LangGraph)."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo and len(seen) < 50:
        item = todo.pop(0)
        if item is None or any(item is s for s in seen):
            continue
        seen.append(item)
        todo += [item.__cause__, item.__context__, *getattr(item, "exceptions", ())]
    return seen


def os_failure(exc: BaseException) -> tuple[str, str] | None:
    """(one-line message, hint) when `exc` is, or was caused by, disk-full/quota/permission; else None."""
    for item in _causes(exc):
        if isinstance(item, OSError) and item.errno in _OS_HINTS:
            where = f": {item.filename}" if item.filename else ""
            return f"{item.strerror or os.strerror(item.errno)}{where}", _OS_HINTS[item.errno]
        text = str(item).lower()
        for needle, code in _OS_TEXTS.items():
            if needle in text:
                first = str(item).strip().splitlines()[0][:300]
                return f"{os.strerror(code)} ({type(item).__name__}: {first})", _OS_HINTS[code]
    return None


def _usage(exc: UsageError) -> None:
    """click's and typer's usage errors in the same one-line form as every other error (exit 2, as click's)."""
    if isinstance(exc, NoArgsIsHelpError):  # `draftset` or `draftset adapters` alone: the help is the answer
        exc.show()
        sys.exit(exc.exit_code)
    where = exc.ctx.command_path if exc.ctx is not None else "draftset"
    err_console.print(f"[bold red]error:[/] {safe(exc.format_message())}", highlight=False)
    err_console.print(f"[yellow]next:[/] {safe(where)} --help", highlight=False)
    sys.exit(exc.exit_code)


def _quiet_progress_when_piped() -> None:
    # huggingface_hub and datasets draw tqdm bars on stderr; piped or logged, they are noise between lines.
    if not sys.stderr.isatty():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


def main() -> None:
    """Entry point: user-facing errors become one red line plus what to do next (exit 1)."""
    _quiet_progress_when_piped()
    try:
        code = app(prog_name="draftset", standalone_mode=False)  # errors are ours to print, in one format
    except UsageError as exc:
        _usage(exc)
    except Abort:  # EOF at a prompt
        err_console.print("[bold red]error:[/] aborted", highlight=False)
        sys.exit(1)
    except DraftsetError as exc:
        # never a `next:` line without its error line; Ctrl-C's own error (Interrupted) exits 130, as the shell's does
        _fail(str(exc) or type(exc).__name__, exc.hint, getattr(exc, "exit_code", 1))
    except BrokenPipeError:  # `draftset sql ... | head`: the reader left; nothing to report
        sys.stderr.close()
        sys.exit(0)
    except Exception as exc:
        found = os_failure(exc)  # disk full, quota, permissions: one line for every command
        if found is None:
            raise  # anything else is a bug and keeps its traceback
        _fail(*found)
    if code == 130:  # typer turns Ctrl-C into exit 130; say so rather than vanish
        err_console.print("[bold red]error:[/] interrupted (Ctrl-C)", highlight=False)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
