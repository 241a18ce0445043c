"""Budgets made as an admin makes them, and what a call refused by one is told."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx

from accounts.models import ApiKey, Budget, BudgetPeriod, BudgetScope, Organization
from accounts.periods import window
from billing.admission import store
from tests.conftest import make_key, make_user


def budget(
    org: Organization,
    period: str,
    amount: Decimal,
    *,
    key: ApiKey | None = None,
    member: Any = None,
) -> Budget:
    scope = BudgetScope.KEY if key else BudgetScope.MEMBER if member else BudgetScope.ORGANIZATION
    return Budget.objects.create(
        organization=org, scope=scope, api_key=key, member=member, period=period, amount=amount
    )


def member_key(org: Organization, username: str) -> tuple[str, ApiKey, Any]:
    """A member of the organization and a key they created."""
    user = make_user(username, org)
    plain, row = make_key(org, name=username, created_by=user)
    return plain, row, user


def resets(period: str) -> str:
    """What a refusal says of when the budget's current window ends."""
    ends = window(period, datetime.now(UTC)).resets_at
    return f"It resets at {ends:%Y-%m-%dT%H:%M:%SZ}." if ends else "It does not reset."


def refused(worst: Decimal, whose: str, amount: Decimal, period: str) -> str:
    return (
        f"Budget exceeded: this call may cost up to ${worst}, more than is left of {whose} "
        f"of ${amount.normalize():f}. {resets(period)}"
    )


def reservation_while_in_flight(url: str, path: str, body: Any, key: str, org_id: int) -> int:
    """The reservation a call holds while its provider is slow to answer (the caller scripts
    the delay), in nano-dollars."""
    answers: list[httpx.Response] = []
    headers = {"authorization": f"Bearer {key}"}

    def post() -> None:
        answers.append(httpx.post(url + path, json=body, headers=headers, timeout=30))

    call = threading.Thread(target=post)
    call.start()
    try:
        deadline = time.monotonic() + 10
        while not (held := store().open_reservations(org_id, int(time.time() * 1000))):
            assert time.monotonic() < deadline, "the call never held a reservation"
            time.sleep(0.01)
    finally:
        call.join()
    assert answers[0].status_code == 200, answers[0].text
    return next(iter(held.values()))


PERIODS = [BudgetPeriod.DAILY, BudgetPeriod.WEEKLY, BudgetPeriod.MONTHLY, BudgetPeriod.TOTAL]
