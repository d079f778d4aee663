-- find, issue 20 item 5: why a candidate is (ir)relevant from its content, not only its card's words.
-- relevance: on_domain | on_content (kept on its rows, the card named nothing) | off_domain (the card's words
-- in another sense, or no row shows the category's content) | not_sampled (no rows: the card alone decided).
-- relevance_evidence: the one line a reviewer checks against the rows (schemas.sample_rows);
-- content_signals: per content kind (code, shell, tool_calls, exchange ...), how many sampled rows show it,
-- plus rows_read, expected (the category's kinds) and senses (each sense-bearing card word: confirmed or not).
ALTER TABLE candidates ADD COLUMN IF NOT EXISTS relevance VARCHAR;
ALTER TABLE candidates ADD COLUMN IF NOT EXISTS relevance_evidence VARCHAR;
ALTER TABLE candidates ADD COLUMN IF NOT EXISTS content_signals JSON;
-- candidate_status is `c.*` of candidates: re-created so a view bound before the new columns shows them.
CREATE OR REPLACE VIEW candidate_status AS
SELECT c.* REPLACE (CASE WHEN i.repo_id IS NULL THEN c.status ELSE 'ingested' END AS status),
       i.ingest_run_id,
       i.ingested_at
  FROM candidates c
  LEFT JOIN (
        SELECT json_extract_string(params, '$.repo_id') AS repo_id,
               arg_max(run_id, finished_at)            AS ingest_run_id,
               max(finished_at)                        AS ingested_at
          FROM stage_runs
         WHERE stage = 'ingest' AND status = 'ok'
         GROUP BY 1
  ) i USING (repo_id);
