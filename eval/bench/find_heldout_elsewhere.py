"""Off-domain rows for the held-out relevance hubs (eval/bench/find_heldout_hub.py): other work under the domain's
words ("agent", "assistant", "tool", "instructions"): estate agents, insurance, recipes, pet care, travel
bookings. Two wordings per family (FAMILIES, STYLES), as in eval/bench/find_heldout_coding.py. Written for this
bench; no dataset's text.
"""

from __future__ import annotations

import random
from typing import Any

Row = dict[str, Any]


def _pick(rng: random.Random, pool: list[Any]) -> Any:
    return pool[rng.randrange(len(pool))]


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


FAMILIES = {
    "estate_chat": estate_chat,
    "insurance_qa": insurance_qa,
    "recipe": recipe,
    "pet_chat": pet_chat,
    "travel_booking": travel_booking,
}
STYLES = {
    "estate_chat": estate_listing,
    "insurance_qa": insurance_chat,
    "recipe": recipe_card,
    "pet_chat": pet_advice,
    "travel_booking": travel_itinerary,
}
