"""eval's CLI commands; each module has `register(app)` and is listed in pyproject's `draftset.commands`."""
