-- Core tables. Every column is documented in README.md ("Catalog tables").
CREATE TABLE IF NOT EXISTS search_runs (
    run_id            VARCHAR PRIMARY KEY,
    domain            VARCHAR NOT NULL,
    samples_requested BIGINT,
    policy            VARCHAR,
    started_at        TIMESTAMP,
    finished_at       TIMESTAMP,
    status            VARCHAR,          -- ok | partial | failed (written when the run ends)
    error             VARCHAR,
    counts            JSON              -- hub_calls, llm_calls, llm_fallbacks, candidates, agents_failed ...
);

CREATE TABLE IF NOT EXISTS agent_runs (
    run_id       VARCHAR NOT NULL,
    category     VARCHAR NOT NULL,
    started_at   TIMESTAMP,
    finished_at  TIMESTAMP,
    status       VARCHAR,               -- ok | failed
    error        VARCHAR,
    hub_calls    INTEGER,
    llm_calls    INTEGER,
    llm_tokens   INTEGER,
    n_candidates INTEGER,
    PRIMARY KEY (run_id, category)
);

CREATE TABLE IF NOT EXISTS candidates (
    repo_id       VARCHAR PRIMARY KEY,
    revision      VARCHAR,
    category      VARCHAR,
    also_found_by JSON,
    score         DOUBLE,
    score_reasons JSON,
    downloads     BIGINT,
    likes         BIGINT,
    license       VARCHAR,
    gated         BOOLEAN,
    tags          JSON,
    n_rows        BIGINT,
    size_bytes    BIGINT,
    card_summary  VARCHAR,
    mode          VARCHAR,              -- native | regenerate (guess; the adapter decides)
    est_yield     DOUBLE,               -- usable records per row, from sampled rows
    flags         JSON,                 -- gated, no_license, non_text, non_english, empty ...
    first_seen    TIMESTAMP,
    last_seen     TIMESTAMP,
    last_run_id   VARCHAR,
    status        VARCHAR               -- new | relevant | irrelevant | planned | ingested
);

CREATE TABLE IF NOT EXISTS schemas (
    repo_id     VARCHAR NOT NULL,
    revision    VARCHAR NOT NULL,
    config      VARCHAR NOT NULL,
    split       VARCHAR NOT NULL,
    features    JSON,
    sample_rows JSON,
    PRIMARY KEY (repo_id, revision, config, split)
);

CREATE TABLE IF NOT EXISTS adapters (
    repo_id     VARCHAR PRIMARY KEY,
    revision    VARCHAR,
    spec        JSON,
    spec_hash   VARCHAR,
    status      VARCHAR,                -- proposed | approved | rejected | stale
    contract    JSON,
    reviewed_by VARCHAR,
    reviewed_at TIMESTAMP,
    note        VARCHAR,
    approved_spec_hash VARCHAR,
    approved_revision  VARCHAR,
    updated_at  TIMESTAMP
);

CREATE TABLE IF NOT EXISTS plans (
    plan_id           VARCHAR PRIMARY KEY,
    run_id            VARCHAR,
    domain            VARCHAR,
    samples_requested BIGINT,
    samples_existing  BIGINT,
    created_at        TIMESTAMP,
    totals            JSON,
    params            JSON
);

CREATE TABLE IF NOT EXISTS plan_items (
    plan_id            VARCHAR NOT NULL,
    repo_id            VARCHAR NOT NULL,
    category           VARCHAR,
    mode               VARCHAR,
    rows_to_take       BIGINT,
    est_samples        BIGINT,
    prompt_tokens      BIGINT,
    response_tokens    BIGINT,
    regen_hours        DOUBLE,
    hidden_state_bytes BIGINT,
    PRIMARY KEY (plan_id, repo_id)
);

CREATE TABLE IF NOT EXISTS stage_runs (
    run_id      VARCHAR PRIMARY KEY,
    stage       VARCHAR NOT NULL,
    params      JSON,
    counts      JSON,
    status      VARCHAR,                -- running | ok | failed
    error       VARCHAR,
    started_at  TIMESTAMP,
    finished_at TIMESTAMP
);

CREATE TABLE IF NOT EXISTS dedup (
    record_id    VARCHAR PRIMARY KEY,
    repo_id      VARCHAR,
    row_index    BIGINT,
    prompt_hash  VARCHAR,
    kept         BOOLEAN,
    duplicate_of VARCHAR,
    reason       VARCHAR,              -- kept | exact | near | too_long | too_short
    similarity   DOUBLE,
    stage_run_id VARCHAR
);
