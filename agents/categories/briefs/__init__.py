"""One module per search agent, each declaring `CATEGORY` (agents/categories/registry.py finds them)."""
