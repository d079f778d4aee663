"""The embedded target: a tiny Llama with a locally trained, Kimi-style tokenizer and chat template."""
