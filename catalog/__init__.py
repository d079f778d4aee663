"""DuckDB catalog: schema, migrations, the single writer API and read-only SQL access.

`Catalog` and `upsert` load duckdb lazily: GPU hosts run capture/train with `catalog.errors` alone
and no duckdb installed.
"""

from catalog.errors import CatalogBusy, CatalogReadOnly, DraftsetError, ZeroOutput

__all__ = ["Catalog", "upsert", "CatalogBusy", "CatalogReadOnly", "DraftsetError", "ZeroOutput"]


def __getattr__(name: str):
    if name in ("Catalog", "upsert"):
        from catalog import db

        return getattr(db, name)
    raise AttributeError(f"module 'catalog' has no attribute {name!r}")
