-- find's proposal phase, checkpointed one dataset at a time (agents/proposals.py): the targets are stored
-- when the phase starts (outcome NULL), each outcome in its own transaction as that proposal ends.
-- outcome: pass | fail (contract FAIL) | refused (by name) | failed (an error, in `line`); NULL: not done yet,
-- so `draftset find --resume RUN_ID` proposes it (and only it) again.
CREATE TABLE IF NOT EXISTS find_proposals (
    run_id VARCHAR NOT NULL,
    repo_id VARCHAR NOT NULL,
    position INTEGER NOT NULL,  -- 0 = the plan's highest-scored dataset
    plan_id VARCHAR NOT NULL,
    outcome VARCHAR,
    line VARCHAR,
    finished_at TIMESTAMP,
    PRIMARY KEY (run_id, repo_id)
);
