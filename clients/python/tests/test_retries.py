"""Which failures are tried again, and which raise at once, through both clients."""

from __future__ import annotations

import time

import contextstore_client as cs
import httpx
import pytest
from client_fakes import error, handle_of, settle

pytestmark = pytest.mark.anyio

APPENDED = {"events": [{"seq": 1, "id": 1, "token_count": 1, "client_id": "x"}]}
BUSY = error(503, "unavailable", "busy")


async def test_an_append_is_retried_with_the_same_client_ids_after_a_lost_answer(connect, api):
    api.on("POST", "threads/7/events/", httpx.ReadTimeout("lost"), BUSY, APPENDED)
    await settle(handle_of(connect()).append([{"type": "Message", "content": "x"}]))
    bodies = [r.content for r in api.seen]
    assert len(bodies) == 3 and bodies[0] == bodies[1] == bodies[2] and b'"client_id"' in bodies[0]


async def test_a_post_that_is_unsafe_to_repeat_is_not_resent_after_a_server_error(connect, api):
    api.on("POST", "threads/7/iteration/", error(500, "server_error", "boom"))
    with pytest.raises(cs.ServerError) as caught:
        await settle(handle_of(connect()).increment_iteration())
    assert caught.value.status == 500 and len(api.seen) == 1


async def test_a_lost_answer_to_an_unsafe_post_is_reported_not_resent(connect, api):
    api.on("POST", "threads/7/iteration/", httpx.ReadTimeout("lost"), {"iteration": 4})
    with pytest.raises(cs.ConnectionFailed) as caught:
        await settle(handle_of(connect()).increment_iteration())
    assert len(api.seen) == 1 and isinstance(caught.value.__cause__, httpx.ReadTimeout)


async def test_refused_connections_and_throttling_are_retried_then_reported(connect, api):
    api.on("POST", "threads/7/iteration/", httpx.ConnectError("refused"),
           (429, {"error": {"code": "throttled", "message": "slow down", "details": {}}}), {"iteration": 3})
    assert await settle(handle_of(connect()).increment_iteration()) == 3
    assert len(api.seen) == 3
    api.seen.clear()
    api.on("GET", "threads/7/state/", httpx.ConnectError("refused"))
    with pytest.raises(cs.ConnectionFailed):
        await settle(handle_of(connect(retries=2)).state())
    assert len(api.seen) == 3  # the first attempt and two retries


async def test_a_conditional_write_is_not_resent_after_a_lost_answer(connect, api):
    lost = httpx.ReadTimeout("lost")
    api.on("PUT", "threads/7/state/", lost, lost, {"state": {}, "memory": [], "revision": 4})
    with pytest.raises(cs.ConnectionFailed):
        await settle(handle_of(connect()).put_state({"k": 1}, if_match=3))
    assert len(api.seen) == 1
    assert (await settle(handle_of(connect()).put_state({"k": 1}))).revision == 4  # unconditional: resent
    assert len(api.seen) == 3


async def test_retry_after_is_a_floor_under_the_backoff(connect, api):
    api.on("GET", "threads/7/state/", lambda request: httpx.Response(
        503, headers={"Retry-After": "0.3"}, json=BUSY[1]), {"state": {}, "memory": [], "revision": 2})
    started = time.monotonic()
    assert (await settle(handle_of(connect()).state())).revision == 2
    assert time.monotonic() - started >= 0.3 and len(api.seen) == 2  # backoff is 1 ms


async def test_other_5xx_are_retried_for_reads_and_the_last_error_is_raised(connect, api):
    api.on("GET", "threads/7/state/", error(502, "bad_gateway", "upstream"))
    with pytest.raises(cs.ServerError) as caught:
        await settle(handle_of(connect(retries=2)).state())
    assert caught.value.status == 502 and len(api.seen) == 3


async def test_no_retries_sends_once(connect, api):
    api.on("POST", "threads/7/iteration/", BUSY, {"iteration": 4})
    with pytest.raises(cs.ServerError) as caught:
        await settle(handle_of(connect(retries=0)).increment_iteration())
    assert caught.value.status == 503 and len(api.seen) == 1


async def test_an_api_refusal_is_raised_at_once(connect, api):
    api.on("GET", "threads/7/state/", error(404, "not_found", "gone"))
    with pytest.raises(cs.NotFound):
        await settle(handle_of(connect()).state())
    assert len(api.seen) == 1


async def test_a_request_httpx_cannot_send_is_never_retried(connect, api):
    """A local protocol error (an illegal header value, say) fails the same way every time."""
    api.on("GET", "threads/7/state/", httpx.LocalProtocolError("Illegal header value"))
    started = time.monotonic()
    with pytest.raises(cs.ConnectionFailed) as caught:
        await settle(handle_of(connect(backoff=1.0)).state())
    assert len(api.seen) == 1 and time.monotonic() - started < 0.5
    assert isinstance(caught.value.__cause__, httpx.LocalProtocolError)
