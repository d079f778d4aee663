"""`python -m pipeline.regenerate MIX --home DIR [--endpoint URL ...] [--config FILE]`: regenerate without the CLI
(a host with the data stages' install but not Typer). Its flags are RegenConfig's settings, as `draftset
regenerate` offers them; a flag given beats the --config file, which beats the default. Like every stage's own
entry point it takes no environment (DRAFTSET_HOME, DRAFTSET_TARGET_*: the CLI's and the service's): what it does
is all on its command line or in its file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from catalog.errors import DraftsetError
from pipeline.regenerate.config import RegenConfig
from pipeline.stage import add_field_arguments
from pipeline.stage.config import flag_fields


def parser() -> argparse.ArgumentParser:
    """The entry point's arguments (the settings test reads them without running anything)."""
    p = argparse.ArgumentParser(prog="python -m pipeline.regenerate", description=__doc__)
    p.add_argument("mix", help="Mix name: reads data/mix/MIX/, writes data/regen/MIX/ under --home.")
    p.add_argument("--home", type=Path, default=Path("draftset-home"), help="the draftset home (default: %(default)s)")
    add_field_arguments(p, RegenConfig)  # every setting RegenConfig declares, as it declares it
    return p


def main() -> None:
    from catalog import Catalog
    from pipeline.regenerate.config import load_config
    from pipeline.regenerate.run import run_regenerate

    args = parser().parse_args()
    given = {name: getattr(args, name) for name in flag_fields(RegenConfig)}
    if not args.endpoints and args.config is None:  # load_config's hint names the CLI's environment: not read here
        raise DraftsetError("no target endpoint given", hint="pass --endpoint http://HOST:PORT or a --config FILE")
    config = load_config(args.config, mix=args.mix, **given)
    result = run_regenerate(config, args.home, Catalog(args.home), show_progress=False)
    t = result.totals
    print(
        f"run {result.run_id}: {t['results']} results, {t['errors']} errors, {t['skipped']} skipped -> {result.out_dir}"
    )


if __name__ == "__main__":
    try:
        main()
    except DraftsetError as exc:  # one line and what to do next, as the CLI prints it; never a traceback
        print(f"error: {exc}" + (f"\nnext: {exc.hint}" if exc.hint else ""), file=sys.stderr)
        sys.exit(getattr(exc, "exit_code", 1))  # Ctrl-C (Interrupted): 130, as the CLI
