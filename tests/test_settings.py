"""Settings: strict, env-driven, and secrets never printed."""

import subprocess
import sys

from pipeline.settings import Settings


def test_token_is_never_in_repr_or_dump(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_supersecret123")
    monkeypatch.setenv("DRAFTSET_LLM_API_KEY", "sk-also-secret")
    s = Settings()
    assert s.hf_token.get_secret_value() == "hf_supersecret123"
    for text in (repr(s), str(s), s.model_dump_json()):
        assert "hf_supersecret123" not in text
        assert "sk-also-secret" not in text


def test_viewer_base_defaults_to_local_hub_viewer(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9999/")
    monkeypatch.delenv("DRAFTSET_VIEWER_URL", raising=False)
    assert Settings().viewer_base == "http://127.0.0.1:9999/viewer"


def test_cli_error_is_one_line_with_next_step(tmp_path):
    env = {"DRAFTSET_HOME": str(tmp_path / "nohome"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli.app", "sql", "SELECT 1"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "no catalog at" in proc.stderr and "next:" in proc.stderr
