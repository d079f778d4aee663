-- eval: what a draft is worth on its target, per wiring of the aux taps and number of speculation steps.
-- method 'specdecode': measured by chain speculative decoding with greedy verification (eval/specdecode);
-- method 'estimate': predicted by `check draft` from teacher-forced per-step accuracy on captured samples.
CREATE TABLE IF NOT EXISTS draft_evals (
    draft VARCHAR NOT NULL,              -- exported draft dir (absolute)
    target VARCHAR NOT NULL,             -- target model dir (absolute)
    wiring VARCHAR NOT NULL,             -- 'configured' or the name of a wrong wiring ('shifted +1', ...)
    method VARCHAR NOT NULL,             -- 'specdecode' | 'estimate'
    steps INTEGER NOT NULL,              -- draft tokens per round (chain, topk 1)
    hf_ids VARCHAR,                      -- JSON list: HF hidden-state indices fed to the draft's fc
    accept_length DOUBLE,                -- tokens per target forward, bonus token included
    step_acceptance VARCHAR,             -- JSON list per step: specdecode conditional acceptance, estimate accuracy
    n_prompts INTEGER,                   -- specdecode: held-out prompts; estimate: samples
    n_tokens INTEGER,                    -- specdecode: generated tokens; estimate: NULL
    tokens_per_s DOUBLE,                 -- specdecode end to end, batch 1
    baseline_tokens_per_s DOUBLE,        -- plain greedy decoding of the same prompts on the same device
    ties INTEGER,                        -- prompts whose output left plain greedy at a numerical logit tie
    device VARCHAR,
    evaluated_at TIMESTAMP,
    PRIMARY KEY (draft, target, wiring, method, steps)
);
