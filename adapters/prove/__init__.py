"""Proof: a spec's contract run over sampled rows (contract.py), the structural plausibility of the records it makes,
and the checks that read what their text says over a fraction of the rows."""
