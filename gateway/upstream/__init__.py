"""Calls to providers: the interface the relay speaks, the pool of clients under it (Momor's
HTTP/1.1, aiohttp, httpx), credentials made ready before an adapter runs (Google token
exchange) and the outbound-address guard."""
