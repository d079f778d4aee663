-- eval: what a forecast of accept length against data needs from each measurement.
-- train_samples: samples the draft was trained on (its build minus the held-out split), so measured
-- accept lengths become points of a data-scaling curve (agents/forecast.py);
-- al_low / al_high: 95% bootstrap interval over drafting rounds (specdecode) or replayed rounds (estimate).
ALTER TABLE draft_evals ADD COLUMN IF NOT EXISTS train_samples INTEGER;
ALTER TABLE draft_evals ADD COLUMN IF NOT EXISTS al_low DOUBLE;
ALTER TABLE draft_evals ADD COLUMN IF NOT EXISTS al_high DOUBLE;
