"""The worker's prompt-cache verdicts (services/cache_verdicts.py): every call compared once,
in bounded batches, workspaces in turn; the pages read them."""

from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contextstore import tasks
from contextstore.models import CallCacheVerdict, Event
from contextstore.services import retention
from contextstore.services.blocks import block_upsert
from contextstore.services.cache_verdicts import cache_verdict_of, cache_verdicts_compute
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.conftest import messages
from tests.services.test_cache_verdicts import recorded_call
from tests.services.test_retention import _age


def three_calls(thread, actor) -> list[int]:
    """Three recorded calls; the third after a prefix block edit (a break)."""
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40))
    seqs = [recorded_call(thread, actor)]
    event_append(thread=thread, actor=actor, events=messages(2, start=40))
    seqs.append(recorded_call(thread, actor))
    block_upsert(thread=thread, name="persona", value="Be thorough.", actor=actor)
    seqs.append(recorded_call(thread, actor))
    return seqs


def test_every_call_is_compared_once_with_the_break_where_and_why(thread, actor):
    first, kept, broken = three_calls(thread, actor)
    assert tasks.compare_cache_pending() == {"compared": 3, "workspaces": 1}
    rows = {r.seq: r for r in CallCacheVerdict.objects.filter(thread=thread)}
    assert rows[first].status == "first" and rows[kept].status == "kept" and rows[kept].lost_tokens == 0
    row = rows[broken]
    assert row.status == "lost" and row.cause == "block_edit" and "v1→v2" in row.cause_text
    assert row.where.startswith("system block 1") and row.lost_tokens > 1000 and row.lost_cost > 0
    assert row.session_id == thread.session_id and row.workspace_id == thread.workspace_id
    # a second run finds nothing; a call compared twice (two workers at once) gives one row
    assert cache_verdicts_compute() == {"compared": 0, "workspaces": 0}
    start = row.call
    CallCacheVerdict.objects.bulk_create([CallCacheVerdict(**cache_verdict_of(call=start))],
                                         ignore_conflicts=True)
    assert CallCacheVerdict.objects.filter(call=start).count() == 1
    beat = settings.CELERY_BEAT_SCHEDULE["compare-cache"]
    assert beat["task"] == "contextstore.tasks.compare_cache_pending"


def test_batches_are_bounded_in_call_order_and_read_from_the_watermark(thread, actor, other_workspace):
    three_calls(thread, actor)
    event_append(thread=thread, actor=actor, events=messages(2, start=50))
    recorded_call(thread, actor)  # a busy workspace: four calls waiting first
    session = session_ensure(workspace=other_workspace, key="s-2", actor=actor)[0]
    other = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=other, actor=actor, events=messages(4))
    recorded_call(other, actor)
    assert cache_verdicts_compute(batch=2) == {"compared": 2, "workspaces": 1}  # the oldest two
    assert CallCacheVerdict.objects.filter(workspace=other_workspace).count() == 0
    while cache_verdicts_compute(batch=2)["compared"]:
        pass
    assert CallCacheVerdict.objects.count() == 5
    newest = CallCacheVerdict.objects.order_by("-call_id").first().call_id
    with CaptureQueriesContext(connection) as queries:
        assert cache_verdicts_compute(batch=2) == {"compared": 0, "workspaces": 0}
    assert any(f"> {newest}" in query["sql"] for query in queries)  # from the watermark, not the start


def test_a_call_without_a_known_request_is_stored_as_unknown(thread, actor):
    event_append(thread=thread, actor=actor, events=[{"type": "LLMCallStart", "data": {"model": "gpt-4o"}}])
    cache_verdicts_compute()
    assert CallCacheVerdict.objects.get(thread=thread).status == "unknown"


def test_retention_deletes_calls_that_have_verdicts_and_their_verdicts(thread, actor, workspace):
    three_calls(thread, actor)
    cache_verdicts_compute()
    assert CallCacheVerdict.objects.filter(thread=thread).count() == 3
    newest = Event.objects.filter(thread=thread).order_by("-seq").first().seq
    retention.retention_policy_set(target=workspace, actor=actor, event_days=30)
    _age(thread, upto_seq=newest - 1, days=31)  # every call but the newest row is old
    assert retention.retention_run()["events"] == newest - 1  # the raw delete meets no key
    assert not CallCacheVerdict.objects.filter(call__isnull=True).exists()
    left = CallCacheVerdict.objects.filter(thread=thread)
    assert {v.call_id for v in left} <= set(Event.objects.filter(thread=thread).values_list("pk", flat=True))
    assert all(v.previous_id is None for v in left)
