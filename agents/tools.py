"""Hub search/inspect tools for the category agents: budget counting and a per-revision disk cache.

The Hub is reached only through `huggingface_hub` (search, cards) and the dataset-viewer API
(features, sizes, first rows) at the configured viewer base. A repo's inspection is cached under
`$DRAFTSET_HOME/cache/hub/<owner>__<name>/<sha>.json`: the sha is the repo revision, so an unchanged
repo is never fetched twice, and a changed one is refetched automatically. Within one run (one HubTools)
a repo revision is inspected once whatever the disk cache holds or is allowed to hold: the agents that
meet it later, a gated or viewer-less repo included, get the first answer (counted as cache hits).
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
from huggingface_hub.errors import HfHubHTTPError

from adapters.read.card_configs import evaluation_names
from agents import inspection
from agents.configuration import FindConfig
from agents.state import AgentCounts
from catalog.hub import HubClient, is_transient, status_of
from catalog.limits import MAX_CARD_BYTES, LimitExceeded
from catalog.untrusted import check_card, load_card_yaml, split_card

T = TypeVar("T")
MAX_LISTED_DESCRIPTION = 600  # the listing's card text is read to rank hits, never stored whole


class BudgetExceeded(Exception):
    """An agent used up one of its budgets; it stops searching and reports what it has."""

    def __init__(self, kind: str):
        super().__init__(f"budget exhausted: {kind}")
        self.kind = kind


class HubUnavailable(Exception):
    """A transient Hub failure (5xx, connection, timeout): the agent is retried, then recorded as failed."""


class HubTools:
    """Shared by all the agents of one process; thread-safe counters keyed by category."""

    def __init__(
        self,
        endpoint: str,
        viewer_base: str,
        config: FindConfig,
        token: str | None = None,
        cache_dir: Path | None = None,
    ):
        self.endpoint = endpoint.rstrip("/")
        self.viewer_base = viewer_base.rstrip("/")
        self.config = config
        # The token goes only to HfApi and the Authorization header, never to logs or progress events.
        self.hub = HubClient(self.endpoint, token or False)
        self.api = self.hub.api
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(timeout=30.0, headers=headers)
        self.cache_dir = cache_dir if config.cache else None
        self.meters: dict[str, AgentCounts] = {}
        self._lock = threading.Lock()
        # Agents often meet the same repo or query at once: one fetches, the others wait and reuse it.
        self._repo_locks: dict[str, threading.Lock] = {}
        self._searches: dict[tuple[str | None, str | None], list[dict[str, Any]]] = {}
        self._inspected: dict[tuple[str, str | None], dict[str, Any]] = {}  # this run's answers, per revision

    def meter(self, category: str) -> AgentCounts:
        with self._lock:
            return self.meters.setdefault(category, AgentCounts(category=category))

    @property
    def requests(self) -> dict[str, int]:
        """Real HTTP requests per category made through this object (tests, benchmarks, --resume checks)."""
        with self._lock:
            return {category: meter.hub_calls for category, meter in self.meters.items()}

    def close(self) -> None:
        self.http.close()

    # -- counting ----------------------------------------------------------------------------
    def _spend(self, category: str) -> None:
        meter = self.meter(category)
        if meter.hub_calls >= self.config.budget.hub_calls:
            raise BudgetExceeded("hub_calls")
        meter.hub_calls += 1

    def _guard(self, what: str, call: Callable[[], T]) -> T:
        try:
            return call()
        except Exception as exc:
            if is_transient(exc):
                raise HubUnavailable(f"{what}: {type(exc).__name__}: {exc}") from exc
            raise

    # -- search ------------------------------------------------------------------------------
    def search(self, category: str, query: str | None = None, tag: str | None = None) -> list[dict[str, Any]]:
        """One `list_datasets` call (sorted by downloads, full=True so card YAML comes along);
        the same query from another agent in this run is answered from memory."""
        if not self.config.cache:
            self._spend(category)
            return self._list(query, tag)
        with self._lock_for(f"search|{query}|{tag}"):
            if (query, tag) in self._searches:
                self.meter(category).cache_hits += 1
                return self._searches[(query, tag)]
            self._spend(category)
            self._searches[(query, tag)] = self._list(query, tag)
            return self._searches[(query, tag)]

    def _list(self, query: str | None, tag: str | None) -> list[dict[str, Any]]:
        infos = self._guard(
            f"search {query or tag!r}",
            lambda: list(
                self.api.list_datasets(
                    search=query, filter=tag, sort="downloads", limit=self.config.search_limit, full=True
                )
            ),
        )
        return [
            {
                "repo_id": i.id,
                "sha": i.sha,
                "downloads": i.downloads or 0,
                "likes": i.likes or 0,
                "gated": bool(i.gated),
                "tags": list(i.tags or []),
                "card_data": i.card_data.to_dict() if i.card_data is not None else {},
                "description": " ".join(str(i.description or "").split())[:MAX_LISTED_DESCRIPTION],
            }
            for i in infos
        ]

    # -- inspect -----------------------------------------------------------------------------
    def inspect(self, category: str, hit: dict[str, Any]) -> dict[str, Any]:
        """Card text, features, sizes and a few first rows of one repo revision (cached)."""
        key = (hit["repo_id"], hit.get("sha"))
        path = self._cache_path(*key)
        with self._lock_for(f"repo|{hit['repo_id']}"):
            if key in self._inspected:  # a copy: one agent's use of the facts never reaches another's
                self.meter(category).cache_hits += 1
                return copy.deepcopy(self._inspected[key])
            if path is not None and path.exists():
                self.meter(category).cache_hits += 1
                facts = json.loads(path.read_text())
            else:
                facts = self._fetch(category, hit, path)
            facts.pop("content", None)  # computed by this probe, never taken from a cache file
            if self.config.content_relevance:
                inspection.content_of(facts)  # once per revision and run: the copies agents get carry it
            self._inspected[key] = facts
            return facts

    def _lock_for(self, key: str) -> threading.Lock:
        with self._lock:
            return self._repo_locks.setdefault(key, threading.Lock())

    def _fetch(self, category: str, hit: dict[str, Any], path: Path | None) -> dict[str, Any]:
        facts: dict[str, Any] = {"card_text": "", "card_error": None, "access": "ok", "configs": []}
        self._read_card(category, hit, facts)
        self._read_viewer(category, hit["repo_id"], facts)
        if path is not None and facts["access"] == "ok":
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(facts, default=str))
            tmp.replace(path)  # atomic: a concurrent agent reads either nothing or the whole file
        return facts

    def _cache_path(self, repo_id: str, sha: str | None) -> Path | None:
        if self.cache_dir is None or not sha:
            return None
        return self.cache_dir / repo_id.replace("/", "__") / f"{sha}.json"

    def _read_card(self, category: str, hit: dict[str, Any], facts: dict[str, Any]) -> None:
        self._spend(category)
        try:
            local = self._guard(
                "card",
                lambda: self.api.hf_hub_download(
                    hit["repo_id"], "README.md", repo_type="dataset", revision=hit.get("sha")
                ),
            )
        except HfHubHTTPError as exc:  # gated, missing card: a fact about the repo, not an agent failure
            if status_of(exc) in (401, 403):
                facts["access"] = "denied"
            else:
                facts["card_error"] = f"card unavailable (HTTP {status_of(exc)})"
            return
        with open(local, "rb") as fh:  # bounded: a card is metadata
            raw = fh.read(MAX_CARD_BYTES + 1)
        front, facts["card_text"] = split_card(raw[:MAX_CARD_BYTES].decode("utf-8-sig", errors="replace"))
        try:  # under the card limits (a YAML alias bomb must not expand here), not RepoCard's safe_load
            check_card(raw, "card")
            if front is not None:
                load_card_yaml(front)
        except LimitExceeded as exc:
            facts["card_error"] = f"card refused: {exc.reason}"
        except Exception as exc:  # bad YAML front matter: keep the body, flag the card
            facts["card_error"] = f"bad card metadata: {type(exc).__name__}"

    def _viewer(self, category: str, route: str, **params: str) -> dict[str, Any] | None:
        self._spend(category)
        resp = self._guard(f"viewer {route}", lambda: self.http.get(f"{self.viewer_base}/{route}", params=params))
        if resp.status_code >= 500:
            raise HubUnavailable(f"viewer {route} for {params.get('dataset')}: HTTP {resp.status_code}")
        if resp.status_code != 200:
            return None
        return resp.json()

    def _read_viewer(self, category: str, repo_id: str, facts: dict[str, Any]) -> None:
        info = self._viewer(category, "info", dataset=repo_id)
        if info is None:
            facts["access"] = "denied" if facts["access"] == "denied" else "no_viewer"
            return
        for config, meta in (info.get("dataset_info") or {}).items():
            for split, s in (meta.get("splits") or {}).items():
                facts["configs"].append(
                    {
                        "config": config,
                        "split": split,
                        "num_rows": s.get("num_examples"),
                        "num_bytes": s.get("num_bytes"),
                        "features": meta.get("features") or {},
                        "rows": [],
                    }
                )
        if not facts["configs"]:
            return
        names = list(dict.fromkeys(c["config"] for c in facts["configs"]))
        facts["evaluation_configs"] = evaluation_names(names, facts["card_text"]) if len(names) > 1 else {}
        first = _preferred(facts["configs"], set(facts["evaluation_configs"]))
        rows = self._viewer(category, "first-rows", dataset=repo_id, config=first["config"], split=first["split"])
        if rows is not None:
            first["rows"] = [r.get("row", {}) for r in rows.get("rows", [])][:10]
            if rows.get("features"):
                first["features"] = {f["name"]: f["type"] for f in rows["features"]}


def _preferred(configs: list[dict[str, Any]], evaluation: set[str]) -> dict[str, Any]:
    """The split to sample: a train split of the first config the card does not call an evaluation set."""
    trainable = [c for c in configs if c["config"] not in evaluation] or configs
    for c in trainable:
        if "train" in c["split"]:
            return c
    return trainable[0]
