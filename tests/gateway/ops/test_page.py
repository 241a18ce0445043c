"""The admin's operations page: staff see the figures /metrics exposes; nobody else does."""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.test import Client

from tests.gateway.calls import ask, settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import World


def test_staff_see_the_figures_after_a_call(world: World) -> None:
    assert world.post(ask("openai/gpt-5")).status_code == 200
    staff = User.objects.create_user("olivia", password="pw-olivia-0123", is_staff=True)
    client = Client()
    client.force_login(staff)

    page = client.get("/admin/operations/")

    assert page.status_code == 200
    text = page.content.decode()
    for shown in (
        "Record hand-offs outstanding",
        "Dead letters",
        "Redis circuit breaker",
        "momor_calls",
        "api=chat",
        "model=openai/gpt-5",
        "provider=openai",
        "status=success",
    ):
        assert shown in text, shown  # fmt: skip


def test_the_admin_index_links_to_it(world: World) -> None:
    staff = User.objects.create_user("olivia", password="pw-olivia-0123", is_staff=True)
    client = Client()
    client.force_login(staff)
    assert 'href="/admin/operations/"' in client.get("/admin/").content.decode()


def test_members_who_are_not_staff_are_sent_to_sign_in(world: World) -> None:
    member = User.objects.create_user("mallory", password="pw-mallory-0123")
    client = Client()
    client.force_login(member)
    page = client.get("/admin/operations/")
    assert page.status_code == 302
    assert page.headers["location"].startswith("/admin/login/")


def test_a_histograms_rows_say_which_is_the_count_and_which_the_sum(world: World) -> None:
    assert world.post(ask("openai/gpt-5")).status_code == 200
    staff = User.objects.create_user("olivia", password="pw-olivia-0123", is_staff=True)
    client = Client()
    client.force_login(staff)

    text = client.get("/admin/operations/").content.decode()

    assert "<th>measure</th><th>labels</th><th>value</th>" in text
    # the figures are the process's: earlier tests' calls count too
    assert re.search(
        r"<tr><td>count</td><td>api=chat, model=openai/gpt-5, provider=openai</td>"
        r"<td>[1-9]\d*</td></tr>",
        text,
    )
    for row in (
        "<tr><td>sum</td><td>api=chat, model=openai/gpt-5, provider=openai</td>",
        "<tr><td>count</td><td>—</td>",  # momor_handoff_duration_seconds has no labels
        "<tr><td>sum</td><td>—</td>",
    ):
        assert row in text, row
    assert "<tr><td>—</td>" not in text  # every row says what it measures
