-- The team service (`draftset serve`): its users and its background jobs. Documented in README.md.
CREATE TABLE IF NOT EXISTS users (
    name        VARCHAR PRIMARY KEY,
    role        VARCHAR NOT NULL,       -- viewer | reviewer | operator
    token_hash  VARCHAR NOT NULL UNIQUE, -- sha256 of the token; the token itself is shown once, never stored
    created_at  TIMESTAMP,
    disabled_at TIMESTAMP               -- set by `draftset users remove`; the token stops working
);

CREATE TABLE IF NOT EXISTS service_jobs (
    job_id      VARCHAR PRIMARY KEY,
    kind        VARCHAR NOT NULL,       -- find | adapter_test
    params      JSON,
    status      VARCHAR,                -- queued | running | ok | failed | interrupted
    started_by  VARCHAR,
    started_at  TIMESTAMP,
    finished_at TIMESTAMP,
    error       VARCHAR,
    result      JSON                    -- find: run_id, plan_id, plan totals (hours, bytes); test: contract
);
