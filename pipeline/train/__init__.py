"""EAGLE-3 draft training and export (torch, imported lazily by the CLI)."""
