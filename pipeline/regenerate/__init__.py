"""`draftset regenerate`: a mix's prompts answered by the target through OpenAI-compatible servers.

Outputs under $DRAFTSET_HOME/data/regen/<MIX>/ (build reads the results shards):
- results-<run_id>-<seq>.parquet  id, conversation (JSON of adapters.records.Conversation: the final
  conversation for training), origin (`regenerated` | `native_passthrough`: native rows are written
  unchanged so build finds every training row in one place), partition, turns (JSON per answered turn:
  finish_reason, usage, model, endpoint, attempts, latency_s), model, sampling (JSON), finish_reason,
  prompt_tokens, completion_tokens, run_id. Each answer's reasoning is the message's `reasoning`.
- errors.jsonl   rows that failed for good: id, reason, attempts, last_status.
- skipped.jsonl  rows that cannot train: length_truncated (unless include_length_truncated),
  empty_prompt, empty_response, leftover_think (thinking off but <think> in the answer).
- quarantine.jsonl  mix rows without an id, and repeats of an id (dropped_null_id, dropped_duplicate_id).
- manifest.json (totals, complete), progress.json (live; `draftset status`), generation.json
  (sampling settings; a resume with other settings is refused), config.json + stats.json (stage base).
results + errors + skipped == the mix's distinct ids, each once, whatever kill -9 happened on the way.
With `--shard I/N` (sharding.py) a worker takes the ids with sha1(id) mod N == I and writes all of the
above under data/regen/<MIX>/shard-I-of-N/; data/regen/<MIX>/manifest.json sums the N shards.
"""
