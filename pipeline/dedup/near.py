"""Near-duplicate detection with MinHash LSH (datasketch) in memory: the reference the out-of-core stage
(decide.py) is measured against in eval/bench/bench_dedup.py, on the same signatures (minhash.py).

LSH only proposes candidates; each candidate is confirmed with the MinHash Jaccard estimate, so the
similarity recorded for a dropped row is the measured one, not the LSH band guess.
"""

from __future__ import annotations

from collections.abc import Iterable

from datasketch import LeanMinHash, MinHashLSH

from pipeline.dedup import minhash


class NearIndex:
    """First-come index: `match_or_add` returns the earlier near-duplicate, or keeps the new text."""

    def __init__(self, threshold: float = 0.8, num_perm: int = 128, ngram: int = 2):
        self.threshold = threshold
        self.num_perm = num_perm
        self.ngram = ngram
        self._lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=minhash.LSH_WEIGHTS)
        self._sigs: dict[str, LeanMinHash] = {}

    def signatures(self, normalized: Iterable[str]) -> list[LeanMinHash | None]:
        """MinHash of each normalized text; None for an empty text (nothing to compare)."""
        texts = list(normalized)
        sigs = minhash.signatures(texts, self.num_perm, self.ngram)
        return [
            LeanMinHash(seed=1, hashvalues=sig, scheme="affine32") if text else None for text, sig in zip(texts, sigs)
        ]

    def match_or_add(self, key: str, sig: LeanMinHash | None) -> tuple[str, float] | None:
        """(kept key, similarity) when `sig` is within the threshold of an indexed text;
        otherwise index it under `key` and return None."""
        if sig is None:
            return None
        best: tuple[str, float] | None = None
        for other in self._lsh.query(sig):
            sim = sig.jaccard(self._sigs[other])
            if sim >= self.threshold and (best is None or sim > best[1] or (sim == best[1] and other < best[0])):
                best = (other, sim)
        if best is None:
            self._lsh.insert(key, sig)
            self._sigs[key] = sig
        return best
