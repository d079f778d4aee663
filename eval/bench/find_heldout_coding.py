"""On-domain rows for the held-out relevance hubs (eval/bench/find_heldout_hub.py): coding data *without* the
shapes the old check wanted (a code block, a shell line): bug fixes answered in prose, chats about git and build
tools, agent episodes whose commands sit in tags in the assistant's text, preference pairs about concurrency,
code review in prose. Two wordings per family (FAMILIES: the first voice, STYLES: another); the hub's seed picks
one per repo and the facts per row. Written for this bench; no dataset's text.
"""

from __future__ import annotations

import random
from typing import Any

Row = dict[str, Any]


def _pick(rng: random.Random, pool: list[Any]) -> Any:
    return pool[rng.randrange(len(pool))]


LANGS = ["Python", "Go", "Rust", "TypeScript", "Java", "Kotlin", "C#", "Ruby"]


BUGS = [
    ("the loop stops one item early", "the range bound excludes the last index", "iterate to the length itself"),
    ("the cache never expires", "the timestamp is compared in seconds against milliseconds", "convert both sides"),
    ("a request hangs forever", "the HTTP client has no timeout set", "pass an explicit timeout"),
    ("the config file is ignored", "the loader reads the path relative to the working directory", "resolve it"),
    ("sorting puts 10 before 2", "the values are strings, compared lexically", "parse them as integers first"),
    ("a null pointer exception on startup", "the field is read before the constructor assigns it", "move the read"),
    ("the test passes alone but fails in the suite", "a module-level variable leaks state", "reset it per test"),
    ("dates shift by one day", "the parser assumes UTC while the database stores local time", "store UTC"),
]


TOOLS_Q = [
    (
        "git",
        "I committed to main by mistake; how do I move the commit to a new branch without losing it?",
        "Create the branch at the current commit, then reset main back one commit; the new branch keeps the work.",
    ),
    (
        "git",
        "How do I undo a rebase that went wrong after I resolved three conflicts?",
        "The reflog remembers where the branch pointed before the rebase; reset the branch to that entry.",
    ),
    (
        "cmake",
        "CMake finds the wrong compiler on my machine. Where does it pick it up?",
        "It reads the CC and CXX environment variables on the first configure and caches them; clear the build "
        "directory's cache file and configure again with the variables set.",
    ),
    (
        "gradle",
        "Gradle builds are slow on CI even though nothing changed. What can I cache?",
        "Enable the build cache and keep the dependency directory between runs; the daemon is not reused on CI.",
    ),
    (
        "npm",
        "npm install keeps changing the lock file on every machine. Why?",
        "Different npm versions write different lock formats; pin the version in the package manifest's engines "
        "field and use a clean install in CI.",
    ),
    (
        "docker",
        "My Docker image is 2 GB. How do I make it smaller?",
        "Use a multi-stage build so compilers stay in the build stage, and start from a slim base image.",
    ),
    (
        "pip",
        "pip says two packages need incompatible versions of a dependency. How do I find which ones?",
        "Ask the resolver to explain the conflict; it names both requirements, then pin one compatible version.",
    ),
    (
        "make",
        "Make rebuilds everything although I changed one header. Is the dependency graph wrong?",
        "The object files depend on every header through a wildcard; generate per-file dependencies instead.",
    ),
]


CONCURRENCY = [
    (
        "Two threads increment a shared counter and the total is too low. Why?",
        "The increment is a read, an add and a write; without a mutex or an atomic operation two threads can read "
        "the same value and one update is lost. Guard it with a lock or use an atomic integer.",
        "Threads are just slow sometimes; add a sleep so they take turns.",
    ),
    (
        "How do I avoid a deadlock when two functions each need two locks?",
        "Always take the locks in one global order, or take both with a single call that acquires them together.",
        "Deadlocks cannot happen if you use enough threads.",
    ),
    (
        "Should I use async/await or threads for thousands of network requests?",
        "For I/O-bound work async code scales better: one event loop waits on many sockets without a thread each.",
        "Use one thread per request; the operating system will manage it.",
    ),
    (
        "What is a race condition in a web handler that checks stock and then sells?",
        "Two requests can both pass the check before either writes; do the check and the update in one "
        "transaction or with a conditional update in the database.",
        "It is not a race condition because the handler is fast.",
    ),
]


AGENT_TASKS = [
    (
        "the unit tests in the parser package fail after the upgrade",
        'grep -rn "parse_date" src/',
        "pytest tests/test_parser.py -x",
    ),
    ("the CLI crashes when the config file is missing", "cat src/cli/main.py", "python -m cli --help"),
    ("a typo in the README breaks the docs build", "git diff HEAD~1 -- docs/", "make docs"),
    ("the service returns 500 on empty payloads", "sed -n 40,80p app/handlers.py", "pytest -k empty_payload"),
]


TAGS = [("<bash>", "</bash>"), ("<execute>", "</execute>"), ("<cmd>", "</cmd>"), ("<command>", "</command>")]


REVIEW = [
    "renames the retry helper and changes its default from 3 attempts to 5",
    "moves the database connection into a context manager",
    "adds a new endpoint that returns the user's last ten orders",
    "replaces the hand-written JSON parsing with the standard library's decoder",
]


def prose_bugfix(rng: random.Random, i: int) -> Row:
    symptom, cause, fix = _pick(rng, BUGS)
    lang = _pick(rng, LANGS)
    q = f"In my {lang} service {symptom}. I have checked the logs and the function's inputs look right. What is wrong?"
    a = (
        f"This usually means {cause}. Read the variable's value just before the comparison and you will see it. "
        f"The fix is to {fix}; add a unit test that covers the case so the bug does not come back."
    )
    return {"question": q, "answer": a, "language": lang.lower()}


def tool_chat(rng: random.Random, i: int) -> Row:
    tool, q, a = _pick(rng, TOOLS_Q)
    follow = _pick(rng, ["Does that work on Windows too?", "Will the other developers notice?", "And on CI?"])
    return {
        "conversations": [
            {"from": "human", "value": q},
            {"from": "gpt", "value": a},
            {"from": "human", "value": follow},
            {"from": "gpt", "value": f"Yes; {tool} behaves the same there, as long as everyone uses the same version."},
        ],
        "topic": tool,
    }


def tagged_episode(rng: random.Random, i: int) -> Row:
    task, look, check = _pick(rng, AGENT_TASKS)
    open_, close = _pick(rng, TAGS)
    env = _pick(rng, ["environment", "env", "observation"])
    return {
        "trajectory": [
            {"speaker": "user", "text": f"Task: {task}. Fix it and make the tests pass."},
            {"speaker": "agent", "text": f"I will look at the code first.\n{open_}{look}{close}"},
            {"speaker": env, "text": "src/parser/dates.py:41: def parse_date(value, fmt=None):"},
            {
                "speaker": "agent",
                "text": f"Found it; the default format is wrong. Running the tests.\n{open_}{check}{close}",
            },
            {"speaker": env, "text": f"{rng.randint(3, 40)} passed in {rng.randint(1, 9)}.{rng.randint(0, 99):02d}s"},
        ]
    }


def concurrency_pair(rng: random.Random, i: int) -> Row:
    prompt, good, bad = _pick(rng, CONCURRENCY)
    return {"prompt": prompt, "chosen": good, "rejected": bad}


def review_prose(rng: random.Random, i: int) -> Row:
    change = _pick(rng, REVIEW)
    return {
        "instruction": f"Review this pull request: it {change}. What should the author check before merging?",
        "output": "Check that every caller still passes the arguments it expects, that the tests cover the new "
        "default, and that the changelog mentions it; otherwise the refactor looks safe to merge.",
    }


# Second wordings, in another voice: a repo draws one style per family from the seed, so a seed changes how the
# rows are written, not only which facts fill them.
def prose_bugfix_terse(rng: random.Random, i: int) -> Row:
    symptom, cause, fix = _pick(rng, BUGS)
    return {
        "messages": [
            {"role": "user", "content": f"why does this happen: {symptom}? worked fine last week"},
            {
                "role": "assistant",
                "content": f"Most likely {cause}. Nothing in your change looks wrong otherwise. "
                f"To fix it, {fix}, then rerun the failing case to confirm.",
            },
        ]
    }


def tool_chat_forum(rng: random.Random, i: int) -> Row:
    tool, q, a = _pick(rng, TOOLS_Q)
    return {"title": f"[{tool}] question from a new contributor", "body": q, "accepted_answer": a}


def tagged_episode_xml(rng: random.Random, i: int) -> Row:
    task, look, check = _pick(rng, AGENT_TASKS)
    return {
        "messages": [
            {"role": "system", "content": "You are an autonomous engineer working in a sandboxed checkout."},
            {"role": "user", "content": f"Issue: {task}."},
            {
                "role": "assistant",
                "content": f"Let me inspect the relevant file.\n<execute_bash>\n{look}\n</execute_bash>",
            },
            {
                "role": "user",
                "content": "OBSERVATION:\n  41 | def parse_date(value, fmt=None):\n  42 |     fmt = fmt or '%d/%m'",
            },
            {
                "role": "assistant",
                "content": f"The default is day-first. I changed it and will verify.\n<execute_bash>\n{check}\n</execute_bash>",
            },
            {"role": "user", "content": "OBSERVATION:\nall checks passed"},
        ]
    }


def concurrency_ranked(rng: random.Random, i: int) -> Row:
    prompt, good, bad = _pick(rng, CONCURRENCY)
    return {"question": prompt, "responses": [good, bad], "ranking": [1, 2]}


def review_comments(rng: random.Random, i: int) -> Row:
    change = _pick(rng, REVIEW)
    return {
        "diff_description": f"This change {change}.",
        "review": "Nit: the docstring still mentions the old behaviour. Also please add a regression test; the "
        "happy path is covered but the error branch is not. Otherwise LGTM once CI is green.",
    }


FAMILIES = {
    "prose_bugfix": prose_bugfix,
    "tool_chat": tool_chat,
    "tagged_episode": tagged_episode,
    "concurrency_pair": concurrency_pair,
    "review_prose": review_prose,
}
STYLES = {
    "prose_bugfix": prose_bugfix_terse,
    "tool_chat": tool_chat_forum,
    "tagged_episode": tagged_episode_xml,
    "concurrency_pair": concurrency_ranked,
    "review_prose": review_comments,
}
