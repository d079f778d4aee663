"""The ground floor: the DuckDB catalog (schema, migrations, the single writer API, read-only SQL), `Home`
(every path of a home), io (atomic writes, parquet shards), the error family and the one Hub client.

`Catalog` and `upsert` load duckdb lazily: GPU hosts run capture/train with `catalog.errors` alone
and no duckdb installed.
"""

from typing import TYPE_CHECKING, Any

from catalog.errors import CatalogBusy, CatalogReadOnly, DraftsetError, StageFailed, ZeroOutput
from catalog.home import Home

if TYPE_CHECKING:  # the type checker sees the real names; at run time they load lazily (below)
    from catalog.db import Catalog, upsert

__all__ = ["Catalog", "upsert", "CatalogBusy", "CatalogReadOnly", "DraftsetError", "Home", "StageFailed", "ZeroOutput"]


def __getattr__(name: str) -> Any:
    if name in ("Catalog", "upsert"):
        from catalog import db

        return getattr(db, name)
    raise AttributeError(f"module 'catalog' has no attribute {name!r}")
