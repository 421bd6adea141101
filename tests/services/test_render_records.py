"""A render record rebuilds byte-identical messages after any later change to the thread."""

import json
import threading
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from contextstore.errors import InvalidInput
from contextstore.models import ContextBlockVersion, Event, RenderRecord, StoredText
from contextstore.render_format import FORMATS
from contextstore.selectors import rendering
from contextstore.selectors import renders as render_reads
from contextstore.selectors.cache import records_compare
from contextstore.services import renders
from contextstore.services.blocks import block_delete, block_restore, block_upsert
from contextstore.services.collapses import collapse_create
from contextstore.services.common import lock_thread
from contextstore.services.events import event_append
from contextstore.services.sessions import thread_ensure
from contextstore.services.state import state_restore, state_write
from contextstore.services.threads import thread_clear_context
from tests.conftest import messages


def record(thread, actor, **options):
    thread.refresh_from_db()
    rendered = rendering.render(thread=thread, max_tokens=options.pop("max_tokens", 5000), **options)
    return rendered.body, renders.render_record(thread=thread, rendered=rendered, actor=actor)


def same(body, rebuilt) -> bool:
    keys = ("system", "messages")
    dump = lambda d: json.dumps({k: d[k] for k in keys if k in d}, ensure_ascii=False)  # noqa: E731
    return dump(body) == dump(rebuilt)


@pytest.fixture
def busy(thread, actor):
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    block_upsert(thread=thread, name="step", expr="Step {{ state.step }}", actor=actor)
    state_write(thread=thread, state={"step": 1}, summary="We met.", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(6, words=12) + [
        {"type": "ToolCall", "data": {"id": "c1", "name": "search", "arguments": {"q": "x"}}},
        {"type": "ToolResult", "content": "found", "data": {"tool_call_id": "c1"}},
        {"type": "LLMOutput", "parts": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
                                        {"type": "text", "text": "done"}]}])
    thread.refresh_from_db()
    return thread


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_record_rebuilds_the_same_messages_after_every_kind_of_change(busy, actor, fmt):
    revision_before = busy.revision
    body, kept = record(busy, actor, fmt=fmt)
    assert same(body, render_reads.render_rebuild(record=kept))

    collapse_create(thread=busy, start_position=2, end_position=4, summary_text="three turns", actor=actor)
    block_upsert(thread=busy, name="persona", value="Be thorough.", actor=actor)
    block_delete(thread=busy, name="step", actor=actor)
    state_write(thread=busy, state={"step": 9}, summary="Another summary.", actor=actor)
    thread_clear_context(thread=busy, actor=actor)
    state_restore(thread=busy, revision=revision_before, actor=actor)
    block_restore(thread=busy, name="persona", version=1, actor=actor)
    busy.refresh_from_db()
    now = rendering.context_render(thread=busy, max_tokens=5000, fmt=fmt)
    assert not same(body, now)  # the thread did change
    assert same(body, render_reads.render_rebuild(record=RenderRecord.objects.get(pk=kept.pk)))


def test_a_record_is_small_and_copies_no_text(thread, actor):
    event_append(thread=thread, events=messages(1000, words=30), actor=actor)
    body, kept = record(thread, actor, max_tokens=1_000_000)
    included = body["stats"]["sections"]["history"]["events_included"]
    assert included == 1000
    size = len(json.dumps(kept.spec))
    assert size < 1024 + 16 * included
    assert "context" not in json.dumps(kept.spec)


def test_expression_blocks_and_summaries_are_kept_once(thread, actor):
    block_upsert(thread=thread, name="step", expr="Step {{ state.step }}", actor=actor)
    state_write(thread=thread, state={"step": 1}, summary="S", actor=actor)
    record(thread, actor)
    record(thread, actor)
    assert set(StoredText.objects.values_list("text", flat=True)) == {"Step 1", "S"}


def test_llm_calls_link_to_renders_of_their_thread_only(thread, session, actor):
    _, kept = record(thread, actor)
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "m", "render_id": str(kept.pk)}}])
    other = thread_ensure(session=session, name="other", actor=actor)[0]
    for bad in (str(kept.pk), "not-a-uuid", 5):
        with pytest.raises(InvalidInput):
            event_append(thread=other, actor=actor, events=[
                {"type": "LLMComplete", "data": {"render_id": bad}}])
    assert other.events.count() == 0


def test_logged_messages_are_stored_once_per_distinct_message(thread, actor):
    sent = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    event_append(thread=thread, actor=actor, events=[{"type": "LLMCallStart", "data": {"messages": sent}}])
    grown = sent + [{"role": "assistant", "content": "hello"}, {"role": "user", "content": "bye"}]
    event_append(thread=thread, actor=actor, events=[{"type": "LLMCallStart", "data": {"messages": grown}}])
    assert StoredText.objects.count() == 4
    first, second = Event.objects.filter(type="LLMCallStart").order_by("seq")
    assert "messages" not in first.data and len(second.data["message_hashes"]) == 4
    assert render_reads.llm_call_messages(event=second, workspace_id=thread.workspace_id) == grown


def test_a_diff_says_what_changed(busy, actor):
    _, a = record(busy, actor)
    collapse_create(thread=busy, start_position=2, end_position=4, summary_text="three turns", actor=actor)
    block_upsert(thread=busy, name="persona", value="Be thorough.", actor=actor)
    event_append(thread=busy, events=messages(2, words=5), actor=actor)
    _, b = record(busy, actor)
    diff = render_reads.render_diff(a=a, b=b)
    assert diff["events_removed"]["by_reason"] == {"collapsed": {"count": 3, "ranges": [[2, 4]]}}
    assert diff["events_added"]["count"] == 3  # the summary and two new messages
    assert diff["blocks_changed"] == [{"name": "persona", "change": "changed",
                                       "version_before": 1, "version_after": 2}]
    assert diff["prefix_changed"] is True
    assert records_compare(a=a, b=b)["cause"] == "block_edit"  # the prefix comes first
    assert diff["summary_changed"] is False
    assert diff["tokens"]["history"]["before"] != diff["tokens"]["history"]["after"]


@pytest.mark.slow
def test_recording_costs_the_same_queries_whatever_the_history_length(thread, actor):
    def cost(reuse=False):
        thread.refresh_from_db()
        with CaptureQueriesContext(connection) as queries:
            rendered = rendering.render(thread=thread, max_tokens=2000, reuse=reuse)
            renders.render_record(thread=thread, rendered=rendered, actor=actor)
        return len(queries)

    event_append(thread=thread, events=messages(200, words=30), actor=actor)
    small = cost()
    for _ in range(4):
        event_append(thread=thread, events=messages(1000, words=30), actor=actor)
    assert cost() == small <= 8
    # Rendered again after an append, it reads what was appended and nothing else; after
    # nothing at all, nothing (the record's INSERT is the one query left).
    cost(reuse=True)
    event_append(thread=thread, events=messages(2, words=30), actor=actor)
    assert cost(reuse=True) == 2
    assert cost(reuse=True) == 1


def test_event_references_pack_and_unpack_exactly():
    pairs = [(10, 1), (11, 2), (12, 3), (14, 5), (90, 6), (20, 9), (21, 10), (22, 11), (23, 12)]
    events = [SimpleNamespace(pk=i, position=p) for i, p in pairs]
    packed = render_reads.pack_events(events)
    assert render_reads.unpack_events(packed) == pairs
    assert packed == [[10, 1], 2, [2], [76, 1], [-70, 3], 3]


def test_a_record_is_one_statement_and_reads_nothing_the_render_loaded(
        thread, actor, django_assert_num_queries):
    event_append(thread=thread, actor=actor, events=messages(5))
    thread.refresh_from_db()
    rendered = rendering.render(thread=thread, max_tokens=5000)
    with django_assert_num_queries(1):
        kept = renders.render_record(thread=thread, rendered=rendered, actor=actor)
    stored = RenderRecord.objects.get(pk=kept.pk)
    # the instance returned is the row as stored, every column in its place
    columns = lambda r: {f.attname: getattr(r, f.attname) for f in RenderRecord._meta.concrete_fields}  # noqa: E731
    assert columns(stored) == columns(kept)
    assert (kept.thread_id, kept.workspace_id, kept.actor) == (thread.pk, thread.workspace_id, actor.label)
    assert not kept._state.adding
    assert same(rendered.body, render_reads.render_rebuild(record=stored))
    # blocks with fixed values: their version ids came with the render
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    thread.refresh_from_db()
    rendered = rendering.render(thread=thread, max_tokens=5000)
    with django_assert_num_queries(1):
        renders.render_record(thread=thread, rendered=rendered, actor=actor)


@pytest.mark.django_db(transaction=True)
def test_a_record_leaves_the_connections_commit_setting_alone(thread, actor):
    event_append(thread=thread, actor=actor, events=messages(3))
    thread.refresh_from_db()
    renders.render_record(thread=thread, rendered=rendering.render(thread=thread, max_tokens=500),
                          actor=actor)
    assert RenderRecord.objects.count() == 1
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone()[0] == "on"


def test_a_block_without_a_kept_version_gets_one_and_the_record_rebuilds(thread, actor):
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    ContextBlockVersion.objects.filter(thread=thread).delete()  # as an older import left it
    event_append(thread=thread, actor=actor, events=messages(2))
    body, kept = record(thread, actor)
    assert ContextBlockVersion.objects.filter(thread=thread, name="persona", version=1).count() == 1
    block_upsert(thread=thread, name="persona", value="Be long.", placement="prefix", actor=actor)
    assert same(body, render_reads.render_rebuild(record=kept))


@pytest.mark.django_db(transaction=True)
def test_two_writers_recording_at_once_keep_each_text_once(thread, actor):
    block_upsert(thread=thread, name="step", expr="Step {{ state.step }}", actor=actor)
    state_write(thread=thread, state={"step": 1}, summary="Shared summary ✓", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(4))
    errors: list = []

    def writer() -> None:
        try:
            for _ in range(10):
                record(thread.__class__.objects.get(pk=thread.pk), actor)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=writer) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert RenderRecord.objects.filter(thread=thread).count() == 20
    assert sorted(StoredText.objects.values_list("text", flat=True)) == ["Shared summary ✓", "Step 1"]
    first = RenderRecord.objects.filter(thread=thread).first()
    shown = [m["content"] for m in render_reads.render_rebuild(record=first)["messages"]]
    assert shown[0] == "Shared summary ✓" and shown[-1] == "## step\nStep 1"


# ------------------------------------------------------------------ written with the render

def columns(record, *, but=()) -> dict:
    return {f.attname: getattr(record, f.attname) for f in RenderRecord._meta.concrete_fields
            if f.attname not in but}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_record_written_with_the_render_is_the_one_written_after_it(busy, actor, fmt):
    assert not StoredText.objects.exists()
    rendered, kept = renders.context_render_recorded(thread=busy, max_tokens=5000, fmt=fmt,
                                                     actor=actor)
    # the summary and the live block's text were kept by the render's own statement
    assert sorted(StoredText.objects.values_list("text", flat=True)) == ["Step 1", "We met."]
    stored = RenderRecord.objects.get(pk=kept.pk)
    assert columns(stored) == columns(kept)
    after = renders.render_record(thread=busy, rendered=rendered, actor=actor)
    assert columns(kept, but=("id", "created_at")) == columns(after, but=("id", "created_at"))
    assert same(rendered.body, render_reads.render_rebuild(record=stored))


def test_on_postgresql_a_record_costs_no_statement_of_its_own(busy, actor):
    def statements(run, *, forget: bool) -> int:
        if forget:
            rendering.forget_kept()
        with CaptureQueriesContext(connection) as queries:
            run()
        return len(queries)

    plain = lambda: rendering.render(thread=busy, max_tokens=5000)  # noqa: E731
    recorded = lambda: renders.context_render_recorded(thread=busy, max_tokens=5000, actor=actor)  # noqa: E731
    # elsewhere: the texts kept, then the INSERT
    extra = 0 if connection.vendor == "postgresql" else 2
    assert statements(recorded, forget=True) == statements(plain, forget=True) + extra
    # Rendered again with nothing new, the render reads nothing (selectors/rendering.Kept), and
    # a record is one statement on PostgreSQL, its texts and INSERT together.
    assert statements(plain, forget=False) == 0
    assert statements(recorded, forget=False) == (1 if connection.vendor == "postgresql" else 2)


def test_a_record_is_corrected_when_the_render_shows_less_than_its_plan(thread, actor):
    stray = {"type": "ToolResult", "content": "stray", "data": {"tool_call_id": "nobody"}}
    event_append(thread=thread, actor=actor, events=messages(3) + [stray] + messages(2, start=3))
    thread.refresh_from_db()
    rendered, kept = renders.context_render_recorded(thread=thread, max_tokens=5000, actor=actor)
    assert [x["seq"] for x in rendered.body["stats"]["skipped"]] == [4]  # the orphan result
    stored = RenderRecord.objects.get(pk=kept.pk)
    assert columns(stored) == columns(kept)
    after = renders.render_record(thread=thread, rendered=rendered, actor=actor)
    assert columns(kept, but=("id", "created_at")) == columns(after, but=("id", "created_at"))
    assert stored.spec["left_out"] == 1 and len(render_reads.unpack_events(stored.spec["events"])) == 5


@pytest.mark.parametrize("first,last", [(2, 4), (3, 3)])  # one event: as many shown as planned
def test_a_collapse_between_the_plan_and_the_read_is_in_the_record(thread, actor, monkeypatch,
                                                                  first, last):
    event_append(thread=thread, actor=actor, events=messages(8))
    thread.refresh_from_db()
    def collapse() -> None:  # a person collapses as the agent renders
        collapse_create(thread=thread, start_position=first, end_position=last,
                        summary_text="Earlier.", actor=actor)

    # between the plan and the read: on PostgreSQL the service runs the read itself, with the
    # record's INSERT (rendering.window_statement); elsewhere render_finish reads
    statement, finish = rendering.window_statement, rendering.render_finish
    if connection.vendor == "postgresql":
        monkeypatch.setattr(rendering, "window_statement",
                            lambda planned: collapse() or statement(planned))
    else:
        monkeypatch.setattr(rendering, "render_finish",
                            lambda planned, **kwargs: collapse() or finish(planned, **kwargs))
    rendered, kept = renders.context_render_recorded(thread=thread, max_tokens=5000, actor=actor)
    shown = [m["content"] for m in rendered.body["messages"]]
    collapsed = tuple(f"turn {p - 1}:" for p in range(first, last + 1))
    assert "Earlier." in shown and not any(text.startswith(collapsed) for text in shown)
    stored = RenderRecord.objects.get(pk=kept.pk)
    assert columns(stored) == columns(kept)
    assert same(rendered.body, render_reads.render_rebuild(record=stored))
    assert len(render_reads.unpack_events(stored.spec["events"])) == len(shown)


@pytest.mark.django_db(transaction=True)
def test_a_recorded_render_does_not_wait_for_a_writer_holding_the_thread(thread, actor):
    """An agent renders while a second process is in the middle of an append (holding the
    thread's row lock): the render and its record go ahead; the writer is not disturbed."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's")
    event_append(thread=thread, actor=actor, events=messages(4))
    locked, release = threading.Event(), threading.Event()

    def writer() -> None:
        try:
            with transaction.atomic():
                lock_thread(thread, history_only=True)
                locked.set()
                release.wait(20)
        finally:
            connection.close()

    held = threading.Thread(target=writer)
    held.start()
    try:
        assert locked.wait(10)
        # A session SET: behind a transaction pooler it would stay on some server connection (a wait
        # then fails the test below, once the writer gives up after 20 s).
        if not settings.DATABASE_POOLER:
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = '3s'")  # waiting for the writer fails the test fast
        thread.refresh_from_db()
        rendered, kept = renders.context_render_recorded(thread=thread, max_tokens=5000, actor=actor)
        assert RenderRecord.objects.filter(pk=kept.pk).exists()
        assert not release.is_set() and held.is_alive()  # the writer still holds its lock
    finally:
        release.set()
        held.join()
        if not settings.DATABASE_POOLER:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")


def test_a_records_events_are_read_by_primary_key_and_only_from_its_thread(thread, session, actor):
    """SQLite has no statistics: `thread_id = ? AND id IN (…)` walked the whole thread's
    (thread, seq) key (60 ms at 50k events for a call's "as sent"); the lookup is by rowid."""
    event_append(thread=thread, events=messages(6), actor=actor)
    body, rec = record(thread, actor)
    assert len(render_reads.record_events(rec)) == 6 and render_reads.render_expired(rec) == 0
    other = thread_ensure(session=session, name="other", actor=actor)[0]
    ids = [i for i, _ in render_reads.record_refs(rec)]
    assert not render_reads._named_events(other.pk, ids).exists()
    if connection.vendor == "sqlite":
        plan = render_reads._named_events(thread.pk, ids).explain()
        assert "INTEGER PRIMARY KEY" in plan and "(thread_id=?)" not in plan
