import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone as dj_timezone

from contextstore.db import COPY_THRESHOLD, bulk_insert_events, insert_sql
from contextstore.errors import Conflict, InvalidInput, PayloadTooLarge
from contextstore.eventspec import event_spec
from contextstore.fields import JSONText
from contextstore.models import AuditLog, Event, Run
from contextstore.selectors.events import event_search
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.history import event_build
from contextstore.services.sessions import thread_ensure
from tests.conftest import messages


def test_it_numbers_events_without_gaps(thread, actor):
    event_append(thread=thread, events=messages(3), actor=actor)
    result = event_append(thread=thread, events=messages(2), actor=actor)
    assert [e.seq for e in result.events] == [4, 5]
    assert list(thread.events.values_list("seq", flat=True).order_by("seq")) == [1, 2, 3, 4, 5]


def test_it_counts_tokens_once_and_keeps_counters(thread, session, actor):
    result = event_append(
        thread=thread,
        actor=actor,
        events=[
            {"type": "Message", "role": "user", "content": "hello world"},
            {"type": "LLMComplete", "data": {"input_tokens": 10, "output_tokens": 5, "cost": 0.25}},
            {"type": "Error", "content": "boom"},
        ],
    )
    thread.refresh_from_db()
    session.refresh_from_db()
    assert result.events[0].token_count == 2
    assert thread.event_count == 3 and thread.last_seq == 3
    assert thread.active_event_count == 2  # LLMComplete is runtime-only
    assert thread.token_total == sum(e.token_count for e in result.events)
    assert (session.event_count, session.error_count, float(session.cost_total)) == (3, 1, 0.25)
    assert thread.last_event_at is not None


def test_a_replayed_client_id_returns_the_stored_event(thread, actor):
    event = {"type": "Message", "content": "hi", "client_id": "c-1"}
    first = event_append(thread=thread, events=[event], actor=actor)
    again = event_append(thread=thread, events=[event], actor=actor)
    assert again.created == 0 and again.events[0].pk == first.events[0].pk
    assert thread.events.count() == 1


def test_a_client_id_reused_for_another_payload_is_a_conflict_and_writes_nothing(thread, actor):
    event_append(
        thread=thread, events=[{"type": "Message", "content": "hi", "client_id": "c-1"}], actor=actor
    )
    with pytest.raises(Conflict) as info:
        event_append(
            thread=thread,
            actor=actor,
            events=[
                {"type": "Message", "content": "new"},
                {"type": "Message", "content": "changed", "client_id": "c-1"},
            ],
        )
    assert info.value.code == "idempotency_conflict"
    assert thread.events.count() == 1


def test_a_row_keeps_half_its_payloads_hash_and_one_stored_whole_before_still_replays(thread, actor):
    import hashlib
    import json

    event = {"type": "Message", "content": "hi", "client_id": "c-1"}
    [stored] = event_append(thread=thread, events=[event], actor=actor).events
    stored.refresh_from_db()
    assert len(stored.payload_hash) == 32
    # as a row written before the hash was cut: all 64 hex digits of the same SHA-256
    whole = hashlib.sha256(json.dumps({"type": "Message", "content": "hi"}, sort_keys=True,
                                      separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
    assert whole.startswith(stored.payload_hash)
    Event.objects.filter(pk=stored.pk).update(payload_hash=whole)
    again = event_append(thread=thread, events=[event], actor=actor)
    assert again.created == 0 and again.events[0].pk == stored.pk
    with pytest.raises(Conflict):
        event_append(thread=thread, events=[{**event, "content": "changed"}], actor=actor)
    assert thread.events.count() == 1


def test_duplicates_inside_one_batch_are_stored_once(thread, actor):
    event = {"type": "Message", "content": "hi", "client_id": "dup"}
    result = event_append(thread=thread, events=[event, event], actor=actor)
    assert result.created == 1 and result.events[0].pk == result.events[1].pk


@pytest.mark.parametrize(
    "bad",
    [
        {"content": "no type"},
        {"type": "Not a type!"},
        {"type": "Message", "content": 5},
        {"type": "Message", "parts": "x"},
        {"type": "Message", "visible": "yes"},
        {"type": "Message", "occurred_at": "yesterday"},
        {"type": "Message", "surprise": 1},
        "text",
    ],
)
def test_bad_events_are_refused_whole(thread, actor, bad):
    with pytest.raises(InvalidInput):
        event_append(thread=thread, events=[{"type": "Message", "content": "ok"}, bad], actor=actor)
    assert thread.events.count() == 0


def test_limits_are_payload_too_large(thread, actor, settings):
    settings.CONTEXTSTORE = {
        **settings.CONTEXTSTORE,
        "MAX_EVENTS_PER_BATCH": 3,
        "MAX_EVENT_CONTENT_BYTES": 10,
    }
    with pytest.raises(PayloadTooLarge):
        event_append(thread=thread, events=messages(4, words=1), actor=actor)
    with pytest.raises(PayloadTooLarge):
        event_append(thread=thread, events=[{"type": "Message", "content": "x" * 11}], actor=actor)
    for too_big in ("é" * 6, "😀" * 3, "😀😀xxx"):  # the limit counts UTF-8 bytes, not characters
        with pytest.raises(PayloadTooLarge):
            event_append(thread=thread, events=[{"type": "Message", "content": too_big}], actor=actor)
    assert thread.events.count() == 0
    fits = ["x" * 10, "é" * 5, "😀" * 2 + "xx"]
    event_append(thread=thread, events=[{"type": "Message", "content": c} for c in fits], actor=actor)
    assert [e.content for e in thread.events.order_by("seq")] == fits


def test_events_link_to_runs_which_sum_their_llm_usage(thread, actor):
    event_append(
        thread=thread,
        actor=actor,
        events=[
            {"type": "Task", "content": "go", "run_id": "r1"},
            {
                "type": "LLMComplete",
                "run_id": "r1",
                "data": {"input_tokens": 100, "output_tokens": 7, "cost": 0.5},
            },
            {
                "type": "LLMComplete",
                "run_id": "r1",
                "data": {"prompt_tokens": 1, "completion_tokens": 1, "cost": "0.25"},
            },
            {"type": "StepResult", "run_id": "r1", "step": "answer", "content": "42"},
        ],
    )
    run = Run.objects.get(thread=thread, run_id="r1")
    assert (run.event_count, run.input_tokens, run.output_tokens, float(run.cost)) == (4, 101, 8, 0.75)
    assert run.step_results == {"answer": "42"}


def test_each_batch_is_audited(thread, actor):
    event_append(thread=thread, events=messages(3), actor=actor)
    log = AuditLog.objects.get(action="events.append")
    assert log.details == {"count": 3, "first_seq": 1, "last_seq": 3}


@pytest.mark.slow
def test_append_costs_the_same_number_of_queries_whatever_the_history(thread, actor):
    event_append(thread=thread, events=messages(5), actor=actor)
    with CaptureQueriesContext(connection) as small:
        event_append(thread=thread, events=messages(100, words=5), actor=actor)
    for _ in range(10):
        event_append(thread=thread, events=messages(500, words=5), actor=actor)
    with CaptureQueriesContext(connection) as large:
        event_append(thread=thread, events=messages(100, words=5), actor=actor)
    assert len(large) == len(small)


@pytest.fixture
def history(thread, actor):
    event_append(
        thread=thread,
        actor=actor,
        events=[
            {"type": "Task", "content": "Fix the Timeout in export", "run_id": "r1", "call_id": "c1"},
            {
                "type": "Message",
                "role": "user",
                "content": "what timed out?",
                "run_id": "r1",
                "call_id": "c1",
            },
            {"type": "Error", "content": "TimeoutError after 30s", "run_id": "r1", "call_id": "c1"},
            {"type": "LLMComplete", "data": {"cost": 1}, "run_id": "r1", "call_id": "c1"},
            {
                "type": "StepResult",
                "step": "analyze",
                "content": "replica lag",
                "run_id": "r2",
                "call_id": "c2",
            },
            {
                "type": "Message",
                "role": "assistant",
                "content": "Moving to the primary.",
                "run_id": "r2",
                "call_id": "c2",
            },
        ],
    )
    return thread


def seqs(events) -> list[int]:
    return [e.seq for e in events]


def test_query_filters_are_anded_and_chronological(history):
    assert seqs(event_search(thread=history, types=["Message", "Error"])) == [2, 3, 6]
    assert seqs(event_search(thread=history, types=["Message"], run_id="r2")) == [6]
    assert seqs(event_search(thread=history, text="timeout")) == [1, 3]  # case-insensitive
    assert seqs(event_search(thread=history, call_id="c1", visible=True)) == [1, 2, 3]
    assert seqs(event_search(thread=history, step="analyze")) == [5]
    assert seqs(event_search(thread=history, after_seq=2, before_seq=5)) == [3, 4]


def test_limit_keeps_the_most_recent_in_order(history):
    assert seqs(event_search(thread=history, limit=2)) == [5, 6]
    assert seqs(event_search(thread=history, types=["Message"], limit=1)) == [6]


def test_current_call_is_the_call_of_the_newest_event_that_has_one(history):
    assert seqs(event_search(thread=history, current_call=True)) == [5, 6]


def test_regex_search_is_case_insensitive_and_done_by_the_database(history):
    assert seqs(event_search(thread=history, regex=r"time(d)?\s?out")) == [1, 2, 3]


def test_a_broken_regex_is_a_clear_input_error(history):
    with pytest.raises(InvalidInput) as info:
        event_search(thread=history, regex="(unclosed")
    assert "regular expression" in info.value.message


def test_status_all_includes_collapsed_events(history, actor):

    collapse_create(thread=history, start_position=1, end_position=3, summary_text="earlier", actor=actor)
    assert seqs(event_search(thread=history)) == [4, 5, 6, 7]
    assert seqs(event_search(thread=history, status="all")) == [1, 2, 3, 4, 5, 6, 7]
    assert seqs(event_search(thread=history, status="collapsed")) == [1, 2, 3]


def test_a_slow_regex_is_stopped_by_the_time_limit(thread, actor, settings):
    """PostgreSQL's statement timeout, or the deadline of the SQLite REGEXP function."""
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "REGEX_TIMEOUT_MS": 1}
    event_append(thread=thread, events=messages(1000, words=200), actor=actor)
    with pytest.raises(InvalidInput) as info:
        event_search(thread=thread, regex=r"(context\s*)+nothing-matches-this")
    assert info.value.code == "regex_timeout"
    assert Event.objects.filter(thread=thread).count() == 1000


def test_a_catastrophic_pattern_on_one_event_is_stopped_too(thread, actor, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "REGEX_TIMEOUT_MS": 200}
    event_append(thread=thread, events=[{"type": "Message", "content": "x" * 40}], actor=actor)
    started = time.monotonic()
    try:
        hits = event_search(thread=thread, regex=r"(x+x+)+y")
    except InvalidInput as exc:
        assert exc.code == "regex_timeout"
    else:
        assert hits == []  # an engine without backtracking answers at once
    assert time.monotonic() - started < 5


def test_appending_never_reads_the_agent_state(thread, actor):
    """However big the state grows, an append does not load (and decode) it."""
    with CaptureQueriesContext(connection) as queries:
        event_append(thread=thread, events=messages(2), actor=actor)
    selects = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")]
    assert selects and not any('"conversation_history"' in sql or '"memory"' in sql for sql in selects)


def test_copy_stores_what_bulk_create_stores(session, actor):
    """The COPY path passes most values to psycopg as they are; what lands in each column is the
    text an INSERT through bulk_create stores, at the value edges."""
    if connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's; SQLite inserts through bulk_create")
    leap_day = datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    edge_texts = ["", "plain", "ünïcödé 😀 \u200d\u2028 עברית", "tab\tnew\nline\\back\r", "x" * 5000,
                  "nul\x00 and the escape's own ␀ ␛"]
    raws = []
    for i in range(COPY_THRESHOLD + 5):
        raws.append({
            "type": ["Message", "ToolCall", "Custom.Thing"][i % 3],
            "role": ["user", "assistant", ""][i % 3],
            "content": edge_texts[i % len(edge_texts)],
            "parts": [{"type": "text", "text": edge_texts[(i + 1) % len(edge_texts)]}] if i % 2 else None,
            "data": [None, {"n": 2**70, "f": 0.1, "ü": ["\\", "\""]}, "text", 0, [], {}][i % 6],
            "run_id": "r1" if i % 4 == 0 else "",
            "call_id": "c😀" if i % 5 == 0 else "",
            "client_id": f"k-{i}" if i % 2 else None,
            "visible": bool(i % 3),
            "occurred_at": leap_day.isoformat() if i % 2 else None,
        })
    specs = [event_spec(raw, f"events[{i}]") for i, raw in enumerate(raws)]
    now = dj_timezone.now()

    def stored(name, insert):
        thread, _ = thread_ensure(session=session, name=name, actor=actor)
        run = Run.objects.create(thread=thread, run_id="r1")
        objs = [event_build(thread=thread, seq=2**62 + i, spec=spec, now=now,
                                    run=run if spec.run_id else None)
                for i, spec in enumerate(specs)]
        objs[1].data = JSONText('{"b": 1, "a": 2}')  # already JSON text, stored verbatim
        objs[2].visible = 1  # a value of another type goes through Django's preparation
        objs[3].occurred_at = datetime(1, 1, 1, tzinfo=UTC)
        insert(objs)
        columns = [f.column for f in Event._meta.concrete_fields
                   if f.column not in ("id", "thread_id", "run_id", "created_at")]
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {', '.join(c + '::text' for c in columns)}, run_id IS NULL, created_at "
                "FROM contextstore_event WHERE thread_id = %s ORDER BY seq", [thread.pk])
            return cursor.fetchall()

    def by_statement(objs):  # the folded append's INSERT: compiled once per shape, then reused
        for chunk in [objs[:1], objs[1:2], objs[2:5], objs[5:8], *[[obj] for obj in objs[8:]]]:
            text, params = insert_sql(Event, chunk, returning=("id", "seq"), ignore_conflicts=True)
            with connection.cursor() as cursor:
                cursor.execute(text, params)
                assert [seq for _, seq in cursor.fetchall()] == [obj.seq for obj in chunk]
            assert all(obj.created_at is not None for obj in chunk)

    copied = stored("copied", lambda objs: bulk_insert_events(objs, now))
    inserted = stored("inserted", Event.objects.bulk_create)
    statement = stored("statement", by_statement)
    assert len(copied) == len(raws)
    assert [row[:-1] for row in copied] == [row[:-1] for row in inserted]
    assert [row[:-1] for row in statement] == [row[:-1] for row in inserted]
    assert {row[-1] for row in copied} == {now}


def test_event_build_builds_what_the_keyword_constructor_builds(thread):
    """event_build fills Event's columns positionally (cheaper than Model.__init__'s keywords):
    the instance equals Event(...) with keywords, its thread and run cached alike."""
    # Defaults are read once per process: a callable one (a fresh dict per event) would be shared.
    assert not any(f.has_default() and callable(f.default) for f in Event._meta.concrete_fields)
    run = Run.objects.create(thread=thread, run_id="r1")
    now = dj_timezone.now()
    raws = [{"type": "Message", "role": "user", "content": "hi", "client_id": "k"},
            {"type": "ToolCall", "parts": [{"type": "text", "text": "x"}], "data": {"a": 1},
             "run_id": "r1", "occurred_at": "2020-01-01T00:00:00"}]
    for i, raw in enumerate(raws):
        spec = event_spec(raw, f"events[{i}]")
        ran = run if spec.run_id else None
        built = event_build(thread=thread, seq=7, spec=spec, now=now, run=ran, position=3,
                                    status=Event.Status.COLLAPSED)
        expected = Event(
            thread=thread, seq=7, position=3, type=spec.type, role=spec.role, content=spec.content,
            parts=spec.parts, data=spec.data, run=ran, call_id=spec.call_id, step=spec.step,
            anchor=spec.anchor, client_id=spec.client_id, payload_hash=spec.payload_hash,
            token_count=spec.token_count, thinking_tokens=spec.thinking_tokens,
            visible=spec.visible, status=Event.Status.COLLAPSED, occurred_at=spec.occurred_at or now)
        state, expected_state = built.__dict__.pop("_state"), expected.__dict__.pop("_state")
        assert built.__dict__ == expected.__dict__
        assert (state.adding, state.db, state.fields_cache) == (
            expected_state.adding, expected_state.db, expected_state.fields_cache)
