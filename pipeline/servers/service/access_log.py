"""The access log without query strings: a token pasted into a URL (`?token=...`, a link shared from a
browser) would otherwise be written to every log line and log file the service keeps.

uvicorn's access logger formats `client - "METHOD PATH?QUERY HTTP/x" status`; this filter rewrites the path
argument to its path alone (and says that a query was dropped), so method, path and status stay readable."""

from __future__ import annotations

import logging

ACCESS_LOGGER = "uvicorn.access"


class NoQueryStrings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) and "?" in args[2]:
            record.args = (*args[:2], args[2].split("?", 1)[0] + "?(query dropped)", *args[3:])
        return True


def install() -> None:
    """Once per process: every access line loses its query string, whichever server logs it."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, NoQueryStrings) for f in logger.filters):
        logger.addFilter(NoQueryStrings())
