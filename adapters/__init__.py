"""Declarative dataset adapters: raw Hub rows → canonical Conversations, proven by contracts, gated by approval.

    spec.py      AdapterSpec (data, never code; YAML/JSON; spec_hash)
    source.py    iter_raw_rows(spec_or_source, endpoint=, token=, limit=, sample=) -> RawRow stream
    apply.py     apply_row(spec, row_index, row) -> [Conversation]; RowError(field, reason)
    infer.py     propose_adapter(repo_id, endpoint=, viewer_base=, ...) -> Proposal (detect.py, aliases.py)
    contract.py  run_contract(spec, rows) -> ContractResult
    store.py     catalog `adapters` table + $DRAFTSET_HOME/adapters/<owner>__<name>.yaml
    review.py    approve / reject / map_roles / accept_edit / check_adapter
    gate.py      require_approved(catalog, repo_id, revision) -> AdapterSpec
"""
