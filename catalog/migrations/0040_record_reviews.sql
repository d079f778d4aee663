-- Per-record review state kept by the service (issue #31): a reviewer marks one sampled record of an adapter
-- as reviewed, so "reviewed N of M" and the review queue ("next unreviewed") come from the server, shared by
-- the team, instead of counting page visits in one browser. A mark binds to the spec it judged, as a flag
-- does: a changed spec starts a fresh review (marks on older specs are kept, not counted).
CREATE TABLE IF NOT EXISTS record_reviews (
    repo_id     VARCHAR NOT NULL,
    spec_hash   VARCHAR NOT NULL,       -- the spec the reviewer was looking at
    row_index   INTEGER NOT NULL,       -- the raw row (file order, as flags and `adapters preview --row` count)
    record_id   VARCHAR,                -- the canonical record shown for that row, when it made one
    reviewed_by VARCHAR NOT NULL,
    reviewed_at TIMESTAMP NOT NULL,
    PRIMARY KEY (repo_id, spec_hash, row_index)
);
