"""OpenAI-compatible dev server for the toy target (`draftset serve-dev`)."""

from pipeline.servers.devserver.server import serve, serve_in_thread
from pipeline.servers.http import RunningServer

__all__ = ["RunningServer", "serve", "serve_in_thread"]
