"""The client's framework-session calls against a live server, through ContextStore and
AsyncContextStore alike, and AsyncContextStore's retry rules against a mock transport."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import contextstore_client as cs_client
import httpx
import pytest
from contextstore_client import AsyncContextStore

from tests.client_flavours import FLAVOURS, client_flavour

WHO = ("shop", "ann", "s1")


@pytest.fixture(params=FLAVOURS)
def flavour(request):
    """Each test that takes it runs twice: through ContextStore and AsyncContextStore."""
    with client_flavour(request.param) as made:
        yield made


@pytest.fixture
def cs(flavour, live_server, transactional_db, token):
    with flavour.connect(live_server.url, token[1], retries=1, backoff=0.01) as store:
        yield store


def test_sessions_round_trip_through_the_client(cs):
    assert cs.read_agent_session(*WHO) is None
    made = cs.create_agent_session(*WHO, state={"a": 1}, user_state={"lang": "fi"})
    assert made["state"] == {"a": 1} and made["user_state"] == {"lang": "fi"}
    with pytest.raises(cs_client.Conflict):
        cs.create_agent_session(*WHO)
    result = cs.commit_agent_session(*WHO, events=[{"type": "Message", "content": "hi"}], state={"b": 2},
                                     blobs={"k": (b"\x00\x01", {"kind": "raw"})}, if_match=1)
    assert result["revision"] == 2 and result["last_seq"] == 1
    with pytest.raises(cs_client.StaleRevision):
        cs.commit_agent_session(*WHO, events=[{"type": "Message", "content": "late"}], expected_last_seq=0)
    read = cs.read_agent_session(*WHO, limit=5, blobs=["k"])
    assert read["state"] == {"a": 1, "b": 2} and read["blobs"]["k"]["data"] == b"\x00\x01"
    assert cs.agent_blobs(*WHO, [], prefixes=["k"])["k"]["meta"] == {"kind": "raw"}
    assert cs.list_agent_sessions("shop", user_id="ann")["results"][0]["key"] == "s1"
    assert cs.retract_agent_event(*WHO)["content"] == "hi"
    assert cs.retract_agent_event(*WHO) is None
    assert cs.patch_scoped_state("shop", "app", {"x": 1})["app_state"] == {"x": 1}
    assert cs.scoped_states("shop", "ann")["user_state"] == {"lang": "fi"}
    assert cs.clear_agent_session(*WHO) == 0
    assert cs.delete_agent_session(*WHO) == 1


def run_in_own_loop(coro):
    """asyncio.run in a thread of its own: the browser tests' Playwright keeps an event loop
    running in the main thread of the same pytest process."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def scripted(answers: list) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.MockTransport(handler), seen


def run(coro_factory, transport, retries: int = 3):
    async def go():
        store = AsyncContextStore("http://cs.test", "cs_t", transport=transport, retries=retries,
                                  backoff=0.001)
        try:
            return await coro_factory(store)
        finally:
            await store.aclose()
    return run_in_own_loop(go())


def test_async_commits_are_retried_with_the_same_batch_after_a_lost_answer():
    ok = httpx.Response(200, json={"revision": 0, "last_seq": 1, "events": []})
    transport, seen = scripted([httpx.ReadTimeout("lost"), httpx.Response(503), ok])
    run(lambda s: s.commit_agent_session(*WHO, events=[{"type": "Message", "content": "x"}]), transport)
    assert len(seen) == 3 and seen[0].content == seen[1].content == seen[2].content
    assert b'"batch_id"' in seen[0].content


def test_async_retracts_are_not_repeated_after_a_server_error():
    transport, seen = scripted([httpx.Response(500, json={"error": {
        "code": "server_error", "message": "boom", "details": {}}})])
    with pytest.raises(cs_client.ServerError):
        run(lambda s: s.retract_agent_event(*WHO), transport)
    assert len(seen) == 1


def test_async_connection_errors_and_throttling_are_retried_then_reported():
    transport, seen = scripted([httpx.ConnectError("refused"),
                                httpx.Response(429, headers={"Retry-After": "0"}, json={"error": {
                                    "code": "throttled", "message": "slow", "details": {}}}),
                                httpx.Response(200, json={"app_state": {}, "user_state": {}})])
    assert run(lambda s: s.scoped_states("shop"), transport)["app_state"] == {}
    assert len(seen) == 3
    transport, seen = scripted([httpx.ConnectError("refused")] * 3)
    with pytest.raises(cs_client.ConnectionFailed):
        run(lambda s: s.scoped_states("shop"), transport, retries=2)
    transport, _ = scripted([httpx.Response(412, json={"error": {
        "code": "stale_history", "message": "stale", "details": {}}})])
    with pytest.raises(cs_client.StaleRevision) as stale:
        run(lambda s: s.commit_agent_session(*WHO, expected_last_seq=3), transport)
    assert stale.value.code == "stale_history"


def test_concurrent_writers_on_one_history_one_wins_and_replays_apply_once(flavour, cs, live_server, token):
    """Four agents commit at once on the history they all read (one wins, the others are
    told it is stale), then all four replay one batch (applied once, same answer)."""
    from concurrent.futures import ThreadPoolExecutor

    cs.create_agent_session(*WHO)

    def stale_writer(i: int) -> str:
        with flavour.connect(live_server.url, token[1], retries=3, backoff=0.01) as mine:
            try:
                mine.commit_agent_session(*WHO, events=[{"type": "Message", "content": f"w{i}"}],
                                          user_state={f"w{i}": True}, expected_last_seq=0)
                return "won"
            except cs_client.StaleRevision:
                return "stale"

    def replayer(i: int) -> dict:
        with flavour.connect(live_server.url, token[1], retries=3, backoff=0.01) as mine:
            return mine.commit_agent_session(*WHO, events=[{"type": "Message", "content": "once",
                                                            "client_id": "once"}],
                                             app_state={"n": 1}, batch_id="same-batch")

    with ThreadPoolExecutor(4) as pool:
        assert sorted(pool.map(stale_writer, range(4))) == ["stale", "stale", "stale", "won"]
        answers = list(pool.map(replayer, range(4)))
    assert all(a == answers[0] for a in answers)
    read = cs.read_agent_session(*WHO)
    assert [e["content"] for e in read["events"]][1:] == ["once"] and read["app_revision"] == 1
    assert len(read["user_state"]) == 1
