"""`draftset regenerate` / `draftset status` through the CLI entry point (`main`, as the console
script runs it, in-process to keep the tests fast; test_kill_resume.py runs it as a subprocess)."""

from __future__ import annotations

from regen_helpers import simple_mix, write_mix


def test_dead_endpoint_is_one_line_naming_the_url_and_how_to_start_a_server(home, draftset):
    write_mix(home, "m", simple_mix(3))
    done = draftset("regenerate", "m", "--endpoint", "http://127.0.0.1:9", "--no-progress")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("error: target endpoint http://127.0.0.1:9 is not answering GET /v1/models")
    assert lines[1].startswith("next:") and "draftset serve-dev" in done.stderr


def test_endpoints_come_from_settings_and_counts_are_printed(home, fake_server, draftset):
    server = fake_server()
    write_mix(home, "m", simple_mix(5, native_every=5))
    done = draftset(
        "regenerate", "m", "--no-progress", "--no-thinking", env={"DRAFTSET_TARGET_ENDPOINTS": f'["{server.url}"]'}
    )
    assert done.returncode == 0, done.stderr
    assert "5 results + 0 errors + 0 skipped = 5 of 5 input rows" in done.stdout
    assert "native_passthrough" in done.stdout
    assert all(req["chat_template_kwargs"] == {"enable_thinking": False} for req in server.behaviour.log)
    status = draftset("status")
    assert status.returncode == 0 and "finished" in status.stdout and "5/5" in status.stdout
    assert "regenerate" in status.stdout.split("recent stage runs")[1]


def test_no_endpoint_and_bad_config_are_clear_errors(home, tmp_path, draftset):
    write_mix(home, "m", simple_mix(2))
    done = draftset("regenerate", "m", env={"DRAFTSET_TARGET_ENDPOINTS": "[]"})
    assert done.returncode == 1 and "no target endpoint given" in done.stderr and "--endpoint" in done.stderr
    bad = tmp_path / "regen.yaml"
    bad.write_text(
        "partitions:\n  - {name: short, max_prompt: 10, concurrency: 0, max_tokens: 5}\n"
        "  - {name: long, concurrency: 1, max_tokens: 5}\n"
    )
    done = draftset("regenerate", "m", "--endpoint", "http://127.0.0.1:9", "--config", str(bad))
    assert done.returncode == 1 and "partitions.0.concurrency" in done.stderr and "Traceback" not in done.stderr


def test_status_names_a_damaged_progress_file_instead_of_hiding_the_job(home, draftset):
    folder = home / "data" / "regen" / "m"
    folder.mkdir(parents=True)
    (folder / "progress.json").write_text("{not json")
    done = draftset("status")
    assert done.returncode == 0, done.stderr
    assert f"{folder / 'progress.json'} is unreadable" in done.stdout.replace("\n", ""), done.stdout


def test_a_mix_name_that_would_leave_the_data_folder_is_refused(home, draftset):
    done = draftset("regenerate", "../../escape", "--endpoint", "http://127.0.0.1:9")
    assert done.returncode == 1 and "invalid mix name '../../escape'" in done.stderr and "Traceback" not in done.stderr
