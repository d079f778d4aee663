-- eval: the recipe a measured draft was trained with, so the forecast can tell data from training length.
-- train_steps: optimizer steps the draft trained for (resolved.json metrics.steps);
-- train_batch_tokens: tokens per optimizer step (resolved.json train.batch_tokens). Measured on 27K rows of
-- one target, 4,368 steps at 8,192 tokens beat 724 at 32,768 by as much as tripling the data (issue 29).
ALTER TABLE draft_evals ADD COLUMN IF NOT EXISTS train_steps INTEGER;
ALTER TABLE draft_evals ADD COLUMN IF NOT EXISTS train_batch_tokens INTEGER;
