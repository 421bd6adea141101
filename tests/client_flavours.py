"""The client's tests run through both clients: the blocking ContextStore and the asyncio
AsyncContextStore. A test module parametrizes a `flavour` fixture over FLAVOURS and makes its
clients with `flavour.connect(...)`; for "async" it gets the AsyncContextStore wrapped in
Blocked, which runs every coroutine the client returns on an event loop of its own (in a
thread: the browser tests' Playwright keeps a loop running in pytest's main thread), so the
same blocking test code drives both.
"""

import asyncio
import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from contextstore_client import (
    AsyncContextStore,
    AsyncSyncTracker,
    AsyncThreadHandle,
    ContextStore,
    SyncTracker,
    Thread,
    ThreadHandle,
)

FLAVOURS = ["sync", "async"]


class Flavour:
    def __init__(self, name: str) -> None:
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        if name == "async":
            self.loop = asyncio.new_event_loop()
            threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def run(self, coro: Any) -> Any:
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)

    def connect(self, base_url: str, token: str, **options: Any) -> Any:
        """A ContextStore, or an AsyncContextStore driven through Blocked."""
        if self.loop is None:
            return ContextStore(base_url, token, **options)
        return Blocked(AsyncContextStore(base_url, token, **options), self)

    def handle(self, store: Any, thread: Thread) -> Any:
        """A handle made directly (no request), as the retry tests need."""
        if self.loop is None:
            return ThreadHandle(store, thread)
        return Blocked(AsyncThreadHandle(store.target, thread), self)

    def tracker(self, handle: Any, namespace: str) -> Any:
        if self.loop is None:
            return SyncTracker(handle, namespace)
        return Blocked(AsyncSyncTracker(handle.target, namespace), self)


class Blocked:
    """An object of the asyncio client used from blocking code: its coroutines are run to their
    result, its async iterators drained into lists, the client objects it returns wrapped."""

    def __init__(self, target: Any, flavour: Flavour) -> None:
        self.target = target
        self.flavour = flavour

    def __repr__(self) -> str:
        return f"Blocked({self.target!r})"

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.target, name)
        if not callable(value):
            return value

        def blocking(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            if inspect.isasyncgen(result):
                result = self.flavour.run(_drained(result))
            elif inspect.isawaitable(result):
                result = self.flavour.run(result)
            if isinstance(result, AsyncContextStore | AsyncThreadHandle | AsyncSyncTracker):
                return Blocked(result, self.flavour)
            return result

        return blocking

    def __enter__(self) -> "Blocked":
        return self

    def __exit__(self, *exc: object) -> None:
        self.flavour.run(self.target.aclose())


async def _drained(items: Any) -> list[Any]:
    return [item async for item in items]


@contextmanager
def client_flavour(name: str) -> Iterator[Flavour]:
    flavour = Flavour(name)
    try:
        yield flavour
    finally:
        flavour.close()
