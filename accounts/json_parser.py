"""The management API's JSON, read by orjson: a body nested past orjson's 1,024 levels is a
400 like any JSON that does not parse (DRF's own parser, the standard library's, overflowed
Python's stack on 60,000 `[` and answered 500)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

import orjson
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class OrjsonParser(JSONParser):
    def parse(
        self,
        stream: IO[bytes],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        try:
            return orjson.loads(stream.read())
        except orjson.JSONDecodeError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
