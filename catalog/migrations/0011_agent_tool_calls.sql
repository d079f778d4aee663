-- find, llm policy: tool calls the model made per agent, and how many got an error back (bad arguments,
-- unknown tool, a repo no search returned, budget spent, Hub unavailable).
ALTER TABLE agent_runs ADD COLUMN IF NOT EXISTS tool_calls INTEGER;
ALTER TABLE agent_runs ADD COLUMN IF NOT EXISTS tool_errors INTEGER;
