"""Concurrent greedy chat requests to a dev server through the real `openai` client, as `regenerate` sends them."""

from __future__ import annotations

import asyncio
from typing import Any

NO_THINKING = {"chat_template_kwargs": {"enable_thinking": False}}


def ask_all(url: str, prompts: list[str], budgets: list[int], timeout: float = 120, **extra: Any) -> list:
    """One greedy request per prompt, all in flight at once, each at its own `max_tokens`, with the answer's
    token ids returned (`return_token_ids`); the replies in the prompts' order."""
    import openai

    async def ask() -> list:
        client = openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0, timeout=timeout)
        model = (await client.models.list()).data[0].id
        return await asyncio.gather(
            *(
                client.chat.completions.create(
                    model=model,
                    messages=[{"role": "user", "content": p}],
                    max_tokens=n,
                    temperature=0,
                    extra_body={"return_token_ids": True, **NO_THINKING},
                    **extra,
                )
                for p, n in zip(prompts, budgets)
            )
        )

    return asyncio.run(ask())
