"""Redis connections for the gateway's event loops that pack commands in C (hiredis): redis-py's
asyncio client packs every command in Python, argument by argument, and that packing was the
largest share of the CPU a call spent on Redis (its two scripts carry about twenty arguments
each)."""

from __future__ import annotations

from typing import Any

import hiredis
import redis.asyncio as aioredis


class HiredisPackingConnection(aioredis.Connection):
    def pack_command(self, *args: Any) -> list[bytes]:
        # a command name of two words ("SCRIPT LOAD") goes as two arguments, as redis-py does
        if isinstance(args[0], str) and " " in args[0]:
            args = (*args[0].split(), *args[1:])
        return [hiredis.pack_command(args)]
