"""AsyncContextStore's connections on asyncio's own streams instead of anyio's.

httpx's AsyncClient reaches the network through httpcore, which on asyncio goes through anyio:
a cancel scope and checkpoints around every read and write. asyncio's StreamReader/StreamWriter
do the same work in ~0.12 ms less CPU per request on loopback (of ~0.9 ms: bench_client).
The requests, timeouts and errors are httpcore's as before: each failure is raised as the
httpcore exception anyio's backend raises for it (ConnectError, ConnectTimeout, ReadTimeout,
ReadError, WriteTimeout, WriteError), which httpx maps to its own and the client's retry rules
read. Outside an asyncio event loop (trio) and for Unix sockets, anyio's backend as before.
"""

from __future__ import annotations

import asyncio
import select
import ssl
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx


@contextmanager
def _mapped(timed_out: type[Exception], failed: type[Exception]) -> Iterator[None]:
    """OS errors as anyio's backend reports them to httpcore (TimeoutError is an OSError)."""
    try:
        yield
    except TimeoutError as exc:
        raise timed_out(exc) from exc
    except OSError as exc:
        raise failed(exc) from exc


def _readable(sock: Any) -> bool:
    """Whether a read would not block: data or end of stream waiting (a closed socket is)."""
    fd = -1 if sock is None else sock.fileno()
    if fd < 0:
        return True
    if sys.platform == "win32" or not hasattr(select, "poll"):
        return bool(select.select([fd], [], [], 0)[0])
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _mapped(httpcore.ReadTimeout, httpcore.ReadError):
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        with _mapped(httpcore.WriteTimeout, httpcore.WriteError):
            async with asyncio.timeout(timeout):
                self._writer.write(buffer)
                await self._writer.drain()

    async def aclose(self) -> None:
        self._writer.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        try:
            with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
                async with asyncio.timeout(timeout):
                    await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except Exception:
            await self.aclose()
            raise
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return self._reader.at_eof() or _readable(self._writer.get_extra_info("socket"))
        name = {"ssl_object": "ssl_object", "client_addr": "sockname", "server_addr": "peername",
                "socket": "socket"}.get(info)
        return self._writer.get_extra_info(name) if name else None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """TCP connections on asyncio streams when an asyncio loop runs; anyio's otherwise."""

    def __init__(self) -> None:
        self._anyio = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[tuple[Any, ...]] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # another event loop (trio)
            return await self._anyio.connect_tcp(host, port, timeout, local_address, socket_options)
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, local_addr=(local_address, 0) if local_address else None)
        sock = writer.get_extra_info("socket")
        for option in socket_options or ():  # asyncio sets TCP_NODELAY itself, as anyio does
            sock.setsockopt(*option)
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[tuple[Any, ...]] | None = None
                                  ) -> httpcore.AsyncNetworkStream:
        return await self._anyio.connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await self._anyio.sleep(seconds)


def use_asyncio_streams(client: httpx.AsyncClient) -> None:
    """Give the client's own connection pool (the one httpx made: not a caller's transport, not
    an environment proxy's) the asyncio backend. With an httpx or httpcore that keeps its pool
    elsewhere, nothing changes."""
    transport = getattr(client, "_transport", None)
    pool = getattr(transport, "_pool", None)
    if (type(transport) is httpx.AsyncHTTPTransport and type(pool) is httpcore.AsyncConnectionPool
            and isinstance(getattr(pool, "_network_backend", None), httpcore.AsyncNetworkBackend)):
        pool._network_backend = AsyncioBackend()
