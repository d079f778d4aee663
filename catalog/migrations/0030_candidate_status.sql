-- Candidates as find's and plan's views show them (issue #9): ingest never writes find's `candidates`
-- table; whether a candidate is now data is ingest's own record, an `ok` ingest run in stage_runs.
-- status = 'ingested' once such a run exists, else find's status; ingest_run_id/ingested_at = the newest.
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
