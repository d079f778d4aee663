"""MinHash signatures and LSH band keys for whole batches at once (numpy), bit-for-bit datasketch's.

Why not datatrove's MinHash stages: they read and write datatrove `Document` files, shingle with their own
word tokenizer and keep an arbitrary cluster member, while draftset's decisions must follow its own normal
form (`keys.normalize`), its survivor order (native first, then repo, config, split, row) and record the
measured similarity. What we take from datasketch instead is its exact arithmetic: the same permutations
(`MinHash(seed=1)`, scheme affine32: MurmurHash3 fmix32 of xxh32, then `a*h+b` mod 2^32) and the same band
split (`_optimal_param`), so a signature here equals `MinHash.hashvalues` there and the in-memory
reference (`near.NearIndex`) and this out-of-core path see the same candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
import xxhash
from datasketch import MinHash
from datasketch.lsh import _optimal_param

from pipeline.dedup.keys import shingles

_EMPTY = np.uint32(0xFFFFFFFF)  # datasketch's initial hash value: a text with no shingles keeps it
_CHUNK = 1 << 15  # shingles per numpy step: (32K x 128) uint32 = 16 MiB of scratch, whatever the batch


@cache
def permutations(num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    """datasketch's (a, b) for `num_perm` (seeded, so every worker and run draws the same ones)."""
    a, b = MinHash(num_perm=num_perm, seed=1).permutations
    return a.astype(np.uint32).reshape(1, -1), b.astype(np.uint32).reshape(1, -1)


@cache
def bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """(b, r): the band split datasketch's MinHashLSH picks for this threshold (equal FP/FN weights)."""
    return _optimal_param(threshold, num_perm, 0.5, 0.5)


def _fmix32(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def signatures(normalized: Sequence[str], num_perm: int = 128, ngram: int = 2) -> np.ndarray:
    """(len, num_perm) uint32 MinHash signatures of normalized texts; an empty text is all 0xFFFFFFFF."""
    a, b = permutations(num_perm)
    out = np.full((len(normalized), num_perm), _EMPTY, dtype=np.uint32)
    hashes: list[int] = []
    owner: list[int] = []
    h32 = xxhash.xxh32_intdigest
    for i, text in enumerate(normalized):
        grams = shingles(text, ngram)
        hashes.extend(map(h32, grams))
        owner.extend([i] * len(grams))
    if not hashes:
        return out
    hv = _fmix32(np.fromiter(hashes, dtype=np.uint32, count=len(hashes)))
    docs = np.fromiter(owner, dtype=np.int64, count=len(owner))
    with np.errstate(over="ignore"):  # the wraparound is the mod 2^32
        for lo in range(0, len(hv), _CHUNK):
            hi = min(lo + _CHUNK, len(hv))
            phv = hv[lo:hi, None] * a + b
            # shingles of one text are contiguous: min over each run, then into that text's row
            d = docs[lo:hi]
            starts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
            rows = d[starts]  # distinct within a chunk (a text spans chunks at most at the edges)
            out[rows] = np.minimum(out[rows], np.minimum.reduceat(phv, starts, axis=0))
    return out


def _fmix64(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def band_keys(sigs: np.ndarray, b: int, r: int) -> np.ndarray:
    """(len, b) int64 keys, one per band of r hash values: equal bands give equal keys. A 64-bit mix of
    the band's values (different bands collide with odds ~2^-64, and every pair is confirmed on the
    whole signature anyway), computed column by column so it stays vectorised."""
    out = np.empty((len(sigs), b), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(b):
            h = np.full(len(sigs), np.uint64(0x9E3779B97F4A7C15) * np.uint64(j + 1), dtype=np.uint64)
            for k in range(j * r, (j + 1) * r):
                h = _fmix64(h ^ sigs[:, k].astype(np.uint64))
            out[:, j] = h
    return out.view(np.int64)


def similarity(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """MinHash Jaccard estimate of row pairs: the share of equal hash values (datasketch's `jaccard`)."""
    return np.count_nonzero(left == right, axis=1) / left.shape[1]
