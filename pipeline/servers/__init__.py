"""Servers the pipeline runs: the local Hub (`localhub`), the dev target (`devserver`), the team service."""
