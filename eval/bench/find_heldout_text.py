"""Row text for the held-out relevance hubs (eval/bench/find_heldout_hub.py): one function per family, each
drawing its wording from its own pools with the hub's random generator, so every seed gives other rows.

On-domain families carry coding data *without* the shapes the old check wanted (a code block, a shell line):
bug fixes answered in prose, chats about git and build tools, agent episodes whose commands sit in tags in
the assistant's text, preference pairs about concurrency, code review in prose. Off-domain families borrow
the domain's words ("agent", "assistant", "tool", "instructions") for other work: estate agents, insurance,
recipes, pet care, travel bookings. Written for this bench; no dataset's text.
"""

from __future__ import annotations

import random
from typing import Any

Row = dict[str, Any]

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

PEOPLE = ["Maria", "Tom", "Aiko", "Ravi", "Lena", "Omar", "Grace", "Pavel", "Nadia", "Jon", "Ines", "Kwame"]
STREETS = ["Elm Road", "Harbour Street", "Mill Lane", "Station Avenue", "Park Crescent", "Oak Drive"]
DISHES = [
    ("lemon chicken", ["chicken", "lemon", "garlic", "butter"]),
    ("vegetable curry", ["onion", "garlic", "coconut milk", "spinach"]),
    ("banana bread", ["flour", "sugar", "butter", "bananas"]),
    ("tomato soup", ["tomatoes", "onion", "stock", "cream"]),
    ("beef stew", ["beef", "carrots", "onion", "stock"]),
]
PETS = [("dog", "puppy"), ("cat", "kitten"), ("rabbit", "bunny")]
PLACES = ["Lisbon", "Kyoto", "Oslo", "Cusco", "Hanoi", "Seville", "Quebec", "Tbilisi"]


def _pick(rng: random.Random, pool: list[Any]) -> Any:
    return pool[rng.randrange(len(pool))]


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


def estate_chat(rng: random.Random, i: int) -> Row:
    who, street = _pick(rng, PEOPLE), _pick(rng, STREETS)
    beds = rng.randint(1, 5)
    return {
        "messages": [
            {"role": "user", "content": f"Hi, I saw the {beds}-bedroom house on {street}. Is it still available?"},
            {
                "role": "assistant",
                "content": f"Hello {who}, yes it is. The asking price is {rng.randint(180, 900)},000 "
                "and the garden faces south. Would you like to book a viewing this week?",
            },
            {"role": "user", "content": "Yes please. Is there a garage, and how long is the lease?"},
            {
                "role": "assistant",
                "content": "There is a single garage. It is freehold, so no lease; the seller "
                "has found another property and wants a quick sale. I can show you the kitchen and bathroom on Saturday.",
            },
        ]
    }


def insurance_qa(rng: random.Random, i: int) -> Row:
    cover = _pick(rng, ["car", "home", "travel", "pet", "renters"])
    return {
        "instruction": f"A customer asks whether their {cover} insurance covers a claim after a storm.",
        "response": f"Explain that the claim is covered if the policyholder has comprehensive coverage; the "
        f"deductible of {rng.choice([100, 250, 500])} applies, an adjuster will call, and the premium may change "
        "at renewal.",
    }


def recipe(rng: random.Random, i: int) -> Row:
    dish, items = _pick(rng, DISHES)
    return {
        "instruction": f"Give step-by-step instructions for {dish}.",
        "output": f"Preheat the oven to {rng.choice([180, 200, 220])} degrees. Chop the {items[1]} and fry it in "
        f"butter with the {items[2]}. Add the {items[0]} and simmer for {rng.randint(10, 40)} minutes. Season "
        f"with salt and pepper; serve with the {items[3]}. Serves {rng.randint(2, 6)}.",
    }


def pet_chat(rng: random.Random, i: int) -> Row:
    pet, young = _pick(rng, PETS)
    return {
        "messages": [
            {"role": "user", "content": f"My {young} keeps scratching its fur. Should I see a vet?"},
            {
                "role": "assistant",
                "content": f"Itching in a young {pet} is often fleas; check the paws and the "
                "belly, wash the bedding, and ask your veterinarian about a treatment suitable for the breed.",
            },
        ]
    }


def travel_booking(rng: random.Random, i: int) -> Row:
    place = _pick(rng, PLACES)
    return {
        "conversation": [
            {"role": "user", "content": f"I need a hotel in {place} for {rng.randint(2, 7)} nights and a flight."},
            {
                "role": "assistant",
                "content": "I found a suite near the beach and a morning flight from the airport; "
                "the reservation includes breakfast. Shall I send the itinerary and check-in details? Remember your "
                "passport and the luggage allowance of one bag.",
            },
        ]
    }


ON_DOMAIN = {
    "prose_bugfix": prose_bugfix,
    "tool_chat": tool_chat,
    "tagged_episode": tagged_episode,
    "concurrency_pair": concurrency_pair,
    "review_prose": review_prose,
}
OFF_DOMAIN = {
    "estate_chat": estate_chat,
    "insurance_qa": insurance_qa,
    "recipe": recipe,
    "pet_chat": pet_chat,
    "travel_booking": travel_booking,
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


def estate_listing(rng: random.Random, i: int) -> Row:
    beds, street = rng.randint(1, 5), _pick(rng, STREETS)
    return {
        "prompt": f"Write a short listing for a {beds}-bed flat on {street} for our agency's website.",
        "completion": f"Bright {beds}-bedroom flat with a modern kitchen, a bathroom with a shower and a "
        "balcony. Close to schools and the station; viewings by appointment with our agents. Leasehold, "
        "no onward chain.",
    }


def insurance_chat(rng: random.Random, i: int) -> Row:
    who = _pick(rng, PEOPLE)
    return {
        "dialog": [
            {"speaker": "customer", "utterance": f"Hello, it's {who}. A tree fell on my car, am I covered?"},
            {
                "speaker": "agent",
                "utterance": "If you have comprehensive cover, yes. I'll open a claim now; the "
                "excess is 250 and an assessor will inspect the vehicle within three days.",
            },
        ]
    }


def recipe_card(rng: random.Random, i: int) -> Row:
    dish, items = _pick(rng, DISHES)
    return {
        "title": dish,
        "ingredients": ", ".join(items),
        "method": f"Mix the {items[0]} with the {items[1]}. "
        f"Bake for {rng.randint(20, 60)} minutes until golden; let it rest before slicing.",
    }


def pet_advice(rng: random.Random, i: int) -> Row:
    pet, young = _pick(rng, PETS)
    return {
        "instruction": f"How often should I feed a {young}?",
        "output": f"A young {pet} eats small meals "
        "three or four times a day; switch to adult food at around a year and keep fresh water out.",
    }


def travel_itinerary(rng: random.Random, i: int) -> Row:
    place = _pick(rng, PLACES)
    return {
        "input": f"Plan three days in {place} on a budget.",
        "output": "Day one: walk the old town and the "
        "market. Day two: a day trip by train to the coast. Day three: museums in the morning, then the "
        "airport. Stay in a guesthouse near the station to save money.",
    }


STYLES = {
    "prose_bugfix": prose_bugfix_terse,
    "tool_chat": tool_chat_forum,
    "tagged_episode": tagged_episode_xml,
    "concurrency_pair": concurrency_ranked,
    "review_prose": review_comments,
    "estate_chat": estate_listing,
    "insurance_qa": insurance_chat,
    "recipe": recipe_card,
    "pet_chat": pet_advice,
    "travel_booking": travel_itinerary,
}
