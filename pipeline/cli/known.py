"""The names a flag may take, read from where they live, and the check that a given name is one of them.

Every command that takes a name (a dataset, a plan, a mix, a category, a find run, a build...) calls
one of these before any work starts, so a typo is one line with a did-you-mean (catalog.names) and
never an empty result with exit 0.
"""

from __future__ import annotations

from collections.abc import Iterable

from catalog.home import Home
from catalog.names import require_known
from catalog.untrusted import command
from pipeline.cli.common import catalog, settings


def _column(sql: str) -> list[str]:
    cat = catalog()
    return [str(next(iter(r.values()))) for r in cat.query(sql)] if cat.path.exists() else []


def adapter_repos() -> list[str]:
    return _column("SELECT repo_id FROM adapters")


def plans() -> list[str]:
    return _column("SELECT plan_id FROM plans")


def find_runs() -> list[str]:
    return _column("SELECT run_id FROM search_runs")


def categories() -> list[str]:
    """The find categories, the default, and any category an adapter was given by hand."""
    from agents.categories import BY_KEY

    return sorted({*BY_KEY, "general", *_column("SELECT DISTINCT category FROM candidates WHERE category IS NOT NULL")})


def mixes(kinds: tuple[str, ...] = ("mix",)) -> list[str]:
    """Mix names under data/mix (and data/regen with kinds=("mix", "regen")); staging folders start with '.'."""
    roots = [Home(settings().home).root / "data" / kind for kind in kinds]
    return sorted({d.name for r in roots if r.is_dir() for d in r.iterdir() if d.is_dir() and d.name[0] != "."})


def check_repos(repos: Iterable[str], known: list[str], what: str, flag: str, hint: str) -> list[str]:
    """Each of `repos` must be in `known`; the first that is not is the error."""
    return [require_known(what, r, known, where=flag, hint=hint) for r in dict.fromkeys(repos)]


def check_plan(plan_id: str | None) -> None:
    if plan_id is not None:
        require_known("plan", plan_id, plans(), where="--plan", hint='draftset find "<domain>" makes a plan')


def check_mix(name: str, kinds: tuple[str, ...] = ("mix",)) -> None:
    Home(settings().home).mix(name)  # a name that would leave the data folder is refused as that, first
    require_known(
        "mix",
        name,
        mixes(kinds),
        where="MIX",
        hint="create it with: " + command("draftset", "mix", name) + " (after ingest)",
    )


def check_categories(names: Iterable[str], known: Iterable[str], flag: str) -> None:
    known = sorted(set(known))
    for name in names:
        require_known(
            "category", name, known, where=flag, hint="categories are those of the sources: draftset adapters list"
        )
