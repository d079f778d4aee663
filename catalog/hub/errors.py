"""Turn Hub failures into one clear DraftsetError naming the endpoint and the fix.

    with hub_errors(endpoint, repo_id="org/name"):
        HfApi(endpoint=endpoint).dataset_info("org/name")

    @hub_errors()          # endpoint defaults to HF_ENDPOINT as huggingface_hub read it
    def fetch(...): ...

On entry it probes the endpoint with one TCP connect: huggingface_hub retries a refused connection
for ~23 s (printing a warning per try) before failing, and a dead endpoint deserves an instant answer.
"""

from __future__ import annotations

import re
import socket
import sys
from collections.abc import Iterator
from contextlib import ContextDecorator

from catalog.errors import DraftsetError
from catalog.hub.probe import check_reachable, unreachable
from catalog.untrusted import shell_word


class HubRequestError(DraftsetError):
    """The Hub answered, but with a typed error (missing repo/revision/file, gated repo)."""


def default_endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _kind(err: BaseException) -> str | None:
    """What went wrong, from the exception types huggingface_hub and datasets raise."""
    from huggingface_hub import errors

    datasets_errors = sys.modules.get("datasets.exceptions")  # only if datasets is in use already
    if datasets_errors and isinstance(err, datasets_errors.DatasetNotFoundError):
        # datasets re-raises the Hub's typed errors `from None`: its message is all that is left.
        return "gated" if "gated" in str(err) else "revision" if "Revision" in str(err) else "repo"
    if isinstance(err, errors.GatedRepoError):
        return "gated"
    if isinstance(err, errors.RepositoryNotFoundError):
        return "repo"
    if isinstance(err, errors.RevisionNotFoundError):
        return "revision"
    if isinstance(err, errors.RemoteEntryNotFoundError):
        return "entry"
    if isinstance(err, errors.LocalEntryNotFoundError):  # the connection failed and the file is not cached
        return "unreachable"
    if isinstance(err, (ConnectionRefusedError, socket.gaierror)) or type(err).__name__ in (
        "ConnectError",
        "ConnectTimeout",
    ):
        return "unreachable"
    if isinstance(err, errors.HfHubHTTPError):
        return "http"
    return None


def translate(
    exc: BaseException, endpoint: str, repo_id: str | None = None, revision: str | None = None
) -> DraftsetError | None:
    """The DraftsetError for a Hub failure, or None when `exc` is not one."""
    for err in _chain(exc):
        if isinstance(err, DraftsetError):
            return err
        kind = _kind(err)
        if kind is None:
            continue
        repo = getattr(err, "repo_id", None) or repo_id or _repo_in_text(str(err))
        detail = _last_line(err)
        if kind == "gated":
            return HubRequestError(
                f"{repo} on {endpoint} is gated and the request carried no token",
                hint="set HF_TOKEN (the local Hub accepts any non-empty token; on "
                "huggingface.co accept the dataset's terms first)",
            )
        if kind == "repo":
            return HubRequestError(
                f"dataset {repo} not found on {endpoint}", hint="check the id with `draftset hub check --search NAME`"
            )
        if kind == "revision":
            pinned = f"the pinned revision {revision}" if revision else "the pinned revision"
            return HubRequestError(
                f"{pinned} of {repo} no longer exists on {endpoint} (the dataset changed since it was pinned)",
                hint=f"re-propose the adapter for the current revision: draftset adapters propose {shell_word(repo)}",
            )
        if kind == "entry":
            return HubRequestError(
                f"file not found in {repo} on {endpoint}: {detail}",
                hint=f"re-propose the adapter: draftset adapters propose {shell_word(repo)}",
            )
        if kind == "unreachable":
            return unreachable(endpoint, detail)
        status = status_of(err) or "an error"
        return HubRequestError(
            f"the Hub at {endpoint} answered {status} for {repo}: {detail}",
            hint="retry; if it persists, check the server log",
        )
    return None


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a failed Hub/viewer request, if it got an answer."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(exc: BaseException) -> bool:
    """A failure worth retrying: the connection broke or timed out, or the server answered 5xx."""
    import httpx

    if isinstance(exc, (httpx.TransportError, TimeoutError, ConnectionError)):
        return True
    status = status_of(exc)
    return status is not None and status >= 500


def _repo_in_text(text: str) -> str:
    """The dataset id quoted in a client message ('org/name' or a /datasets/org/name URL)."""
    found = re.search(r"datasets/([\w.-]+/[\w.-]+)", text) or re.search(r"'([\w.-]+/[\w.-]+)'", text)
    return found.group(1) if found else "(unnamed dataset)"


def _last_line(err: BaseException) -> str:
    lines = [line for line in str(err).splitlines() if line.strip()]
    return lines[-1][:200] if lines else type(err).__name__


class hub_errors(ContextDecorator):  # noqa: N801 - used like contextlib's lower-case managers
    def __init__(
        self,
        endpoint: str | None = None,
        *,
        repo_id: str | None = None,
        revision: str | None = None,
        probe: bool = True,
    ):
        self.endpoint, self.repo_id, self.revision, self.probe = endpoint, repo_id, revision, probe

    def __enter__(self) -> hub_errors:
        self.endpoint = self.endpoint or default_endpoint()
        if self.probe:
            check_reachable(self.endpoint)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is None or isinstance(exc, DraftsetError):
            return
        mapped = translate(exc, self.endpoint or default_endpoint(), self.repo_id, self.revision)
        if mapped is not None:
            raise mapped from exc
