"""FairShare hands a freed slot to the least-served waiter, gives back a slot a timed-out waiter got, and
keeps first-come order among equals."""

from __future__ import annotations

import time

import anyio
import pytest

from pipeline.servers.service.fairshare import FairShare


def test_a_freed_slot_goes_to_the_user_who_used_the_console_least():
    async def main() -> list[str]:
        share = FairShare(1)
        share._use["heavy"] = (50.0, time.monotonic())  # 50 slot-seconds lately
        order: list[str] = []
        await share.acquire("holder")

        async def take(user: str) -> None:
            await share.acquire(user)
            order.append(user)
            share.release(user, 1.0)

        async with anyio.create_task_group() as tg:
            for user in ("heavy", "heavy2", "light"):
                tg.start_soon(take, user)
                await anyio.sleep(0.01)
            share._use["heavy2"] = (20.0, time.monotonic())  # charged while it waited: counted at the hand-over
            share.release("holder", 1.0)
        return order

    assert anyio.run(main) == ["light", "heavy2", "heavy"]


def test_equal_users_are_served_first_come_and_slots_are_never_lost():
    async def main() -> tuple[list[str], int]:
        share = FairShare(2)
        order: list[str] = []
        await share.acquire("a")
        await share.acquire("b")

        async def take(user: str) -> None:
            await share.acquire(user)
            order.append(user)
            await anyio.sleep(0.01)
            share.release(user, 0.0)

        async with anyio.create_task_group() as tg:
            for user in ("c", "d", "e"):
                tg.start_soon(take, user)
                await anyio.sleep(0.01)
            share.release("a", 0.0)
            share.release("b", 0.0)
        return order, share.free

    order, free = anyio.run(main)
    assert order == ["c", "d", "e"] and free == 2


@pytest.mark.parametrize("granted_first", [False, True])
def test_a_waiter_that_gives_up_leaves_no_slot_taken(granted_first):
    async def main() -> int:
        share = FairShare(1)
        got: list[str] = []
        await share.acquire("holder")

        async def quitter() -> None:
            await share.acquire("quitter")
            got.append("quitter")  # it got the slot after all: then it holds it, and gives it back

        async with anyio.create_task_group() as tg:
            tg.start_soon(quitter)
            await anyio.sleep(0.01)
            if granted_first:  # the slot is handed over as its wait is cancelled
                share.release("holder", 0.0)
            tg.cancel_scope.cancel()
        if not granted_first:
            share.release("holder", 0.0)
        for user in got:
            share.release(user, 0.0)
        return share.free

    assert anyio.run(main) == 1
