"""Which of a repo's configs (or splits) its card calls an evaluation set: never chosen for training.

A multi-config repo often ships its benchmark beside its training data ("the `hard` config is a held-out
evaluation set; do not train on it"), and the largest config is not always the training one. The card says
so in three places, all read here as untrusted text (searched, never executed):
  - the YAML `configs:` list: a config whose data files are all test/validation/eval splits;
  - the config's own name when it is an evaluation word (`test`, `eval`, `benchmark` ...);
  - a clause of the card's body that names exactly one config and an evaluation phrase.
Each hit carries the evidence, so the proposal can say why a config was passed over.
"""

from __future__ import annotations

import re
from typing import Any

EVAL_NAMES = {"test", "tests", "eval", "evals", "evaluation", "benchmark", "bench", "validation", "valid", "dev"}
EVAL_SPLITS = {"test", "validation", "valid", "dev", "eval", "evaluation"}
# The clause must give the config the role of evaluation data, not merely mention evaluation: a training config's
# own card speaks of "answers filtered by GPT-4 evaluation", "an LLM-as-judge evaluation rubric", "problems from
# the MATH benchmark training set" or "checked for contamination against benchmarks", none of which is a role.
_EVAL_PHRASE = re.compile(
    r"\b(?:held[- ]out|holdout"
    r"|(?:evaluation|eval|test|testing|benchmark(?:ing)?|validation|dev)[- ](?:set|split|subset|data|only|purposes?)"
    r"|(?:for|in) (?:evaluation|evaluating|testing|benchmarking)"
    r"|(?:is|are|as|serves as) (?:an? |the )?(?:\w+[- ]){0,2}(?:benchmark|evaluation|test)\b(?! (?:results|scores))"
    r"|(?:not|never)\s+(?:be\s+)?(?:used\s+)?(?:for\s+)?train(?:ing|ed)?|do\s+not\s+train)\b",
    re.IGNORECASE,
)
# No evidence: a negation, or the clause says the data was kept apart from evaluation sets (decontamination).
_NEGATED = re.compile(
    r"\bnot\s+(?:an?\s+)?(?:evaluation|eval|benchmark|test)\b|\bdecontaminat\w*"
    r"|\b(?:against|overlap(?:ping)? with|(?:removed|excluded|filtered out) from)\s+(?:\w+\s+){0,3}"
    r"(?:evaluation|eval|benchmark|test)",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[.;!?\n]+|,\s+(?:while|whereas|but)\s+|\s+(?:while|whereas)\s+")
MAX_CARD_CHARS = 200_000


def _words(name: str) -> set[str]:
    return set(re.split(r"[^a-z0-9]+", name.lower())) - {""}


def _yaml_evaluation(configs: list[str], card_data: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in card_data.get("configs") or []:
        if not isinstance(entry, dict) or entry.get("config_name") not in configs:
            continue
        files = entry.get("data_files")
        splits = (
            [str(f.get("split", "")).lower() for f in files if isinstance(f, dict)] if isinstance(files, list) else []
        )
        if splits and all(s in EVAL_SPLITS for s in splits):
            out[entry["config_name"]] = (
                f"the card's configs list gives {entry['config_name']!r} only {sorted(set(splits))} splits"
            )
    return out


def _mentions(clause: str, name: str) -> bool:
    """The clause names this config as a config: quoted (`hard`, 'hard', "hard") or beside the word config,
    subset or split ("the hard subset", "config hard"), so a common word ("all results") is no mention."""
    n = re.escape(name)
    quoted = rf"[`'\"]{n}[`'\"]"
    beside = rf"(?<![\w-]){n}(?![\w-])\s+(?:config(?:uration)?|subset|split)\b|\b(?:config(?:uration)?|subset|split)\s+{n}(?![\w-])"
    return re.search(f"{quoted}|{beside}", clause, re.IGNORECASE) is not None


def evaluation_names(names: list[str], card_text: str = "", card_data: dict[str, Any] | None = None) -> dict[str, str]:
    """name → why, for each config/split name the card (or the name itself) marks as evaluation data."""
    out = _yaml_evaluation(names, card_data or {})
    for name in names:
        if name not in out and _words(name) & EVAL_NAMES:
            out[name] = f"{name!r} is named as an evaluation set"
    for clause in _CLAUSE.split(card_text[:MAX_CARD_CHARS]):
        if not _EVAL_PHRASE.search(clause) or _NEGATED.search(clause):
            continue
        named = [n for n in names if _mentions(clause, n)]
        if len(named) == 1 and named[0] not in out:
            out[named[0]] = f"the card says: {' '.join(clause.split())[:160]!r}"
    return out
