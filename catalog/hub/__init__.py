"""The one Hub client of draftset: endpoint probe, error translation, and `HubClient` for the calls."""

from catalog.hub.client import HubClient
from catalog.hub.errors import HubRequestError, default_endpoint, hub_errors, is_transient, status_of, translate
from catalog.hub.probe import START_LOCAL_HUB, HubUnreachable, check_reachable, unreachable

__all__ = [
    "HubClient",
    "HubRequestError",
    "HubUnreachable",
    "START_LOCAL_HUB",
    "check_reachable",
    "default_endpoint",
    "hub_errors",
    "is_transient",
    "status_of",
    "translate",
    "unreachable",
]
