"""A Chat Completions chunk relayed as the provider wrote it, its `id` and `model` rewritten in
place and Momor's `provider` added: no decoding and encoding of each event.

Only a chunk of the exact shape OpenAI writes for a piece of text passes this way (`CHUNK`):
one choice, a text delta without escapes, no finish reason, no usage, nothing else. It carries
nothing Momor reads but its text's length. Every other chunk (the first ones, the last ones,
tool calls, reasoning, anything a provider writes its own way) goes through the adapter's
translator, as before; both ways give the client the same bytes."""

from __future__ import annotations

import re

import orjson

CHUNK = re.compile(
    rb'\{"id":"[^"\\]*"'
    rb'(?P<before>(?:,"object":"chat\.completion\.chunk")?,"created":[1-9][0-9]*)'
    rb',"model":"[^"\\]*"'
    rb'(?P<after>(?:,"system_fingerprint":(?:null|"[^"\\]*"))?'
    rb',"choices":\[\{"index":0,"delta":\{(?:"role":"assistant",)?"content":"(?P<text>[^"\\]*)"\}'
    rb'(?:,"logprobs":null)?,"finish_reason":null\}\])'
    rb'(?P<usage>,"usage":null)?\}'
)


class Passthrough:
    """The rewrite of one stream's chunks: `relay` answers the client's bytes for a chunk and
    the characters of text it shows, or None when the chunk must be translated."""

    def __init__(self, request_id: str, model: str, provider: str, *, keep_usage: bool) -> None:
        self.head = b'data: {"id":' + orjson.dumps(request_id)
        self.model = b',"model":' + orjson.dumps(model)
        self.tail = b',"provider":' + orjson.dumps(provider) + b"}\n\n"
        self.keep_usage = keep_usage

    def relay(self, data: bytes) -> tuple[bytes, int] | None:
        found = CHUNK.fullmatch(data)
        if found is None:
            return None
        text = found["text"]
        if text.isascii():
            shown = len(text)
        else:
            try:
                shown = len(text.decode())
            except UnicodeDecodeError:
                return None  # the translator reads it, with U+FFFD for what is not UTF-8
        usage = found["usage"] if self.keep_usage and found["usage"] else b""
        return self.head + found["before"] + self.model + found["after"] + usage + self.tail, shown
