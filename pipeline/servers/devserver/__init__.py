"""OpenAI-compatible dev server for the toy target (`draftset serve-dev`)."""

from pipeline.servers.devserver.server import RunningServer, serve, serve_in_thread

__all__ = ["RunningServer", "serve", "serve_in_thread"]
