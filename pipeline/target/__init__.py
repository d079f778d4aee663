"""Access to a target model, toy or production: loading it (never remote code), its tokenizer (the one loader,
never truncating), its chat template and the template's fingerprint, token lengths, tools through a template,
tiktoken tokenizers converted to tokenizer.json, and a real small target imported from GGUF. The toy target
itself (pipeline/model/) is one more folder these functions read."""
