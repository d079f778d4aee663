-- Which process runs a stage or find run ("host:pid:start-ticks"), so a run whose process died is
-- shown as `interrupted` instead of `running` forever (catalog/liveness.py).
ALTER TABLE stage_runs ADD COLUMN IF NOT EXISTS owner VARCHAR;
ALTER TABLE search_runs ADD COLUMN IF NOT EXISTS owner VARCHAR;
