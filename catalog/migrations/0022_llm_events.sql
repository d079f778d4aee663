-- find, llm policy (issue 17): why the model's answers were not used. One row per problem with a model
-- request, in order per agent; `outcome` says what followed: retried (one repair or retry), sent_back (a
-- tool-argument error went back to the model), judge (the tool loop gave up; the model judged the
-- heuristic's finds instead) or fallback (heuristic scores were used). Causes: agents/policies/llm_calls.py.
CREATE TABLE IF NOT EXISTS llm_events (
    run_id      VARCHAR NOT NULL,
    category    VARCHAR NOT NULL,
    seq         INTEGER NOT NULL,
    step        VARCHAR,               -- probe | explore | judge
    cause       VARCHAR,               -- http_status | not_json | schema | tool_args | no_tool_calls | budget | timeout | connection
    status_code INTEGER,               -- the HTTP status, when the endpoint sent one
    detail      VARCHAR,               -- one line: the field that failed validation, the endpoint and content type ...
    outcome     VARCHAR,               -- retried | sent_back | judge | fallback
    logged_at   TIMESTAMP,
    PRIMARY KEY (run_id, category, seq)
);
-- The cause of the agent's fallback to heuristic scores (NULL: the model's judgement was used).
ALTER TABLE agent_runs ADD COLUMN IF NOT EXISTS llm_fallback_cause VARCHAR;
-- What the run's probe found the LLM endpoint honours: {endpoint, model, json_schema, tools, reached, detail}.
ALTER TABLE search_runs ADD COLUMN IF NOT EXISTS llm_probe JSON;
