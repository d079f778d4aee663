"""The CLI's two rich consoles: stdout for what a command answers, stderr for progress and errors.

Their own module so that the JSON emitter (as_json) and the table printer (common) share them without
importing each other."""

from __future__ import annotations

import os
import sys

from rich.console import Console

# Piped output is not wrapped at rich's default 80 columns (repo ids and reasons would fold mid-word);
# a terminal keeps its own width, and COLUMNS still wins when set.
console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 240)
err_console = Console(stderr=True, soft_wrap=True)
