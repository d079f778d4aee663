"""Turn one inspected Hub repo into a scored `Candidate` with explicit reasons and flags.

The score is a sum of named parts so every number a user sees has a reason beside it:
relevance to domain and category (the card's words checked against the sampled rows' content,
agents/relevance.py), domain fit of the category, a usable conversation/prompt column, license,
size, popularity and target-native data; flags subtract.
"""

from __future__ import annotations

import math
from typing import Any

from adapters.infer.detect import family_patterns, names_target
from adapters.infer.trial import summarise
from agents import inspection, relevance
from agents.categories import BY_KEY, category_weights, tokens
from agents.configuration import FindConfig
from agents.state import Candidate

STOPWORDS = {"and", "the", "for", "with", "data", "dataset", "of", "a", "in", "to", "more"}
NO_LICENSE = {"", "unknown", "none", "other", "unlicensed"}


def _card_field(hit: dict[str, Any], key: str) -> list[str]:
    """A card YAML field as a list of strings, else the matching `key:` tags."""
    value = hit["card_data"].get(key)
    if value is None:
        value = [t.split(":", 1)[1] for t in hit["tags"] if t.startswith(f"{key}:")]
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def _rows_and_bytes(configs: list[dict[str, Any]]) -> tuple[int | None, int | None]:
    """The largest config's rows and bytes (configs often overlap: `all` ⊇ `code`)."""
    if not configs:
        return None, None
    per_config: dict[str, list[int]] = {}
    for c in configs:
        acc = per_config.setdefault(c["config"], [0, 0])
        acc[0] += c.get("num_rows") or 0
        acc[1] += c.get("num_bytes") or 0
    rows, size = max(per_config.values())
    return rows, size


def score_candidate(
    category: str, domain: str, hit: dict[str, Any], facts: dict[str, Any], config: FindConfig
) -> Candidate:
    cat = BY_KEY[category]
    reasons: list[str] = []
    flags: list[str] = []
    score = 0.0

    def part(points: float, why: str) -> None:
        nonlocal score
        score += points
        reasons.append(f"{points:+.2f} {why}")

    # Relevance: lexical overlap of domain + category terms with id, tags, card.
    pretty = " ".join(_card_field(hit, "pretty_name"))
    doc = set(tokens(" ".join([hit["repo_id"], pretty, " ".join(hit["tags"]), facts.get("card_text", "")[:4000]])))
    terms = (set(tokens(domain)) | set(cat.keywords)) - STOPWORDS
    matched = sorted(terms & doc)
    card_relevance = min(1.0, len(matched) / 4)

    sampled = next((c for c in facts["configs"] if c["rows"]), None)
    features, rows = inspection.sampled(facts)
    structure = inspection.detect_structure(features, rows, facts.get("card_text", ""))
    detected = structure["detected"]
    records = inspection.sample_records(structure, rows)
    stats = summarise(records)
    signals = inspection.content_of(facts) if config.content_relevance else None
    verdict = relevance.judge(category, matched, card_relevance, signals)
    part(
        0.35 * verdict["relevance"],
        f"relevance: card matches {', '.join(matched[:5]) or 'nothing'}; {verdict['evidence']}",
    )
    if verdict["verdict"] == "off_domain":
        flags.append("off_domain")
    elif verdict["verdict"] == "review":  # kept in the plan, with its evidence, for a person to settle
        flags.append("relevance_review")
    weights = category_weights(domain)
    part(0.15 * weights[category] / max(weights.values()), f"domain fit of {cat.title}")
    if structure["layout"] == "messages":
        part(0.15, f"conversation column {structure['field']!r}")
    elif structure["layout"] == "columns":
        part(0.10, f"prompt column {structure['field']!r}")
    elif facts["access"] == "ok":
        reasons.append(f"+0.00 no conversation or prompt column ({structure['why'] or 'no rows'})")

    license_ = (_card_field(hit, "license") or [""])[0].lower()
    if license_ in NO_LICENSE:
        flags.append("no_license")
        part(-0.10, "no license")
    else:
        part(0.05, f"license {license_}")
    if hit["gated"] or facts["access"] == "denied":
        flags.append("gated")
        part(-0.05, "gated: needs an accepted access request and HF_TOKEN")
    languages = [lang.lower() for lang in _card_field(hit, "language") if lang]
    if languages and "en" not in languages and "multilingual" not in languages:
        flags.append("non_english")
        part(-0.20, f"not English: {', '.join(languages)}")
    if facts["access"] == "error":
        flags.append("inspect_failed")
    elif facts.get("card_error"):
        flags.append("bad_card")
        reasons.append(f"+0.00 {facts['card_error']}")

    evaluation = facts.get("evaluation_configs") or {}  # the card's evaluation sets are no training rows
    n_rows, size_bytes = _rows_and_bytes([c for c in facts["configs"] if c["config"] not in evaluation])
    if n_rows == 0:
        flags.append("empty")
    if n_rows:
        part(0.10 * min(1.0, math.log10(n_rows + 1) / 5), f"{n_rows:,} rows")
    downloads = int(hit.get("downloads") or 0)
    part(0.05 * min(1.0, math.log10(downloads + 1) / 6), f"{downloads:,} downloads")

    why_not_text = inspection.non_text(hit["tags"], features, rows, detected)
    if why_not_text:
        flags.append("non_text")
    native_why = names_target(facts.get("card_text", ""), rows, family_patterns(config.target_families))
    if native_why:
        part(0.15, f"target-native: {native_why}")
        mode = "native"
    else:
        mode = "regenerate"

    kept_on_content = verdict["verdict"] in ("on_content", "on_topic", "review")
    irrelevant = (
        why_not_text is not None
        or "empty" in flags
        or verdict["verdict"] == "off_domain"
        or (not matched and not kept_on_content)
        or verdict["relevance"] < config.min_relevance
        or (structure["layout"] == "none" and facts["access"] in ("ok", "error"))
    )
    if why_not_text:
        reasons.append(f"irrelevant: not text ({why_not_text})")
    cpt = config.capacity.chars_per_token
    return Candidate(
        repo_id=hit["repo_id"],
        revision=hit.get("sha"),
        category=category,
        score=round(score, 4),
        reasons=reasons,
        downloads=downloads,
        likes=int(hit.get("likes") or 0),
        license=None if license_ in NO_LICENSE else license_,
        gated="gated" in flags,
        tags=hit["tags"],
        n_rows=n_rows,
        size_bytes=size_bytes,
        card_summary=" ".join(facts.get("card_text", "").split())[:240],
        mode=mode,
        est_yield=round(stats["yield"], 4),
        prompt_tokens=stats["prompt_chars"] / cpt,
        response_tokens=stats["response_chars"] / cpt,
        flags=flags,
        status="irrelevant" if irrelevant else "relevant",
        relevance={k: verdict[k] for k in ("verdict", "evidence", "expected", "senses")}
        | {"content": signals["counts"] if signals else None, "rows_read": signals["rows"] if signals else 0},
        schemas=[
            {
                "config": c["config"],
                "split": c["split"],
                "features": c["features"],
                "sample_rows": c["rows"],
                "detected": detected.to_json() if c is sampled else None,
            }
            for c in facts["configs"]
        ],
    )
