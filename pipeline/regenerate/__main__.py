"""`python -m pipeline.regenerate MIX [--endpoint URL ...] [--config FILE]`: regenerate without the CLI (a
host with the data stages' install but not Typer). Its flags are RegenConfig's settings, as `draftset
regenerate` offers them; a flag given beats the --config file, which beats DRAFTSET_TARGET_*, which beats the
default."""

from __future__ import annotations

import argparse
import sys

from catalog.errors import DraftsetError
from pipeline.regenerate.config import RegenConfig
from pipeline.stage import add_field_arguments
from pipeline.stage.config import env_values, flag_fields


def parser() -> argparse.ArgumentParser:
    """The entry point's arguments (the settings test reads them without running anything)."""
    p = argparse.ArgumentParser(prog="python -m pipeline.regenerate", description=__doc__)
    p.add_argument("mix", help="Mix name: reads data/mix/MIX/, writes data/regen/MIX/ under DRAFTSET_HOME.")
    add_field_arguments(p, RegenConfig)  # every setting RegenConfig declares, as it declares it
    return p


def main() -> None:
    from catalog import Catalog
    from pipeline.regenerate.config import load_config
    from pipeline.regenerate.run import run_regenerate
    from pipeline.settings import settings

    args = parser().parse_args()
    env = env_values(RegenConfig, settings())
    given = {name: getattr(args, name) for name in flag_fields(RegenConfig)}
    config = load_config(args.config, mix=args.mix, env=env, **given)
    result = run_regenerate(config, settings().home, Catalog(settings().home), show_progress=False)
    t = result.totals
    print(
        f"run {result.run_id}: {t['results']} results, {t['errors']} errors, {t['skipped']} skipped -> {result.out_dir}"
    )


if __name__ == "__main__":
    try:
        main()
    except DraftsetError as exc:  # one line and what to do next, as the CLI prints it; never a traceback
        sys.exit(f"error: {exc}" + (f"\nnext: {exc.hint}" if exc.hint else ""))
