-- find: per-agent cache hits, LLM fallbacks and exhausted budgets (issue 3: budgets are reported).
ALTER TABLE agent_runs ADD COLUMN IF NOT EXISTS cache_hits INTEGER;
ALTER TABLE agent_runs ADD COLUMN IF NOT EXISTS llm_fallbacks INTEGER;
ALTER TABLE agent_runs ADD COLUMN IF NOT EXISTS budget_exhausted JSON;
