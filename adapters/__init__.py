"""Declarative dataset adapters: raw Hub rows → canonical Conversations, proven by contracts, gated by approval.

Floors in the order the data flows; each imports the core and the floors listed before it, never one after
(tests/adapters/test_adapter_layers.py holds it).

core (here)   the types every floor shares
  records.py      canonical record v2 (tools, tool calls with ids, tool turns, media parts, preference, label)
  record_text.py  one meaning for each piece of a conversation's text, kept on the record
  spec.py         AdapterSpec (data, never code; YAML/JSON; spec_hash)
  row_fields.py   a raw row's fields one at a time (get_path); RowError(field, reason)
  detected.py     what detection decided, field by field with a reason, or the verdict that refuses it
read/         raw rows in
  source.py       iter_raw_rows(spec_or_source, endpoint=, token=, limit=, sample=) -> RawRow stream
  files.py        data files as `datasets` reads them (its extension table, fsspec compression), row by row
  capped.py       the same files decoded in a memory-capped child where a decoder may blow up
  media.py        media values → parts
  encoded.py      JSON-string fields and compressed blobs, judged and probed by what they decode to
  card_configs.py configs or splits a repo's card calls evaluation sets (never chosen for training)
map/          a spec applied to one row
  apply.py        apply_row(spec, row_index, row) -> [Conversation]   (turns.py reads turns)
  turns.py        the turns of one raw row: TurnReader, its layout dispatch and the turn lists
  spoken_turns.py utterances, exchanges and transcripts (no speaker labels), read through TurnReader
  column_turns.py single-turn columns and numbered turn columns, read through TurnReader
  turn_source.py  what those two need of TurnReader (a Protocol: they never import turns.py)
  structure.py    value statistics: turn lists, speaker and text keys, prompt- and answer-like text
  aliases.py      the role alias table (raw labels → canonical roles)
  rendered.py     public chat templates as data (ChatML, Llama-2/3, Gemma, Alpaca, Vicuna, ...) → turns
  markup.py       template markup and wrapper tags that must not stay inside a turn: the one list
  toolcalls.py    tool declarations and calls in every common shape, calls written in text
  pycalls.py      tool calls written as Python call code, parsed with ast (never evaluated)
  declarations.py tool declarations written as JSON inside a system prompt
  candidates.py   several candidate answers (ranked, battles) under a named policy
  tracing.py      probe one field path of a raw row and see where it lands
infer/        a spec found from sampled rows
  detect.py       the one schema detector (find and proposal), named refusals, target families
  roles.py        role maps (aliases as priors, unknown labels by structure) and per-turn fields
  columns.py      single-turn columns by content (instruction/definition columns lead the prompt), transcripts
  learned_markers.py speaker markers of any other template, learned from the rows when consistent across them
  numbered.py     conversations over numbered or paired columns (message_1..N, question_i/answer_i)
  answers.py      answers beside a prompt turn list (chosen/rejected turn objects), KTO labels
  answer_head.py  an answer split over two columns: its opening, its rest, which column a tail continues
  request_column.py one text column and no answer: prompts (regenerate mode) or a plain corpus (refused)
  column_names.py, continuation.py  which side a column name says it holds; a sentence carried over columns
  rereading.py    other readings when one reason rejects most sampled rows
  trial.py        a detection applied to its own sample (find's yield and sizes)
  field_kinds.py, accounting.py  what a raw field's values are; where every leaf of the rows went
  llm_spec.py     --policy llm: a model's structured reading when structure cannot decide
  infer.py        propose_adapter / build_proposal: pin revision, config/split, detect, golden rows
prove/        what the mapping did, proven on sampled rows
  contract.py     run_contract(spec, rows) -> ContractResult (verdict: pass | refused: <name> | fail)
  plausibility.py what no real conversation looks like
  text_checks.py  checks that read the text over a fraction of rows (echo, wrapper, cut, escaped, script, ...)
  pasted_system.py a system prompt pasted into user turns, told by structure where no row keeps one
review/       what people decide, and what is kept
  store.py        catalog `adapters` table + $DRAFTSET_HOME/adapters/<owner>__<name>.yaml
  review.py       approve / reject / map_roles / accept_edit / check_adapter
  flags.py        reviewers' per-record flags
  verdict.py      one verdict per adapter (CLI, API and review page)
  gate.py         require_approved(catalog, repo_id, revision) -> AdapterSpec
  preview.py      one raw row and what a spec makes of it
  propose.py      propose + contract-test many datasets (CLI and find --propose)
"""
