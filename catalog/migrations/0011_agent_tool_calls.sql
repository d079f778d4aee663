-- find, llm policy: tool calls the model made per agent, and how many were refused (bad arguments).
ALTER TABLE agent_runs ADD COLUMN IF NOT EXISTS tool_calls INTEGER;
ALTER TABLE agent_runs ADD COLUMN IF NOT EXISTS tool_errors INTEGER;
