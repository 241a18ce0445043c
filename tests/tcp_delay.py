"""A TCP proxy on loopback that can hold back the server's replies: a slow store caused for
real, without touching the store every test shares."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit


class DelayingProxy:
    """Forwards connections to the server of `url`; while `delay` is above zero, each block the
    server sends reaches the client that many seconds late. `url` is the same URL through the
    proxy. Use it as a context manager."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 6379)
        self.listener = socket.create_server(("127.0.0.1", 0))
        port = self.listener.getsockname()[1]
        netloc = f"{parts.username}@" if parts.username else ""
        self.url = urlunsplit(parts._replace(netloc=f"{netloc}127.0.0.1:{port}"))
        self.delay = 0.0
        self._sockets: list[socket.socket] = []
        self._closed = False

    def __enter__(self) -> DelayingProxy:
        threading.Thread(target=self._accept, name="delaying-proxy", daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closed = True
        self.listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self._sockets += [client, server]
            self._pump(client, server, delayed=False)
            self._pump(server, client, delayed=True)

    def _pump(self, source: socket.socket, sink: socket.socket, *, delayed: bool) -> None:
        def run() -> None:
            with contextlib.suppress(OSError):
                while data := source.recv(65536):
                    if delayed and self.delay > 0:
                        time.sleep(self.delay)
                    sink.sendall(data)
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

        threading.Thread(target=run, name="delaying-proxy-pump", daemon=True).start()
