"""Relevance of one candidate to its category and the user's domain: the card's words, checked against what
the sampled rows contain (agents/content.py: shapes) and what they are about (agents/topics.py: words), with
the evidence in one line a reviewer can verify.

An off-domain verdict needs positive evidence: most sampled rows are about one other domain (insurance,
property, recipes ...) and few about the category's subject. A missing cue ("0/8 rows show code") is never
evidence by itself: a bug-fix answered in prose, a question about git, a preference pair about locks are
coding data without a code block. What neither confirms nor refutes stays in the plan, marked for review.

Verdicts (stored in candidates.relevance, the evidence in candidates.relevance_evidence):
  on_domain    the card matches and the rows show the category's content (or the category has no content kinds)
  on_content   the card matches nothing (terse, non-English), but the rows show the category's content: kept
  on_topic     the rows lack the category's content kinds (or contradict the card's words) but are about the
               category's subject (software): kept
  review       the rows neither show the category's content nor are about another domain: kept, flagged
               `relevance_review`, with what was and was not seen
  off_domain   most sampled rows are about another domain and few about the subject, and no row shows the
               category's substance (code, commands, tool calls, formulas, reasoning): dropped
  unmatched    the card names nothing and the category has no content kinds to look for (`native`)
  not_sampled  no rows could be read (gated, no viewer, failed): the card alone decides, as before
  card_only    the content check is off (FindConfig.content_relevance, the benchmark's "before"): card alone

Relevance (0..1) is half card, half content when rows were read: the card's share of matched terms, and the
share of sampled rows that show the category's content (or are about its subject; a quarter under review).
"""

from __future__ import annotations

import math
from typing import Any

from agents.categories import BY_KEY, KIND_NAMES, SUBSTANTIVE_KINDS, TERM_SENSES
from agents.topics import SOFTWARE

# A kind "shows" in a sample when at least this share of the sampled rows has it (2 of 8): one incidental
# line (a film's hacker typing `ls`, one code sample in a call-centre corpus) does not make a dataset agentic or
# coding data, while real data of a category shows its kind on most rows. The same share of rows about the
# category's subject keeps a candidate, and keeps another domain from being called dominant.
MIN_SHARE = 0.25
# Another domain is evidence when at least half the sampled rows are about it: a general mix touches many
# domains, a dataset of one other domain is about it throughout.
FOREIGN_SHARE = 0.5
REVIEW_CONTENT = 0.25  # the content half of relevance under review: unknown, neither shown nor refuted


def _kinds(kinds: tuple[str, ...]) -> str:
    return " or ".join(KIND_NAMES[k] for k in kinds) or "no content kinds"


def _about(topic: dict[str, Any], domain: str, n: int) -> str:
    words = ", ".join(topic["words"].get(domain, []))
    return f"{topic['about'].get(domain, 0)}/{n} sampled rows are about {domain}" + (f" ({words})" if words else "")


def judge(category: str, matched: list[str], card_relevance: float, signals: dict[str, Any] | None) -> dict[str, Any]:
    """{verdict, relevance, evidence, expected, senses, content} for one candidate.
    signals: agents.content.signals of the sampled rows, or None when content is not consulted."""
    brief = BY_KEY[category]  # every category declares its evidence (agents/categories/category.py)
    expected = brief.evidence
    if signals is None or not signals["rows"]:
        return {
            "verdict": "card_only" if signals is None else "not_sampled",
            "relevance": card_relevance,
            "evidence": "content not consulted: the card's words alone"
            if signals is None
            else "no rows sampled: the card's words alone",
            "expected": list(expected),
            "senses": {},
            "content": None,
        }
    n = signals["rows"]
    counts: dict[str, int] = signals["counts"]
    topic = signals.get("topics") or {"rows": n, "about": {}, "words": {}}
    enough = max(1, math.ceil(MIN_SHARE * n))
    shown = {k: counts[k] for k in expected if counts.get(k, 0) >= enough}
    # Per sense-bearing word the card used: do enough sampled rows show what the word means here?
    senses = {t: any(counts.get(k, 0) >= enough for k in TERM_SENSES[t]) for t in matched if t in TERM_SENSES}
    confirmed = sorted(t for t, ok in senses.items() if ok)
    contradicted = sorted(t for t, ok in senses.items() if not ok)
    seen = ", ".join(f"{KIND_NAMES[k]} {v}/{n}" for k, v in counts.items() if v and k != "varied") or "none"
    base = {"expected": list(expected), "senses": senses, "content": signals}

    subject = brief.subject
    about = topic["about"]
    foreign: str | None = max((d for d in about if d != SOFTWARE), key=lambda d: about[d], default=None)
    software_rows = about.get(SOFTWARE, 0)
    substance = {k for k in shown if k in SUBSTANTIVE_KINDS}
    # A category with no content kinds (`native`: the target's own answers) is about any topic: never elsewhere.
    # Rows about other domains, each row named by its own (a general instruction set spreads over many, no one
    # of which need dominate): positive evidence all the same, row by row, as long as few rows are about software.
    others = {d: c for d, c in about.items() if d != SOFTWARE and c}
    elsewhere = (
        foreign is not None
        and bool(expected)
        and (sum(others.values()) >= math.ceil(FOREIGN_SHARE * n) and software_rows < enough and not substance)
    )
    doubt = (bool(expected) and not shown) or (bool(contradicted) and not confirmed)
    if elsewhere and foreign is not None:
        spread = sorted(others, key=lambda d: -others[d])
        parts = (
            [_about(topic, foreign, n)]
            if others[foreign] >= math.ceil(FOREIGN_SHARE * n)
            else [
                f"{sum(others.values())}/{n} sampled rows are about other domains ("
                + ", ".join(f"{d} {others[d]}" for d in spread)
                + ")"
            ]
        ) + [f"{software_rows}/{n} about software"]
        if contradicted:
            parts.append(f"the card's {', '.join(repr(t) for t in contradicted)} in another sense")
        return {
            **base,
            "verdict": "off_domain",
            "relevance": 0.0,
            "evidence": f"off-domain: {'; '.join(parts)} (rows show: {seen})",
        }
    if doubt and subject is not None and software_rows >= enough:
        return {
            **base,
            "verdict": "on_topic",
            "relevance": round(0.5 * card_relevance + 0.5 * software_rows / n, 4),
            "evidence": f"kept on topic: {_about(topic, subject, n)}; {_kinds(expected)} in "
            f"{max((counts.get(k, 0) for k in expected), default=0)}/{n} (rows show: {seen})",
        }
    if doubt:
        most = max((counts.get(k, 0) for k in expected), default=0)
        other = f"; {_about(topic, foreign, n)}" if foreign else ""
        words = f"; the card's {', '.join(repr(t) for t in contradicted)} unconfirmed" if contradicted else ""
        return {
            **base,
            "verdict": "review",
            "relevance": round(0.5 * card_relevance + 0.5 * REVIEW_CONTENT, 4),
            "evidence": f"review: {most}/{n} sampled rows show {_kinds(expected)}, and no other domain dominates "
            f"them{other}{words} (rows show: {seen})",
        }
    content_share = max(shown.values()) / n if shown else (1.0 if not expected else 0.0)
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
