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
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.cli.app", "sql", "SELECT 1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "no catalog at" in proc.stderr and "next:" in proc.stderr


def test_cli_turns_a_full_disk_into_one_line(tmp_path, monkeypatch, capsys):
    """An OS error a user can fix (here ENOSPC raised by a command) is one line plus what to do, exit 1."""
    import errno

    import pytest

    from pipeline.cli import app as cli

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x.parquet"))

    monkeypatch.setattr(cli, "app", full_disk)
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 1
    assert "No space left on device" in err and "x.parquet" in err and "free disk space" in err
