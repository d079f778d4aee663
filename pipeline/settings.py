"""One settings model for the whole tool, read from the environment (and .env).

Not `extra="forbid"` on purpose: a project's .env is shared with other tools (OPENAI_API_KEY, ...), and their
keys must not stop draftset from starting. Wrong types still fail at load; the stage configs, which are
draftset's own files, are strict (`extra="forbid"`, pipeline/stage/config.py).

Secrets are `SecretStr`: their repr is '**********', so a token never reaches a log or an error.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_HUB = "https://huggingface.co"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", frozen=True)

    home: Path = Field(Path("draftset-home"), validation_alias="DRAFTSET_HOME")
    hf_endpoint: str = Field(DEFAULT_HUB, validation_alias="HF_ENDPOINT")
    hf_token: SecretStr | None = Field(None, validation_alias=AliasChoices("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"))
    # The real huggingface_hub only talks to the dataset viewer on huggingface.co, so our own code
    # calls viewer-style endpoints through this base URL (the local Hub serves them under /viewer).
    viewer_url: str | None = Field(None, validation_alias="DRAFTSET_VIEWER_URL")
    llm_base_url: str | None = Field(None, validation_alias="DRAFTSET_LLM_BASE_URL")
    llm_model: str | None = Field(None, validation_alias="DRAFTSET_LLM_MODEL")
    llm_api_key: SecretStr | None = Field(None, validation_alias="DRAFTSET_LLM_API_KEY")
    target_endpoints: list[str] = Field(default_factory=list, validation_alias="DRAFTSET_TARGET_ENDPOINTS")
    target_model: str | None = Field(None, validation_alias="DRAFTSET_TARGET_MODEL")
    # The team service (`draftset serve`): when set, the read commands, find and ingest go through it (cli/team.py).
    server_url: str | None = Field(None, validation_alias="DRAFTSET_SERVER")
    server_token: SecretStr | None = Field(None, validation_alias="DRAFTSET_TOKEN")
    # What one request to the service may cost (pipeline/servers/service/sqlgate.py, app.py).
    sql_timeout_s: float = Field(5.0, gt=0, validation_alias="DRAFTSET_SQL_TIMEOUT_S")  # a viewer's statement
    sql_timeout_staff_s: float = Field(30.0, gt=0, validation_alias="DRAFTSET_SQL_TIMEOUT_STAFF_S")  # reviewers+
    sql_max_bytes: int = Field(16 * 1024 * 1024, gt=0, validation_alias="DRAFTSET_SQL_MAX_BYTES")  # one answer
    max_body_bytes: int = Field(1024 * 1024, gt=0, validation_alias="DRAFTSET_MAX_BODY_BYTES")  # one request body
    # Behind a TLS-terminating reverse proxy: session cookies get the Secure flag (README: "Behind a proxy").
    secure_cookies: bool = Field(False, validation_alias="DRAFTSET_SECURE_COOKIES")

    @property
    def viewer_base(self) -> str:
        """Viewer base URL: explicit setting, else the Hub endpoint's /viewer (our local Hub)."""
        if self.viewer_url:
            return self.viewer_url.rstrip("/")
        if self.hf_endpoint.rstrip("/") == DEFAULT_HUB:
            return "https://datasets-server.huggingface.co"
        return self.hf_endpoint.rstrip("/") + "/viewer"


@lru_cache(maxsize=1)
def settings() -> Settings:
    """The settings of this process, read once (tests that change the environment call `cache_clear()`)."""
    return Settings()
