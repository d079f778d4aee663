"""Relevance of one candidate to its category and the user's domain: the card's words, checked against what
the sampled rows contain (agents/content.py), with the evidence in one line a reviewer can verify.

Verdicts (stored in candidates.relevance, the evidence in candidates.relevance_evidence):
  on_domain    the card matches and the rows show the category's content (or the category has no content kinds)
  on_content   the card matches nothing (terse, non-English), but the rows show the category's content: kept
  off_domain   rows were sampled and either too few (under MIN_SHARE) show the category's content, or the card's
               words that have a sense here (agent, tool, code, coding, chat ...) are all contradicted: dropped
  unmatched    the card names nothing and the category has no content kinds to look for (`native`)
  not_sampled  no rows could be read (gated, no viewer, failed): the card alone decides, as before
  card_only    the content check is off (FindConfig.content_relevance, the benchmark's "before"): card alone

Relevance (0..1) is half card, half content when rows were read: the card's share of matched terms, and the
share of sampled rows that show the category's content.
"""

from __future__ import annotations

import math
from typing import Any

from agents.categories import CONTENT_EVIDENCE, KIND_NAMES, TERM_SENSES

# A kind "shows" in a sample when at least this share of the sampled rows has it (2 of 8): one incidental
# line (a film's hacker typing `ls`, one code sample in a call-centre corpus) does not make a dataset agentic or
# coding data, while real data of a category shows its kind on most rows.
MIN_SHARE = 0.25


def _kinds(kinds: tuple[str, ...]) -> str:
    return " or ".join(KIND_NAMES[k] for k in kinds)


def judge(category: str, matched: list[str], card_relevance: float, signals: dict[str, Any] | None) -> dict[str, Any]:
    """{verdict, relevance, evidence, expected, senses, content} for one candidate.
    signals: agents.content.signals of the sampled rows, or None when content is not consulted."""
    expected = CONTENT_EVIDENCE[category]
    if signals is None:
        return {
            "verdict": "card_only",
            "relevance": card_relevance,
            "evidence": "content not consulted: the card's words alone",
            "expected": list(expected),
            "senses": {},
            "content": None,
        }
    n = signals["rows"]
    if not n:
        return {
            "verdict": "not_sampled",
            "relevance": card_relevance,
            "evidence": "no rows sampled: the card's words alone",
            "expected": list(expected),
            "senses": {},
            "content": None,
        }
    counts: dict[str, int] = signals["counts"]
    enough = max(1, math.ceil(MIN_SHARE * n))
    shown = {k: counts[k] for k in expected if counts.get(k, 0) >= enough}
    # Per sense-bearing word the card used: do enough sampled rows show what the word means here?
    senses = {t: any(counts.get(k, 0) >= enough for k in TERM_SENSES[t]) for t in matched if t in TERM_SENSES}
    confirmed = sorted(t for t, ok in senses.items() if ok)
    contradicted = sorted(t for t, ok in senses.items() if not ok)
    content_share = max(shown.values()) / n if shown else (1.0 if not expected else 0.0)
    seen = ", ".join(f"{KIND_NAMES[k]} {v}/{n}" for k, v in counts.items() if v and k != "varied") or "none"
    base = {"expected": list(expected), "senses": senses, "content": signals}

    lacks_category = bool(expected) and not shown
    words_misused = bool(contradicted) and not confirmed
    if lacks_category or words_misused:
        parts = []
        if lacks_category:
            most = max((counts.get(k, 0) for k in expected), default=0)
            parts.append(f"{most}/{n} sampled rows show {_kinds(expected)}")
        if contradicted:
            kinds = tuple(dict.fromkeys(k for t in contradicted for k in TERM_SENSES[t]))
            parts.append(f"the card's {', '.join(repr(t) for t in contradicted)} with no {_kinds(kinds)} in the rows")
        opening = signals["opening"]
        if len(opening.get("shared", "").split()) >= 3:
            parts.append(f"every prompt opens {opening['shared']!r}")
        elif opening["of"] >= 3 and opening["rows"] == opening["of"]:
            parts.append(f"every prompt opens {opening['words']!r}")
        return {
            **base,
            "verdict": "off_domain",
            "relevance": 0.0,
            "evidence": f"off-domain: {'; '.join(parts)} (rows show: {seen})",
        }
    relevance = round(0.5 * card_relevance + 0.5 * content_share, 4)
    found = ", ".join(f"{KIND_NAMES[k]} {v}/{n}" for k, v in shown.items()) or "no content kinds for this category"
    if not matched and not shown:  # `native`: no content kinds, so only the card (or model names) can match
        return {
            **base,
            "verdict": "unmatched",
            "relevance": 0.0,
            "evidence": "the card names none of the category's words",
        }
    if not matched:
        return {
            **base,
            "verdict": "on_content",
            "relevance": relevance,
            "evidence": f"kept on content: {found}; the card names none of the category's words",
        }
    return {**base, "verdict": "on_domain", "relevance": relevance, "evidence": f"content confirms: {found}"}
