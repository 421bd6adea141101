"""A token that cannot be one is refused when the client is made, before any request: sent, an
empty one made every request fail in httpx and be retried for seconds as a network failure."""

from __future__ import annotations

import time

import httpx
import pytest
from contextstore_client import AsyncContextStore, ContextStore

CLIENTS = [ContextStore, AsyncContextStore]


def never_called(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"a request was sent: {request.method} {request.url}")


@pytest.mark.parametrize("client", CLIENTS)
def test_an_empty_token_is_refused_at_once(client):
    started = time.monotonic()
    with pytest.raises(ValueError, match="The token is empty"):
        client("http://cs.test", "", transport=httpx.MockTransport(never_called))
    assert time.monotonic() - started < 0.1


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("token", ["cs_abc\n", " cs_abc", "cs abc", "cs_\x00abc", "cs_äbc"])
def test_a_token_with_characters_no_token_has_is_refused(client, token):
    with pytest.raises(ValueError, match="spaces, line breaks or other characters"):
        client("http://cs.test", token, transport=httpx.MockTransport(never_called))

