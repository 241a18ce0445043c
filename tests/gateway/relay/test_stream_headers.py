"""A silent provider on a stream: providers send a stream's response headers at once, so a
streamed try with none after MOMOR_UPSTREAM_STREAM_HEADERS_TIMEOUT fails as a time-out and the
call moves to the next candidate; a plain call keeps waiting up to the first-byte time-out.
Over real HTTP through Momor to the fake upstream, on both upstream clients."""

from __future__ import annotations

import time

import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from billing.models import Generation
from billing.recording.hand_off import drain
from tests.gateway.calls import (
    ask,
    error_of,
    events,
    settled_world,  # noqa: F401 - autouse
    streamed_text,
    tried,
)
from tests.gateway.conftest import World

pytestmark = pytest.mark.usefixtures("upstream_client")

OPENAI, AZURE_EU, AZURE = "gpt-5", "gpt-5-azure-eu", "gpt-5-azure"
SILENCE = 1.5


@pytest.fixture(autouse=True)
def short_stream_headers(settings: SettingsWrapper) -> None:
    settings.MOMOR_UPSTREAM_STREAM_HEADERS_TIMEOUT = 0.3


def attempts(request_id: str) -> list[tuple[str, int | None, str]]:
    drain()
    generation = Generation.objects.get(request_id=request_id)
    return [(a.provider, a.http_status, a.error) for a in generation.attempts.all()]


def test_a_stream_whose_provider_sends_no_headers_moves_on(world: World) -> None:
    world.fake.script(OPENAI, delay_first_byte=SILENCE)
    started = time.monotonic()

    response = world.stream(ask())

    assert response.status_code == 200, response.text
    assert time.monotonic() - started < SILENCE
    assert response.headers["x-momor-provider"] == "azure@eu"
    assert streamed_text(events(response.text)) == "Hello from the fake upstream."
    assert tried(world.fake) == [OPENAI, AZURE_EU]
    assert attempts(response.headers["x-momor-request-id"]) == [
        ("openai", None, "The provider did not answer in time."),
        ("azure", 200, ""),
    ]


def test_a_plain_call_waits_for_the_headers_past_the_stream_time_out(world: World) -> None:
    world.fake.script(OPENAI, delay_first_byte=SILENCE)

    response = world.post(ask())

    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "openai"
    assert tried(world.fake) == [OPENAI]


def test_every_silent_stream_answers_503(world: World) -> None:
    for upstream_id in (OPENAI, AZURE_EU, AZURE):
        world.fake.script(upstream_id, delay_first_byte=SILENCE)

    error_of(world.stream(ask()), 503, "providers_unavailable")
