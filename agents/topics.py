"""What the sampled rows are *about*: software work, or a named other domain (insurance, property, cooking ...).

agents/content.py counts the *shapes* a category's data has (code, shell lines, tool calls); this module reads
the words. Relevance needs both because a shape can be missing from data that is on the domain (a bug-fix
answered in prose, a question about git, a preference pair about locks) and the absence of a shape is not
evidence of anything. An off-domain verdict needs positive evidence: rows whose words belong to another domain
and not to software. Each lexicon is policy, like agents/categories.py: it says what a domain's text talks
about, never which datasets are which. Words that carry both senses ("agent", "tool", "code", "policy",
"branch", "client", "bug") are in no lexicon, so they never decide.

A row is about a domain when at least MIN_HITS distinct words of its lexicon occur in it and they outnumber the
other lexicons' by MARGIN (software's identifiers and file names count as software words). The set-level
figures are row counts, so the evidence reads "7/8 rows are about insurance (claim, deductible, premium)".
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

MIN_HITS = 2
MARGIN = 2.0  # a row's top domain needs twice the distinct words of the runner-up (software included)

SOFTWARE = "software"
_SOFTWARE_WORDS = """
git github gitlab commit commits rebase cherry-pick stash checkout pull-request repo repository repositories
compile compiler compiling linker runtime exception exceptions traceback stacktrace segfault nullpointerexception
null nil undefined variable variables array arrays integer boolean struct enum pointer pointers
api apis endpoint endpoints http https json yaml toml xml sql database schema regex
docker dockerfile container kubernetes kubectl helm npm pip pypi conda cargo maven gradle cmake makefile
webpack vite babel eslint prettier pytest unittest jest mocha junit lint linter mypy ruff
python javascript typescript java rust golang kotlin swift ruby php perl haskell scala csharp cpp c++
bash shell terminal stdout stderr cli linux unix macos posix env
thread threads mutex deadlock semaphore goroutine goroutines async await asyncio concurrency concurrent
race-condition atomic futures coroutine coroutines
refactor refactoring debugger debugging breakpoint stack heap recursion algorithm iterator callback closure
lambda syntax parser parse serialize deserialize compileerror typeerror valueerror keyerror
class classes method methods interface inheritance constructor namespace module modules import package
packages dependency dependencies library libraries framework frameworks sdk ide vscode vim emacs
deploy deployment ci pipeline build builds rebuild dev localhost port ports socket sockets websocket
cache caching memory-leak garbage frontend backend server servers microservice microservices
react django flask fastapi node nodejs express spring rails laravel numpy pandas pytorch tensorflow
unit-test tests testing mock mocking fixture fixtures assertion assert diff patch merge conflict
error errors bug bugs bugfix crash crashes crashed config configuration timeout timestamp locks logging debug hotfix
stack-overflow overflow indentation compile-time runtime-error typo refactored deprecated endpoint
query queries mysql postgres postgresql sqlite mongodb redis index indexes indices column columns migration
migrations orm transaction transactions containers pod pods cluster clusters namespace liveness readiness
crashloopbackoff flexbox css html dom browser cdn dns nginx proxy load-balancer latency throughput cpu gpu ram
kernel driver drivers firmware filesystem directory directories upload uploads login authentication auth oauth
jwt token tokens encryption hashing script scripts scripting plugin plugins version versions versioning semver
logs stacktraces app-server webhook webhooks serverless lambda-function bytes utf-8 unicode encoding
function functions argument arguments return returns loop loops string strings int float bool dict list tuple
""".split()

# Other domains a card's words can be borrowed from; each list is what text of that domain keeps saying.
OTHER_DOMAINS: dict[str, tuple[str, ...]] = {
    k: tuple(v.split())
    for k, v in {
        "insurance": """insurance insured insurer insurers premium premiums deductible deductibles excess claim claims
            claimant adjuster assessor loss-adjuster coverage covered cover underwriting underwriter policyholder
            policyholders beneficiary liability collision comprehensive third-party renewal renewals quote quotes
            payout copay annuity rider indemnity accident accidents damage damaged theft flood storm hail
            windshield no-claims broker brokers vehicle""",
        "property": """property properties estate realtor realtors realty letting lettings listing listings viewing
            viewings bedroom bedrooms bed bathroom bathrooms en-suite mortgage mortgages landlord landlords tenant
            tenants tenancy lease leases rent renting rental leasehold freehold apartment apartments flat flats condo
            house houses home homes garden gardens garage kitchen kitchens asking offer offers conveyancing survey
            sqft neighbourhood neighborhood buyer buyers seller sellers balcony detached semi-detached terraced
            agency chain valuation stamp-duty open-house""",
        "cooking": """recipe recipes ingredient ingredients tablespoon tablespoons teaspoon teaspoons tbsp tsp cup cups
            oven bake baked baking roast roasted simmer boil boiled saute sauté fry fried stir whisk flour sugar
            butter salt pepper garlic onion onions chicken beef pork lamb dough sauce preheat grams chop chopped
            dice diced serve serves servings skillet pan saucepan golden slicing sliced tomatoes carrots cream
            cheese eggs milk bread soup stew curry dish dishes meal meals dessert vegetables spinach coconut
            lemon bananas cook cooked cooking kitchen""",
        "animals": """animal animals dog dogs puppy puppies cat cats kitten kittens pet pets veterinarian vet vets breed
            breeds fur feathers species habitat wildlife bird birds mammal mammals reptile paw paws leash
            kennel shelter adoption grooming litter feeding feed fleas flea ticks worming vaccination vaccinations
            rabbit rabbits bunny hamster parrot horse horses zoo owner owners bedding neutering spaying""",
        "medicine": """patient patients diagnosis diagnoses symptom symptoms clinical clinician physician nurse nurses
            hospital clinic icd-10 icd-10-cm cpt dose dosage medication medications prescription prescribed
            treatment therapy chronic diabetes hypertension surgery surgical encounter outpatient inpatient
            discharge mg blood pain fever infection allergy vaccine doctor gp""",
        "biology": """dna rna gene genes genome genomic protein proteins codon codons amino nucleotide nucleotides
            mutation mutations cell cells enzyme enzymes transcription chromosome chromosomes allele alleles
            ribosome mrna organism organisms""",
        "film": """scene scenes screenplay screenplays actor actors actress director camera fade villain hero heroine
            spy spies safehouse episode film films movie movies cinema sequel plot protagonist""",
        "travel": """hotel hotels hostel guesthouse booking bookings reservation reservations flight flights airport
            airline itinerary check-in passport visa luggage baggage suite resort tour tours tourist tourists
            destination destinations beach sightseeing museum museums day-trip trip trips holiday holidays
            vacation budget-friendly old-town market train""",
        "finance": """bank banking loan loans interest credit debit balance transfer savings invoice invoices payment
            payments overdraft investment investments portfolio stocks shares dividend dividends tax taxes
            pension mortgage-rate atm cheque""",
        "sports": """goal goals scored team teams league season player players coach tournament championship referee
            striker midfielder inning innings touchdown football basketball tennis cricket""",
        "retail": """order orders shipping shipped delivery refund refunds parcel tracking store shop shopping cart
            discount coupon warranty receipt purchase purchased""",
        "legal": """lawyer lawyers attorney attorneys solicitor court courts judge plaintiff defendant lawsuit
            litigation contract contracts clause clauses statute statutes tort custody divorce verdict appeal
            jurisdiction affidavit notary probate testament""",
        "jobs": """resume cv interview interviews interviewer recruiter recruiters hiring salary salaries candidate
            candidates employer employers employee employees vacancy vacancies payroll onboarding promotion
            layoff internship""",
        "fitness": """workout workouts exercise exercises gym squat squats reps cardio calories stretching yoga
            pilates marathon jogging weightlifting muscle muscles diet""",
        "gardening": """gardening plant plants planting soil compost seeds seedlings watering prune pruning
            fertilizer fertiliser weeds lawn shrub shrubs roses bloom greenhouse mulch""",
        "music": """song songs lyrics melody chord chords guitar piano drums album albums singer band concert
            rhythm tempo chorus""",
        "education": """student students teacher teachers classroom homework exam exams school schools semester
            grades curriculum lesson lessons tutor tutoring""",
        "automotive": """cars engine engines tyre tyres tire tires brake brakes mechanic gearbox transmission
            mileage dealership clutch exhaust""",
        "beauty": """skin skincare moisturizer moisturiser makeup lipstick hair haircut shampoo conditioner nails
            salon fragrance perfume outfit outfits dress""",
    }.items()
}
_ALL: dict[str, frozenset[str]] = {SOFTWARE: frozenset(_SOFTWARE_WORDS)} | {
    k: frozenset(v) for k, v in OTHER_DOMAINS.items()
}
# A word two lexicons claim ("checkout": git and shops; "return": code and refunds) has two senses: it decides
# nothing, so it is taken out of both.
_SHARED = frozenset(w for k, lex in _ALL.items() for w in lex if any(w in o for j, o in _ALL.items() if j != k))
_LEXICONS = {k: lex - _SHARED for k, lex in _ALL.items()}
_WORD = re.compile(r"[a-z][a-z0-9+#]*(?:-[a-z0-9]+)*")
# Software identifiers in prose: snake_case, camelCase, dotted calls, file names with a code extension,
# backticked spans. Each distinct one is a software word.
_IDENTIFIER = re.compile(
    r"`[^`\n]{1,60}`|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z][a-zA-Z0-9]+\b|\b\w+\.\w+\(\)"
    r"|\b[\w/-]+\.(?:py|js|ts|tsx|go|rs|java|c|cc|cpp|h|rb|php|sh|toml|yaml|yml|json|lock|cfg|ini|md)\b"
)
MAX_IDENTIFIERS = 4  # identifiers alone can lift a row to software, never swamp its words


def row_topic(text: str) -> tuple[str | None, dict[str, list[str]]]:
    """The domain one row is about (None: no domain clearly) and each domain's distinct words in it."""
    words = set(_WORD.findall(text.lower()))
    hits = {k: sorted(words & lex) for k, lex in _LEXICONS.items()}
    idents = sorted(set(_IDENTIFIER.findall(text[:20000])))[:MAX_IDENTIFIERS]
    hits[SOFTWARE] = hits[SOFTWARE] + idents
    ranked = sorted(hits.items(), key=lambda kv: len(kv[1]), reverse=True)
    (top, top_words), (_, second) = ranked[0], ranked[1]
    if len(top_words) >= MIN_HITS and len(top_words) >= MARGIN * len(second):
        return top, hits
    return None, hits


def topics(texts: list[str]) -> dict[str, Any]:
    """Per domain, how many of the rows are about it, with the words that said so most often."""
    rows: Counter[str] = Counter()
    words: dict[str, Counter[str]] = {}
    for text in texts:
        top, hits = row_topic(text)
        if top is not None:
            rows[top] += 1
            words.setdefault(top, Counter()).update(hits[top])
    return {
        "rows": len(texts),
        "about": dict(rows.most_common()),
        "words": {k: [w for w, _ in c.most_common(4)] for k, c in words.items()},
    }
