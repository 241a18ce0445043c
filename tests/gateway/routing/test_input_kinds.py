"""Input kinds follow the provider's API: an offering that declares no `input_modalities` takes
what its API carries (Anthropic: images, PDFs and text files; Gemini: images, audio and files;
OpenAI-compatible APIs: what Chat Completions carries), and a declaration narrows that. Calls go
over real HTTP through Momor to the fake upstream, which checks each body as its API would."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest

from billing.models import Generation
from billing.recording.hand_off import drain
from tests.gateway.calls import error_of, settle
from tests.gateway.conftest import World, model, offer, provider

CLAUDE = "claude-sonnet-4-5-20250929"
GEMINI = "gemini-2.5-flash"
NARROW_GEMINI = "gemini-2.5-flash-images"
NARROW_CLAUDE = "claude-sonnet-4-5-images"
LOCAL = "local-omni"
PNG = "iVBORw0KGgo="
IMAGE = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
IMAGE_BY_ADDRESS = {"type": "image_url", "image_url": {"url": "https://example.com/map.png"}}
PDF = {
    "type": "file",
    "file": {"filename": "menu.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQ="},
}
NOTES = base64.b64encode(b"Bring an umbrella.").decode()
TEXT_FILE = {
    "type": "file",
    "file": {"filename": "notes.txt", "file_data": f"data:text/plain;base64,{NOTES}"},
}
AUDIO = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}


@pytest.fixture
def kinds(world: World) -> World:
    """Offerings that declare no input kinds (None), and two that narrow their API's."""
    claude = provider("anthropic", "anthropic", f"{world.fake.url}/anthropic")
    google = provider("gemini", "gemini", f"{world.fake.url}/v1beta")
    compatible = provider("compatible", "openai_compatible", f"{world.fake.url}/compatible/v1")
    sonnet = model("anthropic/claude-sonnet-4-5")
    offer(sonnet, claude, CLAUDE, "3", "15", input_modalities=None)
    flash = model("google/gemini-2.5-flash")
    offer(flash, google, GEMINI, "0.30", "2.50", input_modalities=None)
    listener = model("acme/listener")  # Anthropic first (cheaper), Gemini behind it
    offer(listener, claude, CLAUDE, "1", "5", input_modalities=None)
    offer(listener, google, GEMINI, "2", "8", input_modalities=None)
    narrow = model("acme/narrow")
    offer(narrow, google, NARROW_GEMINI, "0.30", "2.50", input_modalities=["image"])
    offer(narrow, claude, NARROW_CLAUDE, "3", "15", input_modalities=["image", "audio"])
    omni = model("acme/omni")
    offer(omni, compatible, LOCAL, "0.10", "0.10", input_modalities=None)
    settle()
    return world


def ask(model_id: str, *parts: dict[str, Any]) -> dict[str, Any]:
    content = [{"type": "text", "text": "What is in here?"}, *parts]
    return {
        "model": model_id,
        "max_tokens": 100,
        "messages": [{"role": "user", "content": content}],
    }


def sent_content(world: World, upstream_id: str) -> Any:
    (call,) = world.fake.requests(upstream_id)
    body = call["body"]
    return body["messages"][0]["content"] if "messages" in body else body["contents"][0]["parts"]


def attempts(request_id: str) -> list[tuple[str, int | None]]:
    drain()
    generation = Generation.objects.get(request_id=request_id)
    return [(a.provider, a.http_status) for a in generation.attempts.all()]


def test_anthropic_takes_images_pdfs_and_text_files_without_a_declaration(kinds: World) -> None:
    response = kinds.post(
        ask("anthropic/claude-sonnet-4-5", IMAGE, IMAGE_BY_ADDRESS, PDF, TEXT_FILE)
    )

    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "anthropic"
    assert sent_content(kinds, CLAUDE) == [
        {"type": "text", "text": "What is in here?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/map.png"}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQ="},
            "title": "menu.pdf",
        },
        {"type": "text", "text": "Bring an umbrella."},
    ]


def test_gemini_takes_images_audio_and_files_without_a_declaration(kinds: World) -> None:
    response = kinds.post(ask("google/gemini-2.5-flash", IMAGE, IMAGE_BY_ADDRESS, AUDIO, PDF))

    assert response.status_code == 200, response.text
    assert sent_content(kinds, GEMINI) == [
        {"text": "What is in here?"},
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"fileData": {"fileUri": "https://example.com/map.png", "mimeType": "image/png"}},
        {"inlineData": {"mimeType": "audio/wav", "data": "UklGRg=="}},
        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0xLjQ="}},
    ]


def test_an_openai_compatible_api_takes_what_chat_completions_carries(kinds: World) -> None:
    body = ask("acme/omni", IMAGE, AUDIO, PDF)

    response = kinds.post(body)

    assert response.status_code == 200, response.text
    assert sent_content(kinds, LOCAL) == body["messages"][0]["content"]


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_audio_moves_past_anthropic_to_the_next_candidate(kinds: World, streamed: bool) -> None:
    response = kinds.post({**ask("acme/listener", AUDIO), "stream": streamed})

    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "gemini"
    assert kinds.fake.requests(CLAUDE) == []
    assert attempts(response.headers["x-momor-request-id"]) == [("gemini", 200)]


def test_audio_that_only_anthropic_could_serve_answers_422(kinds: World) -> None:
    response = kinds.post(ask("anthropic/claude-sonnet-4-5", AUDIO))

    error = error_of(response, 422, "unsupported_parameter")
    assert error["message"].startswith("Models matched, and none of them could carry the call")
    assert kinds.fake.requests() == []


def test_a_declaration_narrows_what_the_api_carries(kinds: World) -> None:
    assert kinds.post(ask("acme/narrow", IMAGE)).status_code == 200
    error_of(kinds.post(ask("acme/narrow", AUDIO)), 422, "unsupported_parameter")
    error_of(kinds.post(ask("acme/narrow", PDF)), 422, "unsupported_parameter")
    assert kinds.fake.requests(NARROW_CLAUDE) == []


def test_the_models_list_shows_each_offerings_effective_input_kinds(kinds: World) -> None:
    response = httpx.get(kinds.url + "/v1/models", headers={"authorization": f"Bearer {kinds.key}"})
    assert response.status_code == 200, response.text
    shown = {
        (m["id"], o["provider"]): o["capabilities"]["input_modalities"]
        for m in response.json()["data"]
        for o in m["offerings"]
    }
    assert shown[("anthropic/claude-sonnet-4-5", "anthropic")] == ["file", "image"]
    assert shown[("google/gemini-2.5-flash", "gemini")] == ["audio", "file", "image"]
    assert shown[("acme/omni", "compatible")] == ["audio", "file", "image"]
    assert shown[("acme/narrow", "gemini")] == ["image"]
    assert shown[("acme/narrow", "anthropic")] == ["image"]
    assert shown[("openai/gpt-5-mini", "openai")] == []
