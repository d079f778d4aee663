-- Reviewers' per-record flags (issue #23): what a person saw wrong in one sampled record, fed back into the
-- adapter's verdict (adapters/flags.py). A flag binds to the spec it judged, as an approval does: open on
-- the current spec hash it blocks approval; on an older spec it is shown as stale and blocks nothing.
CREATE TABLE IF NOT EXISTS review_flags (
    flag_id     VARCHAR PRIMARY KEY,    -- short random id, what `draftset adapters flags --resolve` names
    repo_id     VARCHAR NOT NULL,
    spec_hash   VARCHAR NOT NULL,       -- the spec the reviewer was looking at
    revision    VARCHAR NOT NULL,       -- the dataset revision it read
    row_index   INTEGER NOT NULL,       -- the raw row (file order, as ingest and `adapters preview --row` count)
    record_id   VARCHAR,                -- the canonical record shown for that row, when it made one
    kind        VARCHAR NOT NULL,       -- wrong_role | lost_text | bad_tool_call | markup | other
    note        VARCHAR,                -- the reviewer's words: untrusted text, escaped wherever it is shown
    flagged_by  VARCHAR NOT NULL,
    flagged_at  TIMESTAMP NOT NULL,
    resolved_by VARCHAR,                -- resolved_* are set together, with a note saying what was done
    resolved_at TIMESTAMP,
    resolution  VARCHAR
);
