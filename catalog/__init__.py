"""DuckDB catalog: schema, migrations, the single writer API and read-only SQL access."""

from catalog.db import Catalog, upsert
from catalog.errors import CatalogBusy, CatalogReadOnly, DraftsetError, ZeroOutput

__all__ = ["Catalog", "upsert", "CatalogBusy", "CatalogReadOnly", "DraftsetError", "ZeroOutput"]
