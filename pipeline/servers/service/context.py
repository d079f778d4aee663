"""What every request handler and job of the service reaches: settings, the catalog it owns, auth, jobs, cache.

Its own module so that the routes (api.py, pages.py) and the jobs (work.py) can name it without importing the
app that includes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from catalog.db import Catalog
from pipeline.servers.service.auth import Auth
from pipeline.servers.service.cache import Cache
from pipeline.servers.service.jobs import Jobs
from pipeline.servers.service.previewgate import PreviewGate
from pipeline.servers.service.ratelimit import RateLimits
from pipeline.servers.service.sqlgate import SqlGate
from pipeline.settings import Settings


@dataclass
class Service:
    """Everything a request handler needs; one per app."""

    settings: Settings
    catalog: Catalog
    auth: Auth
    jobs: Jobs
    cache: Cache
    sql: SqlGate
    rates: RateLimits = field(default_factory=RateLimits)
    previews: PreviewGate = field(default_factory=PreviewGate)  # row previews' own threads and bound

    @property
    def hf_token(self) -> str | None:
        return self.settings.hf_token.get_secret_value() if self.settings.hf_token else None
