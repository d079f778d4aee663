-- find, issue 20 item 5: why a candidate is (ir)relevant from its content, not only its card's words.
-- relevance: on_domain | on_content (kept on its rows, the card named nothing) | off_domain (the card's words
-- in another sense, or no row shows the category's content) | not_sampled (no rows: the card alone decided)
-- | unmatched (no card word; a category with no content kinds) | card_only (content check off: FindConfig.content_relevance).
-- relevance_evidence: the one line a reviewer checks against the rows (schemas.sample_rows);
-- content_signals: per content kind (code, shell, tool_calls, exchange ...), how many sampled rows show it,
-- plus rows_read, expected (the category's kinds) and senses (each sense-bearing card word: confirmed or not).
ALTER TABLE candidates ADD COLUMN IF NOT EXISTS relevance VARCHAR;
ALTER TABLE candidates ADD COLUMN IF NOT EXISTS relevance_evidence VARCHAR;
ALTER TABLE candidates ADD COLUMN IF NOT EXISTS content_signals JSON;
-- candidate_status (0030) selects c.*, which DuckDB binds when queried: the view shows these columns as they are.
