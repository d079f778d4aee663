"""Near-duplicate detection with MinHash LSH (datasketch) over word-bigram shingles of normalized prompts.

LSH only proposes candidates; each candidate is confirmed with the MinHash Jaccard estimate, so the
similarity recorded for a dropped row is the measured one, not the LSH band guess.
"""

from __future__ import annotations

from collections.abc import Iterable

import xxhash
from datasketch import LeanMinHash, MinHash, MinHashLSH

from pipeline.rows.keys import shingles


def _hash32(data: bytes) -> int:
    # xxhash instead of datasketch's default sha1: ~10x faster, equally stable across runs.
    return xxhash.xxh32_intdigest(data)


class NearIndex:
    """First-come index: `match_or_add` returns the earlier near-duplicate, or keeps the new text."""

    def __init__(self, threshold: float = 0.8, num_perm: int = 128, ngram: int = 2):
        self.threshold = threshold
        self.num_perm = num_perm
        self.ngram = ngram
        self._lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        self._sigs: dict[str, LeanMinHash] = {}

    def signatures(self, normalized: Iterable[str]) -> list[LeanMinHash | None]:
        """MinHash of each normalized text; None for an empty text (nothing to compare)."""
        sets = [shingles(t, self.ngram) for t in normalized]
        gen = MinHash.generator((list(s) for s in sets if s), num_perm=self.num_perm, hashfunc=_hash32)
        return [LeanMinHash(next(gen)) if s else None for s in sets]

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
