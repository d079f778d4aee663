-- find stores what the one detector (adapters/detect.py) found for the sampled config/split, with its
-- reasons; adapter proposal starts from it instead of sampling and detecting again.
ALTER TABLE schemas ADD COLUMN IF NOT EXISTS detected JSON;
