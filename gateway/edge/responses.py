"""The Responses route's answers in the Responses API's shape: a translated offering's answer,
which the relay gives in Chat Completions' shape, written as a Response
(`gateway.providers.responses.from_chat`) or, streamed, as the Responses API's `response.*`
events (`gateway.providers.responses.chat_events`). An answer OpenAI (or Azure) wrote is sent
as it is (`Answer.native`). Refusals are OpenAI's error object, as Chat Completions'."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import orjson

from gateway.providers.responses.chat_events import ChatEvents
from gateway.providers.responses.from_chat import response_of
from gateway.providers.responses.wire import event_bytes
from gateway.relay.attempts import Answer
from gateway.relay.sse import Decoder
from gateway.request.call import AskedCall
from gateway.request.responses import ResponsesCall

DONE = b"[DONE]"


def responses_shaped(answer: Answer, asked: AskedCall) -> Answer:
    """The relay's answer in the Responses API's shape."""
    if answer.native or not isinstance(asked, ResponsesCall):
        return answer
    writer = ChatEvents(asked.native, encrypted=asked.encrypted)
    if isinstance(answer.body, bytes):
        body = response_of(orjson.loads(answer.body), asked.native, encrypted=asked.encrypted)
        return replace(answer, body=orjson.dumps(body))
    return replace(answer, body=ChatAsResponses(answer.body, writer))


class ChatAsResponses:
    """A Chat Completions stream's bytes (`data: {chunk}` events, `data: [DONE]` last) as the
    Responses API's events, a read at a time. Closing it closes the stream it reads, which
    hands the call's record off (`gateway.relay.streaming`), whether or not it was read."""

    def __init__(self, chat: AsyncIterator[bytes], writer: ChatEvents) -> None:
        self.chat, self.writer, self.decoder = chat, writer, Decoder()

    def __aiter__(self) -> ChatAsResponses:
        return self

    async def __anext__(self) -> bytes:
        return self.written(await anext(self.chat))

    def written(self, raw: bytes) -> bytes:
        """The Responses events of one read of the Chat Completions stream."""
        events = []
        for item in self.decoder.items(raw):
            data = item if isinstance(item, bytes) else item.data.encode()
            if data == DONE:
                events += self.writer.done()
                continue
            chunk = orjson.loads(data)
            if isinstance(chunk, dict):
                events += self.writer.chunk(chunk)
        return b"".join(map(event_bytes, events))

    async def aclose(self) -> None:
        await self.chat.aclose()  # type: ignore[attr-defined]  # the relay's async generator; Answer.body types it as its iterator
