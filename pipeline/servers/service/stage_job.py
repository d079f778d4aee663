"""What a stage job is, as data: its request body's base, its work and its declaration (stages.py runs them;
stage_kinds.py and eval declare them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.servers.service.jobs import Job

if TYPE_CHECKING:
    from pipeline.servers.service.context import Service


class StageBody(BaseModel):
    """Base of every stage job's request: unknown keys are refused; `settings` are the stage config's own
    fields (checked by the stage's model, as `--config FILE` is on the CLI)."""

    model_config = ConfigDict(extra="forbid")
    settings: dict[str, Any] = Field(default_factory=dict, max_length=40)


Work = Callable[[Job], dict[str, Any]]


@dataclass(frozen=True)
class StageJob:
    kind: str
    about: str  # one line for the stages page
    body: type[StageBody]
    prepare: Callable[[Service, Any], Work]  # (service, parsed body) -> the work; raises on a bad name or value
    resume_body: Callable[[Service, dict[str, Any]], dict[str, Any]] = lambda service, params: params
    settable: tuple[str, ...] = ()  # the stage config's fields `settings` may hold (shown on the page and API)
    # The body field naming what the job writes (a mix, a build...): two jobs on the same one at once would
    # write the same folder, so the second is refused while the first is queued or running. None: one at a time.
    target: str | None = None
