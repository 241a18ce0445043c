"""`manage.py refund_call REQUEST_ID [--amount USD] [--note N] [--idempotency-key K]`: a
`refund` entry for a charged call, at most its charge over all its refunds, once per key."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from billing.ledger.posting import ledger_sum
from billing.models import EntryKind, LedgerEntry
from billing.recording.hand_off import drain
from tests.billing.conftest import HI, World
from tests.child_process import manage

USAGE = {"prompt_tokens": 1000, "completion_tokens": 100}
CHARGE = Decimal("0.0012645")  # that usage on the tests' gpt-5 offering


def run(*args: str) -> str:
    out = StringIO()
    call_command("refund_call", *args, stdout=out)
    return out.getvalue()


def refusal(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    return str(caught.value)


def charged_call(world: World) -> str:
    world.fake.script("gpt-5", usage=USAGE)
    response = world.post({"model": "openai/gpt-5", "messages": HI, "max_tokens": 100})
    assert response.status_code == 200, response.text
    assert drain()
    return response.headers["x-momor-request-id"]


def balance(world: World) -> Decimal:
    world.org.refresh_from_db()
    assert world.org.balance == ledger_sum(world.org.pk)
    return world.org.balance


def test_it_refunds_the_whole_charge_once(world: World) -> None:
    call = charged_call(world)
    assert balance(world) == Decimal(100) - CHARGE

    assert run(call) == f"acme: refunded 0.0012645 USD of call {call}, balance 100.00 USD\n"

    assert balance(world) == Decimal(100)
    refund = LedgerEntry.objects.get(kind=EntryKind.REFUND)
    assert (refund.amount, refund.note) == (CHARGE, f"refund of call {call}")
    assert refusal(call) == f"call {call} is refunded in full already"
    assert balance(world) == Decimal(100)


def test_partial_refunds_add_up_to_the_charge_at_most(world: World) -> None:
    call = charged_call(world)
    run(call, "--amount", "0.001", "--note", "slow answer")

    assert refusal(call, "--amount", "0.0013") == (
        f"a refund of call {call} is more than nothing and at most 0.0002645 USD "
        "(charged 0.0012645 USD), not 0.0013 USD"
    )
    run(call, "--amount", "0.0002645")

    assert balance(world) == Decimal(100)
    assert refusal(call, "--amount", "0.000000001") == f"call {call} is refunded in full already"


def test_a_retry_with_its_idempotency_key_refunds_once(world: World) -> None:
    call = charged_call(world)
    first = run(call, "--amount", "0.001", "--idempotency-key", "ticket-5")

    assert run(call, "--amount", "0.001", "--idempotency-key", "ticket-5") == first
    assert run(call, "--idempotency-key", "ticket-5") == first
    assert "this refund is not the same" in refusal(
        call, "--amount", "0.0002", "--idempotency-key", "ticket-5"
    )
    assert balance(world) == Decimal(100) - CHARGE + Decimal("0.001")


def test_a_call_without_a_charge_is_refused(world: World) -> None:
    assert refusal("no-such-call") == "call 'no-such-call' has no charge in the ledger"


@pytest.mark.django_db(transaction=True)
def test_a_real_retry_exits_zero_with_the_same_output(world: World) -> None:
    call = charged_call(world)
    runs = [manage("refund_call", call, "--idempotency-key", "k") for _ in "ab"]

    expected = f"acme: refunded 0.0012645 USD of call {call}, balance 100.00 USD\n"
    assert [(done.returncode, done.stdout) for done in runs] == [(0, expected)] * 2
    assert balance(world) == Decimal(100)
