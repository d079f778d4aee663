"""`Home`: the one owner of every path under a draftset home ($DRAFTSET_HOME).

Every stage, the CLI, agents and adapters ask `Home` where things live instead of spelling the layout
themselves, so the layout is written down exactly once (README "Layout of a home" describes it):

    catalog.duckdb                          the catalog (catalog/db.py)
    find-checkpoints.sqlite                 LangGraph checkpoints of find runs
    service.json                            the team service's URL and pid while it runs
    cache/hub/<owner>__<name>/<sha>.json    Hub responses per repo revision
    adapters/<owner>__<name>.yaml           the reviewable copy of each adapter spec
    data/normalized/<owner>__<name>/        ingest output (part-*.parquet)
    data/dedup/                             dedup run files
    data/mix/<MIX>/                         mix output
    data/regen/<MIX>/                       regenerate output (shard-I-of-N/ when split over workers)
    data/build/<MIX>/                       build output (input_ids + loss masks)
    reports/<NAME>/                         dataset reports
    models/toy-target/                      the embedded toy target
    captures/<NAME>/, drafts/<NAME>/        capture and train outputs
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from catalog.errors import DraftsetError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")

CATALOG_FILENAME = "catalog.duckdb"
FIND_CHECKPOINTS = "find-checkpoints.sqlite"


def dataset_dirname(repo_id: str) -> str:
    """`owner/name` → `owner__name` (one folder level, reversible); refuses anything else."""
    owner, sep, name = repo_id.partition("/")
    if not sep or not _NAME.match(owner) or not _NAME.match(name):
        raise DraftsetError(f"not a dataset repo id: {repo_id!r}", hint="use the form owner/name")
    return flat_repo_name(repo_id)


def flat_repo_name(repo_id: str) -> str:
    """`owner/name` → `owner__name` without validation (for ids a validated spec or the Hub already gave)."""
    return repo_id.replace("/", "__")


def repo_from_dirname(dirname: str) -> str:
    owner, _, name = dirname.partition("__")
    return f"{owner}/{name}"


def checked_name(name: str, what: str) -> str:
    """A mix/report name becomes a folder: refuse anything that could escape it."""
    if not _NAME.match(name):
        raise DraftsetError(
            f"invalid {what} name {name!r}", hint="use letters, digits, '.', '_' or '-' (at most 100 characters)"
        )
    return name


@dataclass(frozen=True)
class Home:
    """Paths of one draftset home. Pure: building a path never touches the disk."""

    root: Path

    def __init__(self, root: Path | str | Home) -> None:
        object.__setattr__(self, "root", Path(root.root if isinstance(root, Home) else root))

    # -- catalog and agents ------------------------------------------------------------------
    @property
    def catalog_file(self) -> Path:
        return self.root / CATALOG_FILENAME

    @property
    def sql_snapshots(self) -> Path:
        """Copies of the catalog the service's SQL console reads in its capped children (catalog/sql_snapshot.py)."""
        return self.root / ".sql-snapshots"

    @property
    def find_checkpoints(self) -> Path:
        return self.root / FIND_CHECKPOINTS

    @property
    def service_file(self) -> Path:
        """While `draftset serve` owns the catalog: its URL and pid (catalog/owner.py)."""
        return self.root / "service.json"

    @property
    def hub_cache(self) -> Path:
        return self.root / "cache" / "hub"

    @property
    def hf_cache(self) -> Path:
        """HF_HOME for the demo's `datasets`/`huggingface_hub` downloads."""
        return self.root / "hf-cache"

    def adapter_yaml(self, repo_id: str) -> Path:
        return self.root / "adapters" / (flat_repo_name(repo_id) + ".yaml")

    # -- data stages -------------------------------------------------------------------------
    @property
    def normalized_root(self) -> Path:
        return self.root / "data" / "normalized"

    def normalized(self, repo_id: str) -> Path:
        return self.normalized_root / dataset_dirname(repo_id)

    def normalized_repos(self) -> list[str]:
        """Repos that have at least one finished normalized shard."""
        root = self.normalized_root
        if not root.is_dir():
            return []
        return sorted(repo_from_dirname(d.name) for d in root.iterdir() if d.is_dir() and any(d.glob("part-*.parquet")))

    @property
    def dedup(self) -> Path:
        return self.root / "data" / "dedup"

    def mix(self, name: str) -> Path:
        return self.root / "data" / "mix" / checked_name(name, "mix")

    @property
    def regen_root(self) -> Path:
        return self.root / "data" / "regen"

    def regen(self, mix: str) -> Path:
        return self.regen_root / checked_name(mix, "mix")  # never a folder outside data/regen/

    def build(self, mix: str) -> Path:
        return self.kind_root("builds") / checked_name(mix, "mix")

    def report(self, name: str) -> Path:
        return self.root / "reports" / checked_name(name, "report")

    # -- models ------------------------------------------------------------------------------
    @property
    def toy_target(self) -> Path:
        return self.root / "models" / "toy-target"

    def kind_root(self, kind: str) -> Path:
        """`builds`, `captures` or `drafts`: where the named outputs of build, capture and train live."""
        roots = {
            "builds": self.root / "data" / "build",
            "captures": self.root / "captures",
            "drafts": self.root / "drafts",
        }
        if kind not in roots:
            raise ValueError(f"no named outputs of kind {kind!r} in a home")
        return roots[kind]

    def capture(self, name: str) -> Path:
        return self.kind_root("captures") / name

    def draft(self, name: str) -> Path:
        return self.kind_root("drafts") / name
