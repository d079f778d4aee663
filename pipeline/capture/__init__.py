"""Hidden-state capture: target forward passes → bf16 safetensors shards + a manifest (torch, lazily)."""
