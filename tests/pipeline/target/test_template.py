"""One template fingerprint: the template the tokenizer resolves (what SGLang/vLLM render with), hashed once."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from pipeline.target.template import chat_template_sha256, file_template_sha256, model_template_sha256


@pytest.fixture(scope="module")
def toy_dir(tmp_path_factory):
    from pipeline.model.toy import ToyConfig, init_toy

    out = tmp_path_factory.mktemp("template-toy") / "toy-target"
    init_toy(out, ToyConfig(train_steps=0), hub_dir=tmp_path_factory.mktemp("no-corpus"))
    return out


def _resolved(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder).chat_template


def test_build_capture_and_serve_agree_on_one_fingerprint(toy_dir):
    from transformers import AutoTokenizer

    served = _resolved(toy_dir)
    expected = hashlib.sha256(served.encode("utf-8")).hexdigest()
    assert chat_template_sha256(AutoTokenizer.from_pretrained(toy_dir)) == expected  # build
    assert model_template_sha256(toy_dir) == expected  # capture, and the serve check without --chat-template
    given = toy_dir.parent / "served.jinja"
    given.write_text(served, encoding="utf-8")
    assert file_template_sha256(given) == expected  # the serve check's --chat-template FILE


def test_a_folder_with_two_templates_is_fingerprinted_as_the_engine_resolves_it(toy_dir, tmp_path):
    folder = tmp_path / "two-templates"
    shutil.copytree(toy_dir, folder)
    other = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
    config_path = folder / "tokenizer_config.json"
    jinja_path = folder / "chat_template.jinja"
    if jinja_path.exists():  # the template lives in the .jinja file: put the other one in the config
        config = json.loads(config_path.read_text())
        config_path.write_text(json.dumps({**config, "chat_template": other}))
    else:
        jinja_path.write_text(other, encoding="utf-8")
    resolved = _resolved(folder)
    fingerprint = model_template_sha256(folder)
    assert fingerprint == hashlib.sha256(resolved.encode("utf-8")).hexdigest()
    # whichever file the tokenizer took, hashing the other one would have disagreed with the engine
    assert {file_template_sha256(config_path), file_template_sha256(jinja_path)} - {fingerprint}


def test_no_loadable_template_is_none_not_a_guess(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "x"}))  # no tokenizer files
    assert model_template_sha256(tmp_path / "missing") is None
    assert file_template_sha256(tmp_path / "nothing.jinja") is None
