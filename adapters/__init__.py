"""Declarative dataset adapters: raw Hub rows → canonical Conversations, proven by contracts, gated by approval.

records.py    canonical record v2 (tools, tool calls with ids, tool turns, media parts, preference, label)
spec.py       AdapterSpec (data, never code; YAML/JSON; spec_hash)
detect.py     the one schema detector (find and proposal), named refusals, target families
  structure.py  value statistics: turn lists, speaker and text keys, prompt- and answer-like text
  roles.py      role maps (aliases as priors, unknown labels by structure) and per-turn fields
  columns.py    single-turn columns by content (instruction/definition columns lead the prompt), transcripts
  rendered.py   public chat templates as data (ChatML, Llama-2/3, Gemma, Alpaca, Vicuna, ...) → turns
  learned_markers.py speaker markers of any other template, learned from the rows when consistent across them
  numbered.py   conversations over numbered or paired columns (message_1..N, question_i/answer_i)
  answers.py    answers beside a prompt turn list (chosen/rejected turn objects), KTO labels
  candidates.py several candidate answers (ranked, battles) under a named policy
  toolcalls.py  tool declarations and calls in every common shape, calls written in text
  pycalls.py    tool calls written as Python call code, parsed with ast (never evaluated)
  declarations.py tool declarations written as JSON inside a system prompt
  rereading.py  other readings when one reason rejects most sampled rows (environment speakers as observations,
                a mask read the other way)
  answer_head.py an answer split over two columns: its opening, its rest, which column a tail continues
files.py      data files as `datasets` reads them (its extension table, fsspec compression), row by row
  media.py      media values → parts
trial.py      a detection applied to its own sample (find's yield and sizes)
infer.py      propose_adapter / build_proposal: pin revision, config/split, detect, golden rows
llm_spec.py   --policy llm: a model's structured reading when structure cannot decide
propose.py    propose + contract-test many datasets (CLI and find --propose)
source.py     iter_raw_rows(spec_or_source, endpoint=, token=, limit=, sample=) -> RawRow stream
apply.py      apply_row(spec, row_index, row) -> [Conversation]; RowError(field, reason)   (turns.py reads turns)
contract.py   run_contract(spec, rows) -> ContractResult (verdict: pass | refused: <name> | fail)
  encoded.py    JSON-string fields and compressed blobs, judged and probed by what they decode to (accounting)
  text_checks.py  checks that read the text over a fraction of rows (echo, wrapper, cut, escaped, script, ...)
  pasted_system.py a system prompt pasted into user turns, told by structure where no row keeps one
store.py      catalog `adapters` table + $DRAFTSET_HOME/adapters/<owner>__<name>.yaml
review.py     approve / reject / map_roles / accept_edit / check_adapter
gate.py       require_approved(catalog, repo_id, revision) -> AdapterSpec
"""
