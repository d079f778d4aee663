"""A Hugging Face Hub-compatible HTTP server for dataset repos kept in a local folder.

`DIR/<owner>/<name>/` (README.md card + data files) is served so the real, unmodified huggingface_hub and
datasets clients work against it through HF_ENDPOINT; viewer-style endpoints live under /viewer.
"""

from pipeline.servers.localhub.server import RunningHub, bind, build_app, create_server, free_port, serve_in_thread

__all__ = ["RunningHub", "build_app", "bind", "create_server", "free_port", "serve_in_thread"]
