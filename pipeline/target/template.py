"""The target's chat template as the serving engine sees it, and its one fingerprint.

SGLang and vLLM render prompts with the template the tokenizer resolves (transformers picks between
`chat_template.jinja`, `tokenizer_config.json` and named templates), or with a `--chat-template FILE`
given on the command line. The fingerprint is the sha256 of that template's UTF-8 bytes: build records it,
capture carries it into the manifest, and the serve check compares the serving side's against it. Hashing
a file of the model folder instead would disagree with the engine whenever the folder holds two templates.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from catalog.errors import DraftsetError

# What rendering messages that do not fit a template raises (jinja errors, a tool call of the wrong shape):
# the row's or the request's fault, never the template's.
RENDER_ERRORS = (TemplateError, TypeError, ValueError)


def fingerprint(template: str) -> str:
    """sha256 of a template's text, as bytes (UTF-8)."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()


def template_text(tokenizer: Any) -> str | None:
    """The template the engine renders with: the tokenizer's, the `default` one of several named ones."""
    template = tokenizer.chat_template
    if isinstance(template, dict):
        template = template.get("default")
    return template if isinstance(template, str) and template else None


def chat_template_sha256(tokenizer: Any) -> str:
    """The fingerprint of the tokenizer's template; a tokenizer without one cannot build training rows."""
    template = template_text(tokenizer)
    if template is None:
        raise DraftsetError(
            "the tokenizer has no chat template",
            hint="build needs the serving template: point --model at the target's model dir",
        )
    return fingerprint(template)


def model_template_sha256(model_dir: Path) -> str | None:
    """The fingerprint of a model folder's template as its tokenizer resolves it (None: no loadable template)."""
    from pipeline.target.tokenizer import load_chat_tokenizer

    try:
        template = template_text(load_chat_tokenizer(model_dir))
    except DraftsetError:
        return None
    return fingerprint(template) if template is not None else None


def file_template_sha256(path: Path) -> str | None:
    """The fingerprint of a `--chat-template` file: a Jinja file's text, or a tokenizer_config-style JSON's
    `chat_template` (None when the file is not there or holds no template)."""
    path = Path(path)
    if not path.is_file():
        return None
    text: Any = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        try:
            text = json.loads(text).get("chat_template")
        except (ValueError, AttributeError):
            return None
    return fingerprint(text) if isinstance(text, str) and text else None
