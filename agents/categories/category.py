"""One search agent's brief, declared once: what its category's data is, how the Hub is searched for it, what
its sampled rows must show and which domain words favour it.

Every per-category fact lives on the declaration (agents/categories/briefs/<key>.py), never in a side table
keyed by category, so a new category cannot be half-registered: a missing content-evidence entry is a
validation error when the brief is declared, not a KeyError (or a silent "no content kinds") in the middle of
a find run.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agents.categories.kinds import KIND_NAMES

SUBJECTS = ("software",)  # agents/topics.py's SOFTWARE: the one subject the relevance check can count rows of


class Category(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="the module name under briefs/; the category's id")
    title: str
    intent: str
    seed_queries: tuple[str, ...] = Field(min_length=1, description="short terms: the Hub's search matches ids")
    tag_filters: tuple[str, ...] = ()
    keywords: tuple[str, ...] = Field(min_length=1)
    base_weight: float = Field(default=0.5, gt=0)
    # What the category's rows must show (agents/content.py kinds): any one kind in enough sampled rows
    # confirms it; () is a deliberate "judged another way" (`native`: by the model names the rows carry).
    evidence: tuple[str, ...]
    # The subject rows may be about to keep a candidate whose rows lack the evidence kinds (a bug-fix answered
    # in prose); None: the category's data may be about anything.
    subject: str | None = None
    # Domain word → extra weight for this category (policy, not data: "agentic coding" favours trajectories).
    affinity: dict[str, float] = Field(default_factory=dict)

    @field_validator("evidence")
    @classmethod
    def _known_kinds(cls, kinds: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [k for k in kinds if k not in KIND_NAMES]
        if unknown:
            raise ValueError(f"unknown content kinds {unknown}; known: {', '.join(KIND_NAMES)}")
        return kinds

    @field_validator("subject")
    @classmethod
    def _known_subject(cls, subject: str | None) -> str | None:
        if subject is not None and subject not in SUBJECTS:
            raise ValueError(f"unknown subject {subject!r}; known: {', '.join(SUBJECTS)}")
        return subject
