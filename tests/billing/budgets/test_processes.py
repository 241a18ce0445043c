"""Across two gateway processes on one Redis, concurrent calls that spend their whole ceiling
never take a key's, a member's or the organization's budget past its amount: each call's
worst cost is reserved on every budget over it, atomically, wherever it is admitted."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from django.db.models import Sum

from accounts.models import BudgetPeriod
from billing.models import Generation
from tests.billing.budgets.helpers import budget, member_key
from tests.billing.conftest import HI, Cluster
from tests.conftest import make_key, make_org

pytestmark = pytest.mark.django_db(transaction=True)

CEILING = 10_000
BODY = {"model": "openai/gpt-5-mini", "messages": HI, "max_tokens": CEILING}
EACH = Decimal("0.0200025")  # 10 prompt tokens at $0.25 a million, 10,000 completion at $2


def spent(**where: object) -> Decimal:
    found = Generation.objects.filter(**where).aggregate(spent=Sum("cost"))["spent"]
    return found or Decimal(0)


@pytest.mark.celery
@pytest.mark.timeout(300)  # two gateways and a worker start first: 15-60 s each when busy
def test_concurrent_calls_never_overspend_a_budget_across_processes(cluster: Cluster) -> None:
    org = make_org("shared", credits=Decimal(100))
    alices, alices_row, alice = member_key(org, "alice")
    alices_other, _ = make_key(org, name="alice-2", created_by=alice)
    bobs, _, _ = member_key(org, "bob")
    limits = {"key": Decimal("0.065"), "member": Decimal("0.105"), "org": Decimal("0.165")}
    budget(org, BudgetPeriod.DAILY, limits["key"], key=alices_row)
    budget(org, BudgetPeriod.WEEKLY, limits["member"], member=alice)
    budget(org, BudgetPeriod.MONTHLY, limits["org"])
    cluster.world.fake.script(
        "gpt-5-mini", usage={"prompt_tokens": 10, "completion_tokens": CEILING},
        delay_first_byte=0.3,
    )  # fmt: skip
    keys = [alices, alices_other, bobs] * 12

    with ThreadPoolExecutor(max_workers=18) as pool:
        answers = list(pool.map(lambda i: cluster.post(i, BODY, key=keys[i]), range(len(keys))))

    assert {a.status_code for a in answers} == {200, 402}
    served = [a for a in answers if a.status_code == 200]
    deadline = time.monotonic() + 60
    while Generation.objects.filter(organization=org).count() < len(answers):
        assert time.monotonic() < deadline, "the calls were never all recorded"
        time.sleep(0.1)
    assert spent(organization=org) == EACH * len(served)
    assert spent(api_key=alices_row) <= limits["key"]
    assert spent(api_key__created_by=alice) <= limits["member"]
    assert spent(organization=org) <= limits["org"]
    assert spent(organization=org) > limits["org"] - 4 * EACH  # the budgets were used
    for refused in (a for a in answers if a.status_code == 402):
        assert refused.json()["error"]["message"].startswith("Budget exceeded: "), refused.text
