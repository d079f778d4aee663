"""`HubClient`: the one way draftset reads a Hub (huggingface.co, a mirror, or the local Hub).

It probes the endpoint before the first call (a dead endpoint is one line at once, not ~23 s of client
retries) and turns every Hub failure into one `DraftsetError` naming the dataset and the fix
(`catalog.hub.errors.translate`). agents, adapters and ingest all come through here, so a gated repo or a
vanished revision reads the same whichever command met it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from catalog.hub.errors import default_endpoint, hub_errors
from catalog.hub.probe import check_reachable

if TYPE_CHECKING:  # huggingface_hub is imported on first use: `catalog` stays cheap to import
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import DatasetInfo


class HubClient:
    """Hub access for one endpoint and token.

    `token=None` lets huggingface_hub use the token saved on this machine; `token=False` sends none.
    """

    def __init__(self, endpoint: str | None = None, token: str | Literal[False] | None = None):
        self.endpoint = (endpoint or default_endpoint()).rstrip("/")
        self.token = token
        self._api: HfApi | None = None

    @property
    def api(self) -> HfApi:
        """The huggingface_hub client for this endpoint (for calls this class does not wrap)."""
        if self._api is None:
            from huggingface_hub import HfApi

            self._api = HfApi(endpoint=self.endpoint, token=self.token)
        return self._api

    def probe(self) -> None:
        """Raise HubUnreachable unless the endpoint accepts connections (remembered briefly)."""
        check_reachable(self.endpoint)

    def errors(self, repo_id: str | None = None, *, revision: str | None = None, probe: bool = True) -> hub_errors:
        """Context manager/decorator: Hub failures inside become one DraftsetError about `repo_id`."""
        return hub_errors(self.endpoint, repo_id=repo_id, revision=revision, probe=probe)

    def dataset_info(self, repo_id: str, revision: str | None = None) -> DatasetInfo:
        with self.errors(repo_id, revision=revision):
            return self.api.dataset_info(repo_id, revision=revision)

    def revision(self, repo_id: str) -> str:
        """The dataset's current revision (commit sha)."""
        sha = self.dataset_info(repo_id).sha
        if not sha:
            from catalog.hub.errors import HubRequestError

            raise HubRequestError(
                f"the Hub at {self.endpoint} gave no revision for {repo_id}",
                hint="retry; if it persists, check the server log",
            )
        return sha

    def download(self, repo_id: str, filename: str, revision: str) -> Path:
        """Local path of one file of a dataset at a pinned revision (cached by huggingface_hub)."""
        from huggingface_hub import hf_hub_download

        with self.errors(repo_id, revision=revision):
            return Path(
                hf_hub_download(
                    repo_id, filename, repo_type="dataset", revision=revision, endpoint=self.endpoint, token=self.token
                )
            )
