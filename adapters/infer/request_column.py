"""One text column and no answer beside it: a set of prompts (regenerate mode) or a plain-text corpus (refused).

EAGLE-3 draft data is often prompts alone (Magpie prompt sets, chat-log prompt dumps, `instruction`-only or
`question`-only sets): the target writes the answers, so such a column maps to one user turn per row, exactly as
a turn list holding one user turn does. A corpus of documents (web pages, articles, code files, reviews with
labels) has no requests in it and stays refused as plain text. Each side needs evidence of its own:

    requests   the column's name is a request name (`prompt`, `instruction`, `question`, ...), the rows read as
               requests (they ask: a question mark, an interrogative or imperative opening, a polite request),
               the card calls its rows prompts / instructions / questions
    documents  the name is a document name (`text`, `content`, `article`, ...), the rows are long
               multi-paragraph prose or source code that asks nothing, the card calls the data a corpus for
               pretraining, or a class label sits beside each text (a classification set)

A request name maps unless the rows read as documents; any other name maps only when most rows read as requests
(nearly all under a document name, or under a card whose words for documents may be the questions' topic), no
class label sits beside them and nothing says documents. Never by repo name; the evidence is written into the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from adapters.detected import Detected

REQUEST_NAMES = (
    "prompt",
    "prompts",
    "instruction",
    "instructions",
    "question",
    "questions",
    "query",
    "queries",
    "request",
    "user_prompt",
    "user_message",
    "user_input",
    "user_query",
    "problem",
    "task",
    "human",
    "user",
)
DOCUMENT_NAMES = (
    "text",
    "content",
    "document",
    "article",
    "body",
    "passage",
    "code",
    "sentence",
    "story",
    "abstract",
    "review",
    "paragraph",
    "raw",
    "html",
    "markdown",
)
# Class labels (a quality `score` or `rating` is no class: prompt sets carry those as metadata).
LABEL_NAMES = ("label", "labels", "class", "category_id", "sentiment", "intent_id", "coarse_label", "fine_label")
# An opening that asks: interrogatives, requests and imperative task verbs (English; other scripts below).
ASKING = re.compile(
    r"^\W*(?:how|what|why|when|where|which|who|whom|whose|is|are|can|could|would|will|should|do|does|did|"
    r"please|write|explain|describe|create|generate|give|list|summari[sz]e|translate|implement|fix|debug|"
    r"rewrite|compose|draft|tell|show|help|find|compare|suggest|design|build|make|convert|calculate|solve|"
    r"classify|identify|provide|outline|refactor|optimi[sz]e|name|define|i need|i want|i'd like|i would like|"
    r"imagine|pretend|act as|let's|given)\b",
    re.IGNORECASE,
)
# The same in other scripts, where no word boundary follows: Chinese, Japanese, Korean and Russian openings.
ASKING_OTHER = re.compile(
    r"^\W*(?:请|請|如何|怎么|怎樣|为什么|為什麼|什么|什麼|帮我|幫我|给我|給我|写一|寫一|解释|解釋|能否|"
    r"どう|なぜ|教えて|書いて|説明して|"
    r"어떻게|왜|무엇|설명해|작성해|"
    r"как|почему|что|зачем|напиши|объясни|расскажи|помоги|сделай|опиши)",
    re.IGNORECASE,
)
# Verb-final scripts ask at the end: Korean and Japanese request endings, Chinese question particles.
ASKING_END = re.compile(r"(?:주세요|해 ?줘|하세요|할까요|나요|ください|下さい|教えて|ですか|ますか|吗|嗎|呢)\W{0,3}$")
QUESTION_MARK = re.compile(r"[?？]\s*$|[?？]\s")
CODE_LINE = re.compile(r"^\s*(?:def |class |import |from \S+ import|#include|function |public |package |const |let )")
# A card that says its rows are requests (specific phrases: a card's "questions? open an issue" says nothing).
CARD_REQUESTS = re.compile(
    r"\b(?:prompts|(?:user|human) (?:requests|queries|instructions|questions|messages|turns)|"
    r"(?:set|collection|corpus|dataset|list|dump) of (?:\w+ ){0,2}(?:prompts|instructions|questions|queries|requests)|"
    r"without (?:answers|responses|completions)|no (?:answers|responses|completions)|prompt[- ]only|"
    r"(?:answers|responses) (?:are|were) (?:removed|left out|not included)|to be (?:answered|regenerated))\b",
    re.IGNORECASE,
)
# A card that names the data's kind (a pretraining corpus, a crawl, a classification task) stands against any
# neutral column; a card word that is as often the topic of questions ("questions about news articles") stands
# only against rows that do not nearly all ask, like a document name.
CARD_DOCUMENTS = re.compile(
    r"\b(?:pre-?training|corpus|corpora|web ?crawl|crawled|common ?crawl|language model(?:l)?ing|fill-mask|"
    r"text-classification)\b",
    re.IGNORECASE,
)
CARD_DOCUMENT_TOPICS = re.compile(r"\b(?:documents|articles|source files)\b", re.IGNORECASE)
# Text about the request rather than an answer to it (Magpie's intent / knowledge / quality_explanation columns).
ABOUT_THE_REQUEST = re.compile(
    r"^\W*(?:the user(?:'s)?\b|the (?:user )?(?:query|question|prompt|instruction|request) "
    r"(?:is|asks|wants|requires|seems|appears|lacks|provides|mentions)\b|"
    r"to (?:solve|answer|complete|address) (?:this|the)\b.{0,80}?\bneeds? to know\b)",
    re.IGNORECASE,
)
ANNOTATION_SHARE = 0.8
# Share of rows that must ask when the name alone does not say "request": (no card evidence, a card that says
# its rows are prompts), for a neutral name and for a document name (`text`, `content`).
REQUEST_SHARE, REQUEST_SHARE_CARD = 0.6, 0.4
DOCUMENT_NAME_SHARE, DOCUMENT_NAME_SHARE_CARD = 0.85, 0.5
LONG_DOCUMENT = 600  # mean characters of a row read as a document when it also has paragraphs and asks nothing


@dataclass
class Reading:
    asking: int  # rows that open or end as a request
    paragraphs: int  # rows with two or more blank-line paragraphs
    code: int  # rows that are source code (several code lines, no request)
    rows: int
    mean_chars: float

    @property
    def share(self) -> float:
        return self.asking / self.rows if self.rows else 0.0

    @property
    def documents(self) -> bool:
        """The rows are documents: long prose in paragraphs or source files, and few of them ask anything."""
        asks_little = self.share < 0.2
        long_prose = self.mean_chars >= LONG_DOCUMENT and self.paragraphs >= 0.5 * self.rows
        return asks_little and (long_prose or self.code >= 0.5 * self.rows)

    def __str__(self) -> str:
        return (
            f"{self.asking}/{self.rows} rows ask (a question, a request or a task), mean {self.mean_chars:.0f} "
            f"chars, {self.paragraphs} in paragraphs, {self.code} source code"
        )


def asks(text: str) -> bool:
    """The text opens or ends as a request: a question, an interrogative or imperative opening, in its first or
    last paragraph (a pasted passage followed by "Summarize the text above.")."""
    text = text.strip()
    head, tail = text[:400], text.rsplit("\n\n", 1)[-1][:400]
    opens = any(rx.match(part) for rx in (ASKING, ASKING_OTHER) for part in (head, tail))
    ends = bool(ASKING_END.search(text[-200:]))
    return opens or ends or bool(QUESTION_MARK.search(head)) or text.endswith(("?", "？"))


def read_rows(values: list[str]) -> Reading:
    asking = paragraphs = code = 0
    for v in values:
        text = v.strip()
        asking += asks(text)
        paragraphs += text.count("\n\n") >= 2
        code += sum(bool(CODE_LINE.match(line)) for line in text.splitlines()[:40]) >= 2
    return Reading(asking, paragraphs, code, len(values), sum(map(len, values)) / max(len(values), 1))


def _label_beside(rows: list[dict[str, Any]], column: str) -> str | None:
    """A class label column beside the text: few distinct short values on every row (a classification set)."""
    for k in dict.fromkeys(k for r in rows for k in r):
        if k == column or k.lower() not in LABEL_NAMES:
            continue
        values = [r.get(k) for r in rows if r.get(k) is not None]
        if values and all(isinstance(v, (int, bool)) or (isinstance(v, str) and len(v) <= 30) for v in values):
            if len({str(v) for v in values}) <= max(2, len(values) // 3):
                return k
    return None


def requests_only(d: Detected, rows: list[dict[str, Any]], column: str, card_text: str = "") -> bool:
    """Map the one text column as the prompt of a regenerate-mode set when the evidence says it holds requests;
    else refuse it as plain text, naming the evidence both ways. True when mapped."""
    values = [v for r in rows if isinstance(v := r.get(column), str) and v.strip()]
    reading = read_rows(values)
    low = column.lower()
    named = low in REQUEST_NAMES or any(low.endswith(f"_{n}") or low.startswith(f"{n}_") for n in REQUEST_NAMES[:8])
    card_says = CARD_REQUESTS.search(card_text or "")
    card_docs = CARD_DOCUMENTS.search(card_text or "") or (
        CARD_DOCUMENT_TOPICS.search(card_text or "") if reading.share < DOCUMENT_NAME_SHARE else None
    )
    label = _label_beside(rows, column)
    # a document name raises the bar: a `text` column must ask on nearly every row to be read as prompts; a card
    # that says its rows are prompts lowers it (dumps where many prompts are statements or pasted text)
    doc_bar = DOCUMENT_NAME_SHARE_CARD if card_says else DOCUMENT_NAME_SHARE
    doc_named = low in DOCUMENT_NAMES and not named and reading.share < doc_bar
    against = [
        *([f"{column!r} is a document name and not nearly every row asks"] if doc_named else []),
        *(["the rows read as documents"] if reading.documents else []),
        *([f"column {label!r} labels each text (a classification set)"] if label and not named else []),
        *([f"the card speaks of {card_docs.group(0)!r}"] if card_docs and not card_says else []),
    ]
    if named:  # questions with a class label (question classification) are still questions to answer
        mapped = not reading.documents
    else:
        mapped = reading.share >= (REQUEST_SHARE_CARD if card_says else REQUEST_SHARE) and not against
    why = f"{reading}" + (f"; the card speaks of {card_says.group(0)!r}" if card_says else "")
    if not mapped:
        d.refuse(
            "plain_text",
            f"one text column {column!r} and no second one to answer it; not a set of prompts: {why}"
            + (f"; against: {', '.join(against)}" if against else ""),
        )
        return False
    d.decide(
        "layout",
        "columns",
        f"one text column {column!r} of requests and no answers: a prompt set, the target writes the answers",
    )
    d.decide(
        "columns",
        {"prompt": [column], "response": None},
        f"prompt from {column!r} ({'a request name; ' if named else ''}{why}); no answer column: regenerate mode",
        review=not named,
    )
    return True


def split_request(d: Detected, rows: list[dict[str, Any]], prompt: str, rest: str) -> bool:
    """A request split over two columns and no answer: `rest` carries on the sentence `prompt` left open on most
    rows, and the joined text asks on most of them. Read as prompts alone (the two joined with a space), never
    as a prompt with `rest` for its answer, which regenerate mode would drop with half of every request. A
    completion task (a prefix and the text that continues it) joins into prose that asks nothing."""
    from adapters.infer.answer_head import starts_in_code
    from adapters.infer.continuation import CONTINUED_SHARE, MIN_CONTINUED_ROWS, continuation

    # Rows whose second column opens in code cannot tell a request's rest from a code answer (`def f(x):` after
    # "Write a function to reverse a string"): they are left out, and they must not be most of the rows.
    prose = [r for r in rows if isinstance(r.get(rest), str) and not starts_in_code(r[rest].lstrip())]
    prose_first = [r for r in rows if isinstance(r.get(prompt), str) and not starts_in_code(r[prompt].lstrip())]
    # whichever way the pair was read: the column that carries on the other's sentence is the request's rest
    for first, second, decidable in ((prompt, rest, prose), (rest, prompt, prose_first)):
        carried, both = continuation(decidable, first, second)
        if both >= max(MIN_CONTINUED_ROWS, 0.5 * len(rows)) and carried >= CONTINUED_SHARE * both:
            prompt, rest = first, second
            break
    else:
        return False
    joined = [
        f"{a.rstrip()} {b.lstrip()}"
        for r in rows
        if isinstance(a := r.get(prompt), str) and isinstance(b := r.get(rest), str)
    ]
    reading = read_rows(joined)
    if reading.share < REQUEST_SHARE:
        return False
    d.decide(
        "layout",
        "columns",
        f"one request split over {prompt!r} and {rest!r} and no answer: a prompt set, the target writes the answers",
    )
    d.decide(
        "columns",
        {"prompt": [prompt, rest], "response": None, "continues": [rest]},
        f"{rest!r} continues the sentence of {prompt!r} on {carried}/{both} rows and the joined text asks "
        f"({reading}): one prompt (joined with a space), no answer column: regenerate mode",
        review=True,
    )
    return True


def request_annotations(rows: list[dict[str, Any]], columns: list[str]) -> dict[str, str]:
    """Text columns that describe the request in the third person on nearly every row ("The user wants to ...",
    "To solve this problem, the models need to know ..."): annotations of the prompt, left out with that reason,
    never read as its answer. Column → reason."""
    out = {}
    for k in columns:
        values = [v for r in rows if isinstance(v := r.get(k), str) and v.strip()]
        hits = sum(bool(ABOUT_THE_REQUEST.match(v)) for v in values)
        if len(values) >= 3 and hits >= ANNOTATION_SHARE * len(values):
            out[k] = f"annotation of the request ({hits}/{len(values)} rows describe it, e.g. {values[0][:40]!r})"
    return out
