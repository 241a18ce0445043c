"""Server-sent events, pure: the incremental decoder for upstream streams and our encoder."""

from __future__ import annotations

import orjson

from gateway.relay.sse import DONE, Decoder, Event, encode


def test_it_decodes_events_split_anywhere() -> None:
    raw = b'data: {"a":1}\n\ndata: [DONE]\n\n'
    for cut in range(len(raw) + 1):
        decoder = Decoder()
        events = decoder.feed(raw[:cut]) + decoder.feed(raw[cut:])
        assert events == [Event('{"a":1}'), Event("[DONE]")]


def test_it_reads_crlf_names_comments_and_multiline_data() -> None:
    raw = b": keep-alive\r\n\r\nevent: message_start\r\ndata: one\r\ndata: two\r\n\r\n"
    assert Decoder().feed(raw) == [Event("one\ntwo", "message_start")]


def test_it_holds_an_unfinished_event() -> None:
    decoder = Decoder()
    assert decoder.feed(b"data: x\n") == []
    assert decoder.feed(b"\n") == [Event("x")]


def test_it_keeps_multibyte_characters_split_across_reads() -> None:
    raw = 'data: "café"\n\n'.encode()
    split = raw.index("é".encode()) + 1
    decoder = Decoder()
    assert decoder.feed(raw[:split]) + decoder.feed(raw[split:]) == [Event('"café"')]


def test_it_encodes_a_chunk_as_one_data_line() -> None:
    chunk = {"id": "x", "choices": [{"delta": {"content": "a\nb"}}]}
    encoded = encode(chunk)
    assert encoded.startswith(b"data: ") and encoded.endswith(b"\n\n")
    assert encoded.count(b"\n") == 2
    assert orjson.loads(encoded[6:-2]) == chunk
    assert DONE == b"data: [DONE]\n\n"


def _as_events(items: list[bytes | Event]) -> list[Event]:
    return [Event(i.decode()) if isinstance(i, bytes) else i for i in items]


STREAMS = [
    b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n',
    b": keep-alive\n\ndata: one\n\nevent: ping\ndata: two\n\ndata: x\ndata: y\n\n",
    b"data: one\r\n\r\ndata: two\r\n\r\n",
    b"data:no-space\n\ndata: \n\n\n\ndata: after blank lines\n\n",
    b'event: message_start\ndata: {"a":1}\n\nevent: ping\ndata: {}\n\nevent: a:b\ndata: \n\n',
    b"event: x\ndata: one\ndata: two\n\nevent: y\nid: 7\ndata: three\n\nevent: z\n\n",
    b'event: content_block_delta\ndata: {"text":"caf\xc3\xa9 \xff"}\n\n',
]


def test_items_give_what_feed_gives_however_the_stream_is_split() -> None:
    for raw in STREAMS:
        expected = Decoder().feed(raw)
        for cut in range(len(raw) + 1):
            decoder = Decoder()
            items = decoder.items(raw[:cut]) + decoder.items(raw[cut:])
            assert _as_events(items) == expected, (raw, cut)


def test_items_give_each_event_of_a_name_and_a_data_line_with_its_name() -> None:
    raw = b'event: content_block_delta\ndata: {"text":"w00"}\n\nevent: ping\ndata: {}\n\n'
    assert Decoder().items(raw) == [
        Event('{"text":"w00"}', "content_block_delta"),
        Event("{}", "ping"),
    ]


def test_items_give_a_lone_data_line_as_its_bytes() -> None:
    items = Decoder().items(b'data: {"a":1}\n\nevent: ping\ndata: x\n\ndata: [DONE]\n\n')
    assert items == [b'{"a":1}', Event("x", "ping"), b"[DONE]"]
