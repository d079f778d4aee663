"""The shard row: what a stage that reads or writes conversation shards (data/normalized, data/mix, regenerate's
results) agrees on. codec.py turns a canonical `Conversation` into its row and back (with the checks every
reader wants, naming the bad field); keys.py says what "the same prompt" means (the `prompt_hash` column, and
the normal form and shingles dedup compares)."""
