"""Test kits shared across test folders: the toy draft pipeline (draft_toy), a fake OpenAI-compatible target
server (fake_openai), a scripted LLM and find environment (find), adapter specs and the approval shortcut
(adapters), a Hub folder of JSONL datasets written per test (jsonl_hub), and the real CLI in a subprocess
(cli). Fakes are labelled as such where they stand."""
