"""Review: what people decide about an adapter and what is kept of it: the catalog table and YAML copy (store.py),
approvals and edits, per-record flags, the one verdict, the ingestion gate, previews and the propose orchestration."""
