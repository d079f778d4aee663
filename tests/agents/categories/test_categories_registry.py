"""The search agents' registry (agents/categories/): one brief per file, every per-category fact on the brief,
and every count of agents in code and docs equal to the registry's."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from agents import content
from agents.categories import BY_KEY, CATEGORIES, KIND_NAMES, Category, briefs, category_weights
from agents.categories.registry import RegistryError, discover
from agents.relevance import judge
from agents.topics import SOFTWARE

ROOT = Path(__file__).resolve().parents[3]
BRIEFS = Path(briefs.__path__[0])


def test_every_brief_file_is_one_registered_category():
    files = sorted(p.stem for p in BRIEFS.glob("*.py") if p.stem != "__init__")
    assert [c.key for c in CATEGORIES] == files and set(BY_KEY) == set(files)


def test_content_kinds_have_one_home():
    assert content.KINDS == tuple(KIND_NAMES)
    doc = content.__doc__ or ""
    undocumented = [k for k in KIND_NAMES if not re.search(rf"^\s+{k}\s", doc, re.MULTILINE)]
    assert undocumented == []  # agents/content.py's docstring describes every kind it counts


def _brief(**overrides):
    fields = {"key": "x", "title": "t", "intent": "i", "seed_queries": ("q",), "keywords": ("k",), "evidence": ()}
    return {**fields, **overrides}


def test_a_brief_without_evidence_or_with_an_unknown_kind_or_subject_is_refused():
    without = _brief()
    del without["evidence"]
    with pytest.raises(ValidationError, match="evidence"):
        Category(**without)
    with pytest.raises(ValidationError, match="unknown content kinds \\['haiku'\\]"):
        Category(**_brief(evidence=("code", "haiku")))
    with pytest.raises(ValidationError, match="unknown subject 'poetry'"):
        Category(**_brief(subject="poetry"))


def _package(tmp_path, monkeypatch, name: str, files: dict[str, str]):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for stem, text in files.items():
        (folder / f"{stem}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__(name)
    return sys.modules[name]


DECLARE = "from agents.categories.category import Category\nCATEGORY = Category(**{fields!r})\n"


def test_discovery_adds_a_new_file_and_refuses_a_misnamed_or_empty_one(tmp_path, monkeypatch):
    good = _package(
        tmp_path,
        monkeypatch,
        "briefs_ok",
        {
            "poems": DECLARE.format(fields=_brief(key="poems", evidence=("long_prose",))),
            "apps": DECLARE.format(fields=_brief(key="apps", evidence=("code",), subject=SOFTWARE)),
        },
    )
    assert [c.key for c in discover(good)] == ["apps", "poems"]
    misnamed = _package(tmp_path, monkeypatch, "briefs_bad", {"poems": DECLARE.format(fields=_brief(key="verse"))})
    with pytest.raises(RegistryError, match="briefs_bad/poems.py declares key 'verse'"):
        discover(misnamed)
    empty = _package(tmp_path, monkeypatch, "briefs_none", {"helpers": "X = 1\n"})
    with pytest.raises(RegistryError, match="briefs_none/helpers.py declares no CATEGORY"):
        discover(empty)


def test_a_domain_word_lifts_exactly_the_categories_whose_brief_names_it():
    flat = category_weights("zzz")
    for word in {w for c in CATEGORIES for w in c.affinity}:
        gain = {k: w / flat[k] for k, w in category_weights(word).items()}
        lifted = {c.key for c in CATEGORIES if c.affinity.get(word, 0) > 0}
        assert min(gain[k] for k in lifted) > max((gain[k] for k in gain if k not in lifted), default=0), word


def _signals(n: int, counts: dict[str, int], about: dict[str, int]) -> dict:
    return {"rows": n, "counts": counts, "topics": {"rows": n, "about": about, "words": {}}}


@pytest.mark.parametrize("category", [c for c in CATEGORIES if c.evidence], ids=lambda c: c.key)
def test_each_category_s_evidence_confirms_it_and_its_absence_with_another_domain_refutes_it(category):
    """Every category with evidence kinds: rows showing one of its kinds confirm it; rows showing none, all
    about another domain, are positive evidence against it."""
    shows = judge(category.key, list(category.keywords[:1]), 1.0, _signals(8, {category.evidence[0]: 8}, {}))
    assert shows["verdict"] == "on_domain" and shows["expected"] == list(category.evidence), shows
    elsewhere = judge(category.key, [], 0.5, _signals(8, {}, {"insurance": 8}))
    assert elsewhere["verdict"] == "off_domain", elsewhere


def test_an_unknown_category_fails_loudly():
    with pytest.raises(KeyError):
        judge("no-such-category", [], 0.5, _signals(8, {}, {}))


# A count of agents written in prose goes stale with the next brief: docs say "one agent per category".
COUNTED = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d+)"
    r"\s+(?:concurrent\s+|search\s+|category\s+)*(?:agents|category briefs|categories)\b|× \d+ category",
    re.IGNORECASE,
)


def test_no_doc_or_docstring_writes_down_the_number_of_agents():
    paths = [ROOT / "README.md", ROOT / "DESIGN.md"]
    paths += [p for d in ("agents", "pipeline", "eval") for p in sorted((ROOT / d).rglob("*.py"))]
    written = [
        f"{path.relative_to(ROOT)}: {m.group(0)!r}"
        for path in paths
        for m in COUNTED.finditer(path.read_text(encoding="utf-8"))
    ]
    assert written == [], f"say 'one agent per category': the registry has {len(CATEGORIES)}"
