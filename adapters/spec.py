"""AdapterSpec: the declarative description of how one dataset's rows become canonical records.

A spec is data, never code: it is validated strictly (unknown keys and wrong types fail at load),
round-trips through JSON and YAML, and is hashed. An approval binds to (spec_hash, revision).

`spec_hash()` covers everything that changes what `apply_row` produces (source, layout, paths, role
map, policies, mode, category). It excludes the review annotations (`reasons`, `needs_review`) and
the `golden` examples: re-pinning golden rows or rewording a reason does not change a single record,
so it must not make an approval stale.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from adapters.records import Mode, Role
from catalog.errors import DraftsetError

SPEC_VERSION = 2
# Role-map target: a canonical role; "tool_call" = an assistant turn whose text is the call itself
# (LLaMA-Factory / ShareGPT `function_call` turns); "drop" = a person decided this label's turns are left out.
RoleTarget = Literal["system", "user", "assistant", "tool", "tool_call", "drop"]
HASH_EXCLUDED = {"reasons", "needs_review", "golden"}
# Hashed (a person approves them) but they decide whether records pass, not what the records are.
JUDGING_FIELDS = ("max_bad_fraction", "min_yield")
# Fields added after v1 hash only when set: adding a field never makes an existing approval stale.
ADDED_FIELDS = {
    "train_flag_inverted",
    "tools_field",
    "tool_call_id_key",
    "tool_name_key",
    "text_tool_calls",
    "text_tool_results",
    "media",
    "preference",
    "label_field",
    "first_role",
    "transcript",
    "parts_key",
    "completion_path",
    "pair_keys",
    "zip_paths",
    "drop",
    "max_bad_fraction",
    "tools_in_system",
    "turn_columns",
    "candidates",
}
TextToolFormat = Literal["hermes", "functioncall", "function_tag", "invoke", "react", "json", "pycall"]


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SourceSpec(SpecModel):
    repo_id: str
    revision: str = Field(min_length=1, description="pinned dataset commit sha")
    config: str
    split: str
    data_files: list[str] = Field(min_length=1, description="repo-relative paths, read in this order")


class ColumnsSpec(SpecModel):
    """Single-turn column layouts: prompt columns → one user turn, response column → assistant turn."""

    prompt: list[str] = Field(min_length=1, description="joined with a blank line; empty ones skipped")
    response: str | None = None
    response_is_tool_calls: bool = Field(False, description="response holds a list of tool calls (xlam)")
    history: str | None = Field(None, description="column of earlier (user, assistant) exchanges (LLaMA-Factory)")
    continues: list[str] = Field(
        default_factory=list,
        description="prompt columns that continue the sentence of the column before them: joined with one space",
    )
    response_head: str | None = Field(
        None,
        description="column holding the answer's opening, which `response` continues mid-sentence: joined before "
        "it with one space (an answer split over two fields)",
    )

    @model_validator(mode="after")
    def _continues_prompt_columns(self) -> ColumnsSpec:
        stray = [c for c in self.continues if c not in self.prompt[1:]]
        if stray:
            raise ValueError(f"columns.continues names {stray}, which follow no other column of columns.prompt")
        head = self.response_head
        if head is not None and (head in self.prompt or head == self.response or self.response_is_tool_calls):
            raise ValueError(f"columns.response_head {head!r} must be a text column apart from the prompt and response")
        return self


class ReasoningSpec(SpecModel):
    key: str | None = Field(None, description="per-turn key holding separated reasoning, e.g. reasoning_content")
    delimiters: list[tuple[str, str]] = Field(default_factory=list, description="(open, close) inside text")
    unwrap: list[tuple[str, str]] = Field(default_factory=list, description="answer wrappers to strip")


class MediaSpec(SpecModel):
    """Where a row carries media and what happens to it. Text-only targets refuse such rows by name."""

    fields: list[str] = Field(default_factory=list, description="columns / turn keys holding media refs")
    placeholders: list[str] = Field(default_factory=list, description="media tokens in text, e.g. <image>")
    policy: Literal["refuse", "keep"] = Field("refuse", description="keep: media become message parts")


class PreferenceSpec(SpecModel):
    """Preference pairs: `messages_path`/columns read the chosen side, `rejected` the other."""

    rejected: str = Field(description="column or turn-list path of the rejected answer")
    chosen_score: str | None = None
    rejected_score: str | None = None


class TranscriptSpec(SpecModel):
    """A single text column holding a whole dialogue: `Human: ... Assistant: ...` segments, or a conversation
    rendered by a public chat template (adapters/map/rendered.py names the grammars; the markers are literal)."""

    field: str
    markers: dict[str, Role] = Field(description="speaker marker (e.g. 'Human:') → role")
    template: str | None = Field(None, description="the chat template family the markers come from (review aid)")
    anchored: bool = Field(True, description="markers count only at the start of a line")
    ends: list[str] = Field(default_factory=list, description="end-of-turn tokens stripped from each turn")
    preamble: Role | None = Field(None, description="role of text before the first marker (None: it rejects the row)")
    merge: bool = Field(False, description="adjacent segments of one role are one turn (Alpaca instruction + input)")


# TranscriptSpec fields added after v2, hashed only when they differ from these defaults (no approval goes stale).
TRANSCRIPT_DEFAULTS: dict[str, Any] = {"template": None, "anchored": True, "ends": [], "preamble": None, "merge": False}


class TurnColumn(SpecModel):
    """One turn of a conversation spread over columns: its text column and its role (fixed or from a column)."""

    field: str
    role: Role | None = None
    role_field: str | None = Field(None, description="column whose label (through role_map) gives the role")

    @model_validator(mode="after")
    def _one_role_source(self) -> TurnColumn:
        if (self.role is None) == (self.role_field is None):
            raise ValueError("a turn column needs exactly one of `role` and `role_field`")
        return self


class CandidatesSpec(SpecModel):
    """Several candidate answers to one prompt (adapters/map/candidates.py). `policy`: regenerate = keep the prompt
    only; best = the best-ranked / winning answer is trained, the worst / losing one recorded, never trained."""

    policy: Literal["regenerate", "best"] = "regenerate"
    field: str | None = Field(None, description="ranked: the column holding the list of candidates")
    text_key: str | None = Field(None, description="ranked: key of a candidate's text (None: plain strings)")
    score_key: str | None = Field(None, description="ranked: key of a candidate's score or rank")
    higher_is_better: bool = True
    sides: list[str] = Field(default_factory=list, description="battles: the two turn-list columns")
    winner_field: str | None = None
    winners: dict[str, int] = Field(default_factory=dict, description="winner label → side index; others: no winner")

    @model_validator(mode="after")
    def _ranked_or_battle(self) -> CandidatesSpec:
        if bool(self.sides) == bool(self.field):
            raise ValueError("candidates need either `field` (ranked answers) or `sides` (a battle)")
        if self.sides and (len(self.sides) != 2 or not self.winner_field):
            raise ValueError("a battle needs two `sides` and a `winner_field`")
        return self


class GoldenExample(SpecModel):
    """A raw row pinned with the canonical output it must keep producing (or the error it must raise)."""

    row_index: int
    row: dict[str, Any]
    expected: list[dict[str, Any]] | None = None
    expected_error: str | None = None


class AdapterSpec(SpecModel):
    spec_version: int = SPEC_VERSION
    source: SourceSpec
    layout: Literal["messages", "columns", "trajectory", "utterances", "transcript", "turn_columns"]
    category: str = "general"
    mode: Mode = "regenerate"
    # Turn-list layouts (messages: chat turns; trajectory: agent steps with flags / split keys).
    messages_path: str | None = Field(None, description="dotted path to the turn list, e.g. chosen")
    role_key: str | None = None
    content_key: str | None = None
    role_map: dict[str, RoleTarget] = Field(default_factory=dict, description="explicit and total")
    null_policy: dict[Role, str] = Field(
        default_factory=dict, description="role → turn key read when the content is null"
    )
    tool_calls_key: str | None = None
    tool_call_id_key: str | None = Field(None, description="tool turns: key of the id of the call answered")
    tool_name_key: str | None = Field(None, description="tool turns: key naming the function")
    text_tool_calls: TextToolFormat | None = Field(None, description="tool calls written inside assistant text")
    text_tool_results: list[str] | None = Field(
        None,
        description="result elements (e.g. tool_response): a user turn that is wholly one, right after a call, "
        "is that call's tool result",
    )
    tools_field: str | None = Field(None, description="column holding the tool declarations")
    tools_in_system: bool | None = Field(None, description="tool declarations written as JSON in the system prompt")
    parts_key: str | None = Field(None, description="per-turn key holding media parts")
    completion_path: str | None = Field(None, description="turn list appended after messages_path (TRL completion)")
    zip_paths: list[str] | None = Field(
        None,
        description="turns stored as parallel arrays (a speaker column beside a text column): these columns, "
        "zipped into turn objects keyed by their last path segment; messages_path is the first of them",
    )
    pair_keys: list[str] | None = Field(
        None, description="utterances given as exchanges: [user key, assistant key] of each item ([] for 2-item lists)"
    )
    first_role: Literal["user", "system", "assistant"] | None = Field(
        None, description="utterances layout: role of the first string; the rest alternate user/assistant"
    )
    transcript: TranscriptSpec | None = None
    turn_columns: list[TurnColumn] | None = Field(None, description="turn_columns layout: turns in order")
    candidates: CandidatesSpec | None = None
    media: MediaSpec | None = None
    preference: PreferenceSpec | None = None
    label_field: str | None = Field(None, description="KTO-style label column: false = undesirable answer")
    train_flag_key: str | None = None
    train_flag_inverted: bool | None = Field(
        None, description="the flag marks turns left out of the loss (true = not trained), a mask over the prompt"
    )
    system_field: str | None = Field(None, description="column with a system prompt to prepend")
    # Column layouts.
    columns: ColumnsSpec | None = None
    # Shared.
    json_fields: list[str] = Field(default_factory=list, description="columns json-decoded when strings")
    reasoning: ReasoningSpec | None = None
    cut: Literal["last_user", "first_user"] = Field(
        "last_user", description="regenerate mode: the context ends on this user turn"
    )
    min_yield: float = Field(0.8, ge=0.0, le=100.0, description="contract: records per row at least")
    max_content_chars: int = Field(100_000, gt=0, description="a longer turn rejects the row (broken export)")
    # Field accounting (adapters/infer/accounting.py): raw fields left out of the records on purpose, by path
    # (`meta.score`, `conversations[].id`; a path drops everything under it) → the reason ("ids", "metadata").
    drop: dict[str, str] | None = Field(None, description="raw field path → why it is not carried")
    max_bad_fraction: float | None = Field(
        None, ge=0.0, le=1.0, description="rows failing a per-row check are quarantined up to this fraction (0.01)"
    )
    # Review annotations (not hashed).
    reasons: dict[str, str] = Field(default_factory=dict)
    needs_review: list[str] = Field(default_factory=list)
    golden: list[GoldenExample] = Field(default_factory=list)

    @model_validator(mode="after")
    def _layout_fields_present(self) -> AdapterSpec:
        if self.train_flag_inverted and not self.train_flag_key:
            raise ValueError("train_flag_inverted needs the train_flag_key it inverts")
        if self.layout == "columns":
            if self.columns is None:
                raise ValueError("layout 'columns' needs a `columns` section (prompt, response)")
        elif self.layout == "utterances":
            if not (self.messages_path and (self.first_role or self.pair_keys is not None)):
                raise ValueError("layout 'utterances' needs messages_path and first_role (or pair_keys)")
        elif self.layout == "transcript":
            if self.transcript is None:
                raise ValueError("layout 'transcript' needs a `transcript` section (field, markers)")
        elif self.layout == "turn_columns":
            if not self.turn_columns:
                raise ValueError("layout 'turn_columns' needs `turn_columns` (field and role of each turn)")
        elif not (self.messages_path and self.role_key and self.content_key):
            raise ValueError(f"layout '{self.layout}' needs messages_path, role_key and content_key")
        return self

    # -- identity ------------------------------------------------------------------------------
    def hashed_payload(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude=HASH_EXCLUDED)
        for name in ADDED_FIELDS:
            if data.get(name) is None:
                data.pop(name, None)
        if isinstance(data.get("columns"), dict):
            for key in ("history", "continues", "response_head"):  # added later: hashed only when set
                if not data["columns"].get(key):
                    data["columns"].pop(key, None)
        if isinstance(data.get("transcript"), dict):
            for key, default in TRANSCRIPT_DEFAULTS.items():
                if data["transcript"].get(key) == default:
                    data["transcript"].pop(key, None)
        return data

    def spec_hash(self) -> str:
        canonical = json.dumps(self.hashed_payload(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def records_hash(self) -> str:
        """The hash of what makes the records: `spec_hash` with the fields that only judge them (the contract's
        thresholds) at their defaults. Shards written under one `max_bad_fraction` are the same records under
        another, so ingest resumes them; for a spec at the defaults it equals `spec_hash`."""
        defaults = {name: type(self).model_fields[name].default for name in JUDGING_FIELDS}
        return self.model_copy(update=defaults).spec_hash()

    # -- serialisation -------------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=110)

    @classmethod
    def from_json(cls, text: str) -> AdapterSpec:
        return cls.from_data(json.loads(text), where="JSON")

    @classmethod
    def from_yaml(cls, text: str, where: str = "YAML") -> AdapterSpec:
        try:
            data = yaml.safe_load(text)  # safe_load: a spec file can never construct Python objects
        except yaml.YAMLError as exc:
            raise DraftsetError(
                f"adapter spec {where} is not valid YAML: {exc}", hint="fix the YAML syntax and save again"
            ) from exc
        return cls.from_data(data, where=where)

    @classmethod
    def from_data(cls, data: Any, where: str = "spec") -> AdapterSpec:
        """Validate plain data from JSON/YAML into a spec, or raise one error naming every bad field."""
        if not isinstance(data, dict):
            raise DraftsetError(f"adapter spec {where} must be a mapping of fields, got {type(data).__name__}")
        try:
            # JSON-mode validation stays strict but accepts arrays for the (open, close) tuples.
            return cls.model_validate_json(json.dumps(data))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors())
            raise DraftsetError(
                f"adapter spec {where} is invalid: {problems}",
                hint="fix the named fields (see `draftset adapters show REPO` for a valid spec)",
            ) from exc
