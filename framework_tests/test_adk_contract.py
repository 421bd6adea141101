"""ContextStoreSessionService against ADK's session-service contract (our own tests of what
ADK's tests/unittests/sessions/test_session_service.py checks; that file is not on PyPI), and
the requests each call costs at 10 and 10,000 events of history."""

import asyncio
import time

import pytest
from contextstore_client.adapters.adk import ContextStoreSessionService
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from framework_tests.counting import counting_client, fresh_namespace


@pytest.fixture
def counted():
    client, transport = counting_client()
    yield ContextStoreSessionService(client, namespace=fresh_namespace()), transport
    client.close()


@pytest.fixture
def service(counted):
    return counted[0]


def user_event(text: str, *, at: float, delta: dict | None = None, invocation: str = "inv") -> Event:
    return Event(invocation_id=invocation, author="user", timestamp=at,
                 content=types.Content(role="user", parts=[types.Part(text=text)]),
                 actions=EventActions(state_delta=delta or {}))


async def test_create_get_list_delete(service):
    assert await service.get_session(app_name="app", user_id="u", session_id="nope") is None
    made = await service.create_session(app_name="app", user_id="u", session_id="s1", state={"k": "v"})
    assert made.id == "s1" and made.state == {"k": "v"}
    with pytest.raises(AlreadyExistsError):
        await service.create_session(app_name="app", user_id="u", session_id="s1")
    generated = await service.create_session(app_name="app", user_id="u2")
    assert generated.id
    assert await service.get_session(app_name="app", user_id="other", session_id="s1") is None
    listed = (await service.list_sessions(app_name="app", user_id="u")).sessions
    assert [(s.id, s.state) for s in listed] == [("s1", {"k": "v"})]
    assert {s.id for s in (await service.list_sessions(app_name="app")).sessions} == {"s1", generated.id}
    await service.delete_session(app_name="app", user_id="u", session_id="s1")
    assert await service.get_session(app_name="app", user_id="u", session_id="s1") is None


async def test_app_user_and_temp_state_scopes(service):
    now = time.time()
    a = await service.create_session(app_name="app", user_id="ann",
                                     state={"app:theme": "dark", "user:lang": "fi"})
    b = await service.create_session(app_name="app", user_id="bob")
    await service.append_event(a, user_event("hi", at=now, delta={"s": 1, "temp:scratch": 2, "user:n": 3}))
    assert a.state["temp:scratch"] == 2  # visible during the invocation, never stored
    stored_a = await service.get_session(app_name="app", user_id="ann", session_id=a.id)
    assert stored_a.state == {"s": 1, "app:theme": "dark", "user:lang": "fi", "user:n": 3}
    assert "temp:scratch" not in stored_a.events[0].actions.state_delta
    stored_b = await service.get_session(app_name="app", user_id="bob", session_id=b.id)
    assert stored_b.state == {"app:theme": "dark"}
    assert await service.get_user_state(app_name="app", user_id="ann") == {"lang": "fi", "n": 3}


async def test_events_round_trip_with_bytes_and_config(service):
    session = await service.create_session(app_name="app", user_id="u")
    now = time.time()
    blob = Event(invocation_id="inv", author="model", timestamp=now,
                 content=types.Content(role="model",
                                       parts=[types.Part.from_bytes(data=b"\x00\xff", mime_type="x/y")]))
    await service.append_event(session, blob)
    for i in range(3):
        await service.append_event(session, user_event(f"m{i}", at=now + 1 + i))
    full = await service.get_session(app_name="app", user_id="u", session_id=session.id)
    assert full.events[0].content.parts[0].inline_data.data == b"\x00\xff"
    assert [e.id for e in full.events] == [e.id for e in session.events]
    assert full.last_update_time == pytest.approx(now + 3, abs=1e-6)
    recent = await service.get_session(app_name="app", user_id="u", session_id=session.id,
                                       config=GetSessionConfig(num_recent_events=2))
    assert [e.content.parts[0].text for e in recent.events] == ["m1", "m2"]
    after = await service.get_session(app_name="app", user_id="u", session_id=session.id,
                                      config=GetSessionConfig(after_timestamp=now + 2))
    assert [e.content.parts[0].text for e in after.events] == ["m1", "m2"]


async def test_a_stale_writer_is_refused_and_writes_nothing(service):
    session = await service.create_session(app_name="app", user_id="u")
    first = await service.get_session(app_name="app", user_id="u", session_id=session.id)
    second = first.model_copy(deep=True)
    now = time.time()
    results = await asyncio.gather(service.append_event(first, user_event("a", at=now, delta={"a": 1})),
                                   service.append_event(second, user_event("b", at=now, delta={"b": 1})),
                                   return_exceptions=True)
    errors = [r for r in results if isinstance(r, Exception)]
    assert len(errors) == 1 and isinstance(errors[0], ValueError) and "modified in storage" in str(errors[0])
    stored = await service.get_session(app_name="app", user_id="u", session_id=session.id)
    assert len(stored.events) == 1 and len(stored.state) == 1


@pytest.mark.parametrize("history", [10, 10_000])
async def test_requests_per_call(counted, history):
    service, transport = counted
    client = service.client
    sessions = []
    for i in range(10):
        transport.count = 0
        sessions.append(await service.create_session(app_name="app", user_id="u", session_id=f"s{i}"))
        assert transport.count <= 2
    for start in range(0, history, 1000):  # history written straight through the API
        events = [{"type": "Message", "content": f"old {j}"}
                  for j in range(start, min(history, start + 1000))]
        client.commit_agent_session(service._app("app"), "u", "s0", events=events)
    session = await service.get_session(app_name="app", user_id="u", session_id="s0",
                                        config=GetSessionConfig(num_recent_events=5))

    transport.count = 0
    await service.append_event(session, user_event("new", at=time.time(), delta={"x": 1, "user:y": 2}))
    assert transport.count == 1
    transport.count = 0
    await service.get_session(app_name="app", user_id="u", session_id="s0",
                              config=GetSessionConfig(num_recent_events=5))
    assert transport.count <= 2
    transport.count = 0
    assert len((await service.list_sessions(app_name="app", user_id="u")).sessions) == 10
    assert transport.count <= 2
    transport.count = 0
    await service.delete_session(app_name="app", user_id="u", session_id="s0")
    assert transport.count <= 2


async def test_each_event_stores_its_id_invocation_and_text_once(service):
    """The row holds the event id (client_id), invocation id (run_id) and a single text part
    (content); data["adk"] keeps the rest and get_session puts them back, exactly."""
    session = await service.create_session(app_name="app", user_id="u", session_id="slim")
    sent = [user_event("hello\nthere", at=time.time()),
            Event(invocation_id="inv", author="bot", timestamp=time.time(),
                  content=types.Content(role="model", parts=[types.Part(text="a"), types.Part(text="b")])),
            Event(invocation_id="x" * 250, author="bot", timestamp=time.time(),
                  actions=EventActions(state_delta={"k": 1}))]
    for event in sent:
        await service.append_event(session, event)
    raw = service.client.read_agent_session(service._app("app"), "u", "slim")["events"]
    first = raw[0]["data"]
    assert first["adk_row"] == ["id", "invocation_id", "text:0"]
    assert "id" not in first["adk"] and "text" not in first["adk"]["content"]["parts"][0]
    assert "state_delta" not in first["adk"]["actions"]
    assert raw[1]["data"]["adk_row"] == ["id", "invocation_id"]  # two text parts stay in data
    assert raw[2]["data"]["adk"]["invocation_id"] == "x" * 250  # longer than a run id: kept
    got = await service.get_session(app_name="app", user_id="u", session_id="slim")
    assert got.events == sent
