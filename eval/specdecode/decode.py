"""Plain greedy decoding and chain speculative decoding (topk 1) with greedy verification.

One round: the draft proposes `steps` tokens from the last committed position; the target scores the
last accepted token plus the proposals in one forward; proposals are accepted while they equal the
target's own argmax, and the target's token after the last accepted one comes free (the bonus). So a
round yields accepted + 1 tokens per target forward, which is SGLang's accept length. With greedy
verification the output must equal plain greedy decoding token for token: evaluate.py checks that.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from eval.specdecode.runners import DraftRunner, TargetRunner


@dataclass
class Decoded:
    tokens: list[int]
    seconds: float
    forwards: int  # target forwards after the prefill
    accepted: list[int] = field(default_factory=list)  # per speculative round: draft tokens accepted
    margins: list[float] = field(default_factory=list)  # greedy only: top-1 minus top-2 logit per token


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _finish(tokens: list[int], eos: int | None, max_new: int) -> tuple[list[int], bool]:
    """Cut at the first end-of-turn (kept) or at max_new; True when decoding is over."""
    if eos is not None and eos in tokens:
        return tokens[: tokens.index(eos) + 1], True
    return tokens[:max_new], len(tokens) >= max_new


def greedy(target: TargetRunner, prompt: list[int], max_new: int, eos: int | None) -> Decoded:
    _sync(target.device)
    start = time.perf_counter()
    target.reset()
    logits, _ = target.forward(prompt, need_states=False)
    out: list[int] = []
    margins: list[float] = []
    forwards = 0
    while True:
        top = logits[-1].float().topk(2)
        out.append(int(top.indices[0]))
        margins.append(float(top.values[0] - top.values[1]))
        out, done = _finish(out, eos, max_new)
        if done:
            break
        logits, _ = target.forward(out[-1:], need_states=False)
        forwards += 1
    _sync(target.device)
    return Decoded(out, time.perf_counter() - start, forwards, margins=margins[: len(out)])


def speculative(
    target: TargetRunner, draft: DraftRunner, prompt: list[int], max_new: int, eos: int | None, steps: int
) -> Decoded:
    _sync(target.device)
    start = time.perf_counter()
    target.reset()
    draft.reset()
    logits, states = target.forward(prompt)
    out = [int(logits[-1].argmax())]
    draft.commit(states, prompt[1:] + out)  # pairs (aux[t], x[t+1]) for every prompt position
    accepted: list[int] = []
    out, done = _finish(out, eos, max_new)
    while not done:
        proposals = draft.propose(steps)
        base = target.length
        logits, states = target.forward(out[-1:] + proposals)
        verified = logits.argmax(-1).tolist()  # verified[i]: the target's token after proposals[:i]
        n_ok = 0
        while n_ok < steps and proposals[n_ok] == verified[n_ok]:
            n_ok += 1
        new = proposals[:n_ok] + [verified[n_ok]]
        accepted.append(n_ok)
        target.crop(base + n_ok + 1)  # keep the last token and the accepted proposals
        out, done = _finish(out + new, eos, max_new)
        if not done:
            draft.commit([s[: n_ok + 1] for s in states], new)
    _sync(target.device)
    return Decoded(out, time.perf_counter() - start, len(accepted), accepted=accepted)


def step_acceptance(accepted: list[int], steps: int) -> list[float]:
    """Per step i: of the rounds that reached step i, the share whose i-th proposal was accepted."""
    rates = []
    for i in range(steps):
        reached = sum(1 for a in accepted if a >= i)
        rates.append(sum(1 for a in accepted if a > i) / reached if reached else 0.0)
    return rates
