"""MinHash signatures and LSH band keys for whole batches at once (numpy), on datasketch's arithmetic.

Why not datatrove's MinHash stages: they read and write datatrove `Document` files, shingle with their own
word tokenizer and keep an arbitrary cluster member, while draftset's decisions must follow its own normal
form (`keys.normalize`), its survivor order (native first, then repo, config, split, row) and record the
measured similarity. What we take from datasketch is its arithmetic: the same permutations
(`MinHash(seed=1)`, scheme affine32: MurmurHash3 fmix32 of each input hash, then `a*h+b` mod 2^32) and the
same band split (`_optimal_param`, with LSH_WEIGHTS), so a signature here equals datasketch's `MinHash` fed the same
shingle hashes (tests/pipeline/dedup/test_dedup_scale.py checks it) and the in-memory reference
(`near.NearIndex`, which uses these signatures) and the out-of-core stage see the same candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from itertools import chain

import numpy as np
import xxhash
from datasketch import MinHash
from datasketch.lsh import _optimal_param

_EMPTY = np.uint32(0xFFFFFFFF)  # datasketch's initial hash value: a text with no shingles keeps it
_CHUNK = 1 << 13  # shingles per numpy step: (128 x 8K) uint32 = 4 MiB of scratch, whatever the batch


@cache
def permutations(num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    """datasketch's (a, b) for `num_perm` (seeded, so every worker and run draws the same ones)."""
    a, b = MinHash(num_perm=num_perm, seed=1).permutations
    return a.astype(np.uint32).reshape(1, -1), b.astype(np.uint32).reshape(1, -1)


# LSH only proposes pairs and every pair is confirmed on the whole signature, so a false candidate costs
# one comparison while a missed one is a duplicate kept: weigh misses 4:1 (datasketch's default is 1:1).
# At threshold 0.8 that is 12 bands of 10 (vs 9 of 13): a pair at Jaccard 0.89 is proposed 98.9% of the
# time instead of 89%, a pair at 0.5 1.2% instead of 0.1%.
LSH_WEIGHTS = (0.2, 0.8)


@cache
def bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """(b, r): the band split datasketch's MinHashLSH picks for this threshold with LSH_WEIGHTS."""
    return _optimal_param(threshold, num_perm, *LSH_WEIGHTS)


# MurmurHash3's finalizer, (shifts, multipliers) by width: the 32-bit one is datasketch's affine32 pre-mix,
# the 64-bit one mixes band keys.
_FMIX = {
    np.dtype(np.uint32): ((16, 13, 16), (0x85EBCA6B, 0xC2B2AE35)),
    np.dtype(np.uint64): ((33, 33, 33), (0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53)),
}


def _fmix(h: np.ndarray) -> np.ndarray:
    """MurmurHash3 fmix32 or fmix64 of every element, by `h`'s dtype (uint32 or uint64); wraps mod 2^width."""
    (s1, s2, s3), (m1, m2) = _FMIX[h.dtype]
    word = h.dtype.type
    h = h ^ (h >> word(s1))
    h = h * word(m1)
    h = h ^ (h >> word(s2))
    h = h * word(m2)
    return h ^ (h >> word(s3))


def _combine(h: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """Hash of a word sequence from its words' hashes: order-sensitive, so "a b" and "b a" differ."""
    return _fmix(h * np.uint32(0x9E3779B1) + nxt)


def shingle_hashes(normalized: Sequence[str], ngram: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(hash, text number) of every word n-gram of each text, texts in order, vectorised over the batch.

    A shingle is `keys.shingles`' word n-gram (the whole text when it has fewer than n words), hashed as
    the combination of its words' xxh32 hashes: each word is hashed once in C, and the n-grams are built
    by numpy instead of as Python strings (the string way ran at a third of the speed)."""
    split = [t.encode("utf-8").split() for t in normalized]
    lengths = np.fromiter((len(w) for w in split), dtype=np.int64, count=len(split))
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, np.uint32), np.empty(0, np.int64)
    words = _fmix(np.fromiter(map(xxhash.xxh32_intdigest, chain.from_iterable(split)), np.uint32, count=total))
    ends = np.cumsum(lengths)  # one past each text's last word
    doc = np.repeat(np.arange(len(split)), lengths)
    left = ends[doc] - np.arange(total)  # words from this one to the end of its text, itself included
    # A shingle starts at every word with n-1 more in its text, and at the first word of a text shorter
    # than n (its one shingle is all its words); starts stay in text order, so no sort is needed.
    short = (lengths > 0) & (lengths < ngram)
    starts_here = left >= ngram
    starts_here[(ends - lengths)[short]] = True
    starts = np.flatnonzero(starts_here)
    grams = words[starts]
    for k in range(1, ngram):
        if short.any():  # a short text's shingle takes word k only while it has one
            longer = left[starts] > k
            grams[longer] = _combine(grams[longer], words[starts[longer] + k])
        else:  # the usual batch: every shingle has n words, no masked copies
            grams = _combine(grams, words[starts + k])
    return grams, doc[starts]


def signatures(normalized: Sequence[str], num_perm: int = 128, ngram: int = 2) -> np.ndarray:
    """(len, num_perm) uint32 MinHash signatures of normalized texts; an empty text is all 0xFFFFFFFF."""
    a, b = permutations(num_perm)
    out = np.full((len(normalized), num_perm), _EMPTY, dtype=np.uint32)
    grams, docs = shingle_hashes(normalized, ngram)
    if not len(grams):
        return out
    hv = _fmix(grams)  # datasketch's affine32 pre-mix of each input hash
    # (num_perm, chunk) layout in one reused buffer: reduceat along the contiguous axis is ~5x faster than
    # along rows, and a chunk of 8K shingles (4 MiB) stays in cache (measured: 140K vs 28K texts/s).
    buf = np.empty((num_perm, _CHUNK), dtype=np.uint32)
    for lo in range(0, len(hv), _CHUNK):
        hi = min(lo + _CHUNK, len(hv))
        view = buf[:, : hi - lo]
        np.multiply(a.T, hv[None, lo:hi], out=view)  # uint32 wraparound is the mod 2^32
        np.add(view, b.T, out=view)
        # shingles of one text are contiguous: min over each run, then into that text's row
        d = docs[lo:hi]
        starts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
        rows = d[starts]  # distinct within a chunk (a text spans chunks at most at the edges)
        out[rows] = np.minimum(out[rows], np.minimum.reduceat(view, starts, axis=1).T)
    return out


def band_keys(sigs: np.ndarray, b: int, r: int) -> np.ndarray:
    """(len, b) int64 keys, one per band of r hash values: equal bands give equal keys. A 64-bit mix of
    the band's values (different bands collide with odds ~2^-64, and every pair is confirmed on the
    whole signature anyway), computed column by column so it stays vectorised."""
    out = np.empty((len(sigs), b), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(b):
            h = np.full(len(sigs), np.uint64(0x9E3779B97F4A7C15) * np.uint64(j + 1), dtype=np.uint64)
            for k in range(j * r, (j + 1) * r):
                h = _fmix(h ^ sigs[:, k].astype(np.uint64))
            out[:, j] = h
    return out.view(np.int64)


def similarity(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """MinHash Jaccard estimate of row pairs: the share of equal hash values (datasketch's `jaccard`)."""
    return np.count_nonzero(left == right, axis=1) / left.shape[1]
