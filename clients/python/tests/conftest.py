"""The light client's own tests: no server and no Django, a fake API behind httpx.MockTransport
(client_fakes.py). They need the client and pytest alone, so they run on every Python the client
supports (`make client-matrix`). A test of a call runs through both clients: `flavour` is
"sync" or "async", and `settle()` awaits what the asyncio client returns, so one test body
drives both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from client_fakes import TOKEN, URL, FakeApi
from contextstore_client import AsyncContextStore, ContextStore


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def connect(flavour: str, api: FakeApi) -> Callable[..., Any]:
    """A ContextStore or an AsyncContextStore (per `flavour`) talking to `api`; fast retries."""

    def make(**options: Any) -> Any:
        options = {"retries": 3, "backoff": 0.001, **options}
        transport = httpx.MockTransport(api)
        if flavour == "sync":
            return ContextStore(URL, TOKEN, transport=transport, **options)
        return AsyncContextStore(URL, TOKEN, transport=transport, **options)

    return make
