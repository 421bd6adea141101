"""A render reuses what the last render of its thread read when only appends happened since
(selectors/rendering.Kept): random operations on a thread (appends of every kind, collapse and
its undo, clear and un-clear, sync rewrites and removals, retention, block writes, deletes and
restores, state and summary writes) interleaved with renders at random budgets, formats and
options, each compared with a render that reads everything. A writer on another connection
changes the thread between two renders too."""

import itertools
import json
import re
import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from contextstore.errors import DomainError
from contextstore.models import Clear, Collapse, ContextBlockVersion, RenderRecord, Thread
from contextstore.render_format import FORMATS
from contextstore.selectors import rendering
from contextstore.services import renders, retention
from contextstore.services.blocks import block_delete, block_restore, block_upsert
from contextstore.services.collapses import collapse_create, collapse_undo
from contextstore.services.events import event_append
from contextstore.services.sessions import thread_ensure
from contextstore.services.state import state_write
from contextstore.services.sync import sync_apply
from contextstore.services.threads import thread_clear_context, thread_unclear
from tests.services.test_render_property import build, words

names = itertools.count()

operation = st.one_of(
    # appends: the kinds test_render_property draws (messages, tool calls, thinking, huge events)
    st.tuples(st.just("append"), st.sampled_from([
        ("message", "user", 30), ("message", "assistant", 20), ("message", "user", 400),
        ("tools", 2, 40, True), ("tools", 1, 300, False), ("reasoning", 30, True),
        ("huge", "Message", 2500), ("unanswered", 1)])),
    st.tuples(st.just("invisible")),
    st.tuples(st.just("collapse"), st.integers(0, 30), st.integers(0, 5)),
    st.tuples(st.just("undo_collapse")),
    st.tuples(st.just("clear")),
    st.tuples(st.just("unclear")),
    st.tuples(st.just("sync"), st.sampled_from(["a", "b", "c"]), st.sampled_from(["new", "gone"])),
    st.tuples(st.just("expire"), st.integers(1, 6)),
    st.tuples(st.just("block"), st.sampled_from(["persona", "clock"]),
              st.sampled_from(["value", "expr", "delete", "restore"])),
    st.tuples(st.just("state"), st.integers(0, 3)),
    st.tuples(st.just("summary"), st.integers(1, 30)),
)
render_step = st.tuples(st.just("render"), st.integers(1, 6000), st.sampled_from(FORMATS),
                        st.sampled_from(rendering.ON_OVERSIZE), st.booleans(), st.booleans())


def apply(thread: Thread, actor, op: tuple, n: int) -> None:
    kind = op[0]
    try:
        if kind == "append":
            build(thread, actor, [op[1]])
        elif kind == "invisible":
            event_append(thread=thread, actor=actor, events=[
                {"type": "Message", "role": "user", "content": words(5), "visible": False}])
        elif kind == "collapse":
            thread.refresh_from_db()
            collapse_create(thread=thread, start_position=op[1] + 1, end_position=op[1] + 1 + op[2],
                            summary_text=words(6), actor=actor)
        elif kind == "undo_collapse":
            last = Collapse.objects.filter(thread=thread, undone_at__isnull=True).order_by("-pk").first()
            if last is not None:
                collapse_undo(collapse=last, actor=actor)
        elif kind == "clear":
            thread_clear_context(thread=thread, actor=actor)
        elif kind == "unclear":
            last = Clear.objects.filter(thread=thread, undone_at__isnull=True).order_by("-pk").first()
            if last is not None:
                thread_unclear(clear=last, actor=actor)
        elif kind == "sync":  # a rewrite in place (a new row at the old position) or a removal
            key, what = op[1], op[2]
            if what == "new":
                item = {"key": key, "event": {"type": "Message", "role": "user",
                                              "content": f"{key} {words(n % 7 + 1)}"}}
                sync_apply(thread=thread, namespace="fw", actor=actor, items=[item])
            else:
                sync_apply(thread=thread, namespace="fw", actor=actor, removed=[key])
        elif kind == "expire":  # retention deletes the oldest rows
            now = timezone.now()
            retention._expire_batch(thread_pk=thread.pk, workspace_id=thread.workspace_id,
                                    cutoff=now + timedelta(seconds=1), batch_size=op[1], now=now)
        elif kind == "block":
            name, what = op[1], op[2]
            if what == "value":
                block_upsert(thread=thread, name=name, actor=actor, value=words(n % 9 + 1),
                             placement="prefix" if name == "persona" else "suffix")
            elif what == "expr":  # reads the document and the thread's event count
                block_upsert(thread=thread, name=name, actor=actor,
                             expr="{{ state.mood }} after {{ thread.events }} events")
            elif what == "delete":
                block_delete(thread=thread, name=name, actor=actor)
            else:
                version = (ContextBlockVersion.objects.filter(thread=thread, name=name)
                           .order_by("version").values_list("version", flat=True).first())
                if version is not None:
                    block_restore(thread=thread, name=name, version=version, actor=actor)
        elif kind == "state":
            state_write(thread=thread, state={"mood": words(op[1])}, actor=actor)
        else:
            state_write(thread=thread, summary=words(op[1]), actor=actor)
    except DomainError:
        pass  # nothing there to collapse, undo, remove or restore


def same_render(thread_pk: int, actor, budget: int, fmt: str, on_oversize: str, strip: bool,
                record: bool) -> None:
    """A render as the API makes it (the thread read fresh) equals one that reads everything."""
    options = {"max_tokens": budget, "fmt": fmt, "on_oversize": on_oversize, "strip_thinking": strip}
    if record:
        got, kept = renders.context_render_recorded(thread=Thread.objects.get(pk=thread_pk),
                                                    actor=actor, **options)
        stored = RenderRecord.objects.get(pk=kept.pk)
        after = renders.render_record(thread=Thread.objects.get(pk=thread_pk), rendered=got,
                                      actor=actor)
        assert stored.spec == after.spec
        assert (stored.total_tokens, stored.prefix_hash) == (after.total_tokens, after.prefix_hash)
    else:
        got = rendering.render(thread=Thread.objects.get(pk=thread_pk), **options)
    # asked again with nothing new: the kept answer itself
    again = rendering.render(thread=Thread.objects.get(pk=thread_pk), **options)
    full = rendering.render(thread=Thread.objects.get(pk=thread_pk), reuse=False, **options)
    assert json.dumps(got.body, sort_keys=True) == json.dumps(full.body, sort_keys=True)
    assert json.dumps(again.body, sort_keys=True) == json.dumps(full.body, sort_keys=True)


@given(steps=st.lists(st.one_of(operation, render_step, render_step), min_size=4, max_size=30))
def test_a_render_after_any_operations_is_the_full_render(session, actor, monkeypatch, steps):
    monkeypatch.setattr(retention, "_still_expiring", lambda *args: True)  # no policy needed
    thread = thread_ensure(session=session, name=f"i{next(names)}", actor=actor)[0]
    build(thread, actor, [("message", "user", 20), ("tools", 1, 30, True), ("message", "user", 10)])
    for n, step in enumerate([*steps, ("render", 4000, "raw", "skip", False, False)]):
        if step[0] == "render":
            same_render(thread.pk, actor, *step[1:])
        else:
            apply(thread, actor, step, n)
            thread.refresh_from_db()


def test_only_appends_since_reuse_the_kept_render(thread, actor):
    build(thread, actor, [("message", "user", 30), ("tools", 2, 40, True)] * 5)
    rendering.render(thread=Thread.objects.get(pk=thread.pk), max_tokens=800)
    key = (connection.alias, thread.pk, thread.created_at)
    assert rendering._KEPT[key].seq == Thread.objects.get(pk=thread.pk).last_seq
    build(thread, actor, [("message", "user", 30)])
    fresh = Thread.objects.get(pk=thread.pk)
    assert rendering._reuse(fresh, 32) is not None  # appends: reused
    collapse_create(thread=fresh, start_position=2, end_position=4, summary_text="s", actor=actor)
    assert rendering._reuse(Thread.objects.get(pk=thread.pk), 32) is None  # a collapse: not
    first = rendering.render(thread=Thread.objects.get(pk=thread.pk), max_tokens=800)
    assert rendering.render(thread=Thread.objects.get(pk=thread.pk), max_tokens=800) is first
    assert rendering.render(thread=Thread.objects.get(pk=thread.pk), max_tokens=801) is not first
    block_upsert(thread=thread, name="persona", actor=actor, value="Be brief.")
    assert rendering._reuse(Thread.objects.get(pk=thread.pk), 32) is None  # a block: not


def test_the_appended_rows_are_read_by_seq_whatever_the_statistics_say(session, actor):
    """A bulk-loaded thread newer than the table's statistics: the rows appended since the
    kept render are read from the (thread, seq) key, not by walking the working context's
    index back over the whole thread (20 ms at 100,000 events before)."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's planner")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE contextstore_event")  # statistics that know no such thread
    thread, _ = thread_ensure(session=session, name="bulk", actor=actor)
    for start in range(0, 3000, 1000):
        event_append(thread=thread, events=[{"type": "Message", "role": "user", "content": f"turn {i}"}
                                            for i in range(start, start + 1000)], actor=actor)
    rendering.render(thread=Thread.objects.get(pk=thread.pk), max_tokens=800)
    event_append(thread=thread, events=[{"type": "Message", "role": "user", "content": "new"}], actor=actor)
    seen = []

    def record(execute, sql, params, many, context):
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        rendering.render(thread=Thread.objects.get(pk=thread.pk), max_tokens=800)
    [(appended, params)] = [(sql, params) for sql, params in seen if '"seq" >' in sql]
    # as the statement runs: prepared on the server (db.prepared_cursor), whose plan may become
    # the generic one (for any values) after five runs, so both plans are held to it
    numbered = iter(range(1, len(params) + 1))
    text = re.sub(r"%s", lambda _: f"${next(numbered)}", appended)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"PREPARE appended AS {text}")
        for mode in ("force_custom_plan", "force_generic_plan"):
            cursor.execute(f"SET LOCAL plan_cache_mode = {mode}")
            cursor.execute(f"EXPLAIN EXECUTE appended({', '.join(['%s'] * len(params))})", params)
            plan = "\n".join(line for (line,) in cursor.fetchall())
            # read by the seq range in an index's condition (the unique (thread, seq) key, or
            # another index on (thread, ..., seq) a generic plan may pick), never the walk back
            assert re.search(r"Index Cond: \(.*\bseq > ", plan) and "event_working_context" not in plan, (
                mode, plan)
        cursor.execute("DEALLOCATE appended")


@pytest.mark.django_db(transaction=True)
def test_a_change_on_another_connection_between_renders_is_seen(session, actor):
    """The kept render holds by what the thread row says: a writer elsewhere (another process,
    here another thread with its own connection) changes it and the next render is full."""
    thread = thread_ensure(session=session, name="shared", actor=actor)[0]
    build(thread, actor, [("message", "user", 30), ("tools", 1, 40, True)] * 6)

    def elsewhere(work) -> None:
        def run() -> None:
            try:
                work(Thread.objects.get(pk=thread.pk))
            finally:
                connection.close()
        writer = threading.Thread(target=run)
        writer.start()
        writer.join()

    changes = [
        lambda t: event_append(thread=t, actor=actor, events=[
            {"type": "Message", "role": "user", "content": words(12)}]),
        lambda t: collapse_create(thread=t, start_position=4, end_position=6, summary_text="Earlier.",
                                  actor=actor),
        lambda t: block_upsert(thread=t, name="persona", actor=actor, value="Be brief."),
        lambda t: thread_clear_context(thread=t, actor=actor),
        lambda t: thread_unclear(clear=Clear.objects.get(thread=t), actor=actor),
        lambda t: collapse_undo(collapse=Collapse.objects.get(thread=t), actor=actor),
        lambda t: state_write(thread=t, summary="So far, so good.", actor=actor),
    ]
    for change in changes:
        before = rendering.render(thread=Thread.objects.get(pk=thread.pk), max_tokens=900).body
        elsewhere(change)
        same_render(thread.pk, actor, 900, "raw", "skip", False, False)
        assert rendering.render(thread=Thread.objects.get(pk=thread.pk), max_tokens=900).body != before


def test_render_keep_threads_0_keeps_none(thread, actor, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "RENDER_KEEP_THREADS": 0}
    build(thread, actor, [("message", "user", 30)])
    rendering.render(thread=Thread.objects.get(pk=thread.pk), max_tokens=800)
    assert rendering._reuse(Thread.objects.get(pk=thread.pk), 32) is None
