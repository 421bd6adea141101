"""ContextStoreMemoryService against ADK's memory-service behaviour: the assertions of ADK's own
tests/unittests/memory/test_in_memory_memory_service.py (adk-python v2.0.0; not on PyPI), each
run against ADK's InMemoryMemoryService and ContextStoreMemoryService alike, where the original
reads the service's private dict `held()` reads what each service holds. Then what 2.13.0's
InMemoryMemoryService adds (ten best, deletion, mixed scripts), random sessions searched on both
with identical answers, and the timings of both (printed for docs/performance.md)."""

import json
import random
import time
import uuid
from typing import Any

import pytest
from contextstore_client.adapters.adk import ContextStoreMemoryService, make_test_memory_service
from google.adk.events.event import Event
from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

APP = "test-app"
USER = "test-user"
OTHER_USER = "another-user"


def event(event_id: str, text: str | None, *, author: str = "user", at: float = 12345, **kw: Any) -> Event:
    content = types.Content(parts=[types.Part(text=text)]) if text is not None else None
    return Event(id=event_id, invocation_id=f"inv-{event_id}", author=author, timestamp=at,
                 content=content, **kw)


SESSION_1 = Session(app_name=APP, user_id=USER, id="session-1", last_update_time=1000, events=[
    event("event-1a", "The ADK is a great toolkit.", at=12345),
    event("event-1b", None, at=12346),  # no content: left out
    event("event-1c", "I agree. The Agent Development Kit (ADK) rocks!", author="model", at=12347),
])
SESSION_2 = Session(app_name=APP, user_id=USER, id="session-2", last_update_time=2000, events=[
    event("event-2a", "I like to code in Python.", at=54321)])
SESSION_OTHER_USER = Session(app_name=APP, user_id=OTHER_USER, id="session-3", last_update_time=3000,
                             events=[event("event-3a", "This is a secret.", at=60000)])
SESSION_NO_EVENTS = Session(app_name=APP, user_id=USER, id="session-4", last_update_time=4000)


@pytest.fixture(params=["in-memory", "contextstore"])
async def service(request):
    if request.param == "in-memory":
        yield InMemoryMemoryService()
        return
    made = make_test_memory_service()
    yield made
    await made.close()


async def held(service, app: str = APP, user: str = USER) -> dict[str, list[str]]:
    """session id -> the ids of the events it holds, in order."""
    if isinstance(service, InMemoryMemoryService):
        return {sid: [e.id for e in events]
                for sid, events in service._session_events.get((app, user), {}).items()}
    ns = service._ns(app, user)
    [items] = await service._batch([{"op": "search", "namespace_prefix": ns, "limit": 10_000,
                                     "refresh_ttl": False}])
    items = [i for i in items if i["namespace"] == ns]
    sessions = sorted((i for i in items if i["key"].endswith("/")), key=lambda i: (i["created_at"], i["key"]))
    out: dict[str, list[str]] = {i["value"]["session_id"]: [] for i in sessions}
    events = (i for i in items if not i["key"].endswith("/"))
    for item in sorted(events, key=lambda i: i["value"]["position"]):
        out[item["value"]["session_id"]].append(item["value"]["event_id"])
    return out


# --- the assertions of ADK's test_in_memory_memory_service.py --------------------------------

async def test_add_session_to_memory(service):
    await service.add_session_to_memory(SESSION_1)
    assert (await held(service))[SESSION_1.id] == ["event-1a", "event-1c"]


async def test_add_events_to_memory_with_explicit_events(service):
    await service.add_events_to_memory(app_name=APP, user_id=USER, session_id=SESSION_1.id,
                                       events=[SESSION_1.events[0]])
    assert (await held(service))[SESSION_1.id] == ["event-1a"]


async def test_add_events_to_memory_without_session_id_uses_default_bucket(service):
    await service.add_events_to_memory(app_name=APP, user_id=USER, events=[SESSION_1.events[0]])
    memory = await held(service)
    assert len(memory) == 1
    assert next(iter(memory.values())) == ["event-1a"]


async def test_add_events_to_memory_appends_without_replacing(service):
    await service.add_session_to_memory(SESSION_1)
    await service.add_events_to_memory(app_name=APP, user_id=USER, session_id=SESSION_1.id,
                                       events=[event("event-1d", "A new fact.", at=12348)])
    assert (await held(service))[SESSION_1.id] == ["event-1a", "event-1c", "event-1d"]


async def test_add_events_to_memory_deduplicates_event_ids(service):
    await service.add_session_to_memory(SESSION_1)
    await service.add_events_to_memory(app_name=APP, user_id=USER, session_id=SESSION_1.id,
                                       events=[event("event-1a", "Updated duplicate text.", at=12349)])
    assert (await held(service))[SESSION_1.id] == ["event-1a", "event-1c"]
    found = await service.search_memory(app_name=APP, user_id=USER, query="duplicate")
    assert not found.memories


async def test_add_session_with_no_events_to_memory(service):
    await service.add_session_to_memory(SESSION_NO_EVENTS)
    memory = await held(service)
    assert SESSION_NO_EVENTS.id in memory
    assert not memory[SESSION_NO_EVENTS.id]


async def test_search_memory_simple_match(service):
    await service.add_session_to_memory(SESSION_1)
    await service.add_session_to_memory(SESSION_2)
    result = await service.search_memory(app_name=APP, user_id=USER, query="Python")
    assert len(result.memories) == 1
    assert result.memories[0].content.parts[0].text == "I like to code in Python."
    assert result.memories[0].author == "user"


async def test_search_memory_case_insensitive_match(service):
    await service.add_session_to_memory(SESSION_1)
    result = await service.search_memory(app_name=APP, user_id=USER, query="development")
    assert len(result.memories) == 1
    assert result.memories[0].content.parts[0].text == "I agree. The Agent Development Kit (ADK) rocks!"


async def test_search_memory_multiple_matches(service):
    await service.add_session_to_memory(SESSION_1)
    result = await service.search_memory(app_name=APP, user_id=USER, query="How about ADK?")
    assert len(result.memories) == 2
    texts = {m.content.parts[0].text for m in result.memories}
    assert texts == {"The ADK is a great toolkit.", "I agree. The Agent Development Kit (ADK) rocks!"}


async def test_search_memory_no_match(service):
    await service.add_session_to_memory(SESSION_1)
    assert not (await service.search_memory(app_name=APP, user_id=USER, query="nonexistent")).memories


async def test_search_memory_is_scoped_by_user(service):
    await service.add_session_to_memory(SESSION_1)
    await service.add_session_to_memory(SESSION_OTHER_USER)
    assert not (await service.search_memory(app_name=APP, user_id=USER, query="secret")).memories
    other = await service.search_memory(app_name=APP, user_id=OTHER_USER, query="secret")
    assert [m.content.parts[0].text for m in other.memories] == ["This is a secret."]


# --- what google-adk 2.13.0's InMemoryMemoryService adds --------------------------------------

def entries(response) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in response.memories]


async def test_a_memory_carries_the_events_id_content_author_and_time(service):
    await service.add_session_to_memory(SESSION_1)
    [memory] = (await service.search_memory(app_name=APP, user_id=USER, query="toolkit")).memories
    assert memory == MemoryEntry(id="event-1a", content=SESSION_1.events[0].content, author="user",
                                 timestamp=memory.timestamp)
    reference = InMemoryMemoryService()
    await reference.add_session_to_memory(SESSION_1)
    [expected] = (await reference.search_memory(app_name=APP, user_id=USER, query="toolkit")).memories
    assert memory.timestamp == expected.timestamp


async def test_re_adding_a_session_replaces_what_it_holds(service):
    await service.add_session_to_memory(SESSION_1)
    await service.add_session_to_memory(SESSION_2)
    shorter = SESSION_1.model_copy(update={"events": [event("event-1c", "Changed: ADK rocks", author="model"),
                                                      event("event-1e", "new")]})
    await service.add_session_to_memory(shorter)
    assert await held(service) == {"session-1": ["event-1c", "event-1e"], "session-2": ["event-2a"]}
    [memory] = (await service.search_memory(app_name=APP, user_id=USER, query="changed")).memories
    assert memory.content.parts[0].text == "Changed: ADK rocks"


async def test_search_returns_the_ten_matching_most_words_in_the_order_added(service):
    for n in (2, 0, 1):  # sessions in the order first added, not by id
        await service.add_session_to_memory(Session(app_name=APP, user_id=USER, id=f"s{n}", events=[
            event(f"e{n}-{i}", " ".join(["apple"] + ["pear"] * (i % 3 == 0) + ["plum"] * (i % 4 == 0)))
            for i in range(6)]))
    result = await service.search_memory(app_name=APP, user_id=USER, query="apple pear plum")
    # three words: e-0; two: e-3, e-4; one: the rest, as added
    assert [m.id for m in result.memories] == ["e2-0", "e0-0", "e1-0", "e2-3", "e2-4", "e0-3", "e0-4",
                                              "e1-3", "e1-4", "e2-1"]


async def test_latin_words_inside_other_scripts_are_found(service):
    await service.add_session_to_memory(Session(app_name=APP, user_id=USER, id="ja", events=[
        event("ja-1", "私はPythonを使う"), event("ja-2", "thonは部分")]))
    found = await service.search_memory(app_name=APP, user_id=USER, query="python")
    assert [m.id for m in found.memories] == ["ja-1"]
    found = await service.search_memory(app_name=APP, user_id=USER, query="私")
    assert [m.id for m in found.memories] == ["ja-1"]


async def test_a_deleted_memory_is_gone_from_every_session_and_never_added_again(service):
    await service.add_session_to_memory(SESSION_1)
    await service.add_events_to_memory(app_name=APP, user_id=USER, events=[SESSION_1.events[0]])
    await service.delete_memory(app_name=APP, user_id=USER, memory_id="event-1a")
    await service.delete_memory(app_name=APP, user_id=USER, memory_id="no-such-memory")
    await service.delete_memory(app_name=APP, user_id=USER, memory_id=None)
    assert not (await service.search_memory(app_name=APP, user_id=USER, query="toolkit")).memories
    await service.add_session_to_memory(SESSION_1)
    await service.add_events_to_memory(app_name=APP, user_id=USER, session_id="x",
                                       events=[SESSION_1.events[0]])
    assert not (await service.search_memory(app_name=APP, user_id=USER, query="toolkit")).memories
    assert (await held(service))[SESSION_1.id] == ["event-1c"]


async def test_add_memory_is_not_supported(service):
    with pytest.raises(NotImplementedError):
        await service.add_memory(app_name=APP, user_id=USER, memories=[])


# --- random sessions, both services, the same answers -----------------------------------------

WORDS = ["adk", "python", "Python", "coffee", "tea", "私", "日本", "café", "CAFÉ", "cafe\u0301", "the", "a"]


async def test_random_sessions_are_searched_as_in_memory(service):
    if isinstance(service, InMemoryMemoryService):
        pytest.skip("compares contextstore with the in-memory service")
    rng = random.Random(48)
    reference = InMemoryMemoryService()
    user = f"u-{uuid.uuid4().hex[:6]}"
    for round_ in range(20):
        session = Session(app_name=APP, user_id=user, id=f"s{rng.randrange(4)}", events=[
            event(f"e{rng.randrange(30)}", " ".join(rng.choices(WORDS, k=rng.randrange(0, 5))),
                  at=1_700_000_000 + round_)
            for _ in range(rng.randrange(0, 6))])
        step, bucket = rng.random(), rng.choice([None, session.id])
        for target in (reference, service):
            if step < 0.6:
                await target.add_session_to_memory(session)
            elif step < 0.9:
                await target.add_events_to_memory(app_name=APP, user_id=user, events=session.events,
                                                  session_id=bucket)
            else:
                await target.delete_memory(app_name=APP, user_id=user, memory_id=f"e{round_}")
        for query in ["adk python", "café", "私 coffee", "tea the a", "日本"]:
            ours = await service.search_memory(app_name=APP, user_id=user, query=query)
            theirs = await reference.search_memory(app_name=APP, user_id=user, query=query)
            assert entries(ours) == entries(theirs), (round_, query)


# --- the timings of both, printed for docs/performance.md ---------------------------------------

async def test_timings_against_in_memory(service):
    if isinstance(service, InMemoryMemoryService):
        pytest.skip("times both in one test")
    assert isinstance(service, ContextStoreMemoryService)
    reference = InMemoryMemoryService()
    figures: dict[str, dict[str, float]] = {}
    for size in (20, 200):
        user = f"bench-{size}-{uuid.uuid4().hex[:6]}"
        for name, target in (("in_memory", reference), ("contextstore", service)):
            adds = []
            for n in range(size // 10):
                session = Session(app_name=APP, user_id=user, id=f"s{n}", events=[
                    event(f"s{n}-e{i}", f"turn {i} of session {n} about coffee and tea number {n * 10 + i}")
                    for i in range(10)])
                start = time.perf_counter()
                await target.add_session_to_memory(session)
                adds.append(time.perf_counter() - start)
            searches = []
            for _ in range(5):
                start = time.perf_counter()
                found = await target.search_memory(app_name=APP, user_id=user, query="coffee session 3")
                searches.append(time.perf_counter() - start)
            assert len(found.memories) == 10
            figures[f"{name} @{size}"] = {
                "add_session_to_memory(10 events) ms": 1000 * sorted(adds)[len(adds) // 2],
                "search_memory ms": 1000 * sorted(searches)[2]}
        floor = []
        for _ in range(5):  # one request of the store: what a round trip costs on this server now
            start = time.perf_counter()
            await service._batch([{"op": "get", "namespace": ["floor"], "key": "missing"}])
            floor.append(1000 * (time.perf_counter() - start))
        figures[f"contextstore @{size}"]["one store request ms"] = sorted(floor)[2]
    print("ADK_MEMORY_TIMINGS " + json.dumps(figures))


async def test_by_meaning_asks_the_stores_recall(service):
    """by_meaning=True: the store's recall (by meaning with an embedder; this server has none, so
    by words) ranks the memories; sessions' marks and deletions never come back as memories."""
    if isinstance(service, InMemoryMemoryService):
        pytest.skip("a contextstore option")
    service.by_meaning = True
    await service.add_session_to_memory(SESSION_1)
    await service.add_session_to_memory(SESSION_NO_EVENTS)
    await service.delete_memory(app_name=APP, user_id=USER, memory_id="event-1c")
    found = await service.search_memory(app_name=APP, user_id=USER, query="great toolkit session")
    assert [(m.id, m.author, m.content.parts[0].text) for m in found.memories] == [
        ("event-1a", "user", "The ADK is a great toolkit.")]
