"""Share links, datasets and a thread's activity log (services/sharing.py,
services/datasets.py, selectors/activity.py)."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from contextstore.errors import Gone, InvalidInput, NotFound
from contextstore.models import AuditLog, Dataset, DatasetItem, ReadAudit, ShareLink
from contextstore.selectors.activity import thread_activity
from contextstore.selectors.calls import llm_call_at
from contextstore.services.blocks import block_upsert
from contextstore.services.collapses import collapse_create, collapse_undo
from contextstore.services.common import Actor
from contextstore.services.datasets import dataset_add_call, dataset_add_range, dataset_jsonl
from contextstore.services.erasure import user_erase
from contextstore.services.events import event_append
from contextstore.services.sharing import share_link_create, share_link_open, share_link_revoke
from contextstore.services.threads import thread_clear_context, thread_fork, thread_unclear
from contextstore.views.sharing import check_share_request
from tests.conftest import messages


@pytest.fixture
def person(user):
    return Actor.for_user(user)


@pytest.fixture
def chat(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "hi"},
        {"type": "LLMCallStart", "data": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}},
        {"type": "LLMComplete", "role": "assistant", "content": "hello",
         "data": {"model": "m", "input_tokens": 3}},
        {"type": "Message", "role": "assistant", "content": "hello"},
    ])
    return thread


def test_a_link_opens_until_it_expires_and_every_open_is_audited(session, chat, person):
    now = timezone.now()
    link, raw = share_link_create(session=session, kind="call", thread=chat, seq=2,
                                  expires_in="1h", actor=person, now=now)
    assert link.token_hash != raw and raw not in link.token_hash and link.prefix == raw[:8]
    assert len(raw) >= 40 and link.expires_at == now + timedelta(hours=1)
    assert share_link_open(raw=raw, ip="10.0.0.9", now=now).pk == link.pk
    audit = ReadAudit.objects.get(action="share.view")
    assert (audit.actor_type, audit.actor_label, audit.session_id, audit.target_type, audit.ip) == (
        "share", f"share link {link.prefix}", session.pk, "thread", "10.0.0.9")
    assert AuditLog.objects.filter(action="share.create", target_id=str(link.pk)).exists()
    with pytest.raises(Gone, match="expired"):
        share_link_open(raw=raw, now=now + timedelta(hours=1, seconds=1))
    with pytest.raises(NotFound):
        share_link_open(raw=raw + "x")
    with pytest.raises(NotFound):
        share_link_open(raw="")


def test_a_revoked_link_is_gone_and_revoking_twice_is_one_change(session, chat, person):
    link, raw = share_link_create(session=session, kind="session", actor=person)
    share_link_revoke(link=link, actor=person)
    share_link_revoke(link=link, actor=person)
    with pytest.raises(Gone, match="revoked"):
        share_link_open(raw=raw)
    assert AuditLog.objects.filter(action="share.revoke").count() == 1


def test_a_link_needs_a_real_target_and_a_known_expiry(session, chat, person):
    for kwargs in ({"kind": "call", "thread": chat, "seq": 1},  # a Message, not a call
                   {"kind": "event", "thread": chat, "seq": 99}):
        with pytest.raises(InvalidInput):
            share_link_create(session=session, actor=person, **kwargs)
    # the request's shape, refused by the share form's door (which finds a thread only within
    # the session: another session's is None there)
    for kwargs in ({"kind": "event", "thread": None, "seq": 1}, {"kind": "event", "thread": chat},
                   {"kind": "session", "expires_in": "1y"}, {"kind": "everything"}):
        with pytest.raises(InvalidInput):
            check_share_request(**{"thread": None, "seq": None, "expires_in": "1d", **kwargs})
    assert not ShareLink.objects.exists()


def test_a_call_and_a_range_export_as_these_jsonl_lines(session, chat, person):
    call_item = dataset_add_call(dataset_name=" evals ", thread=chat, actor=person,
                                 call=llm_call_at(thread=chat, seq=3))
    range_item = dataset_add_range(dataset_name="evals", thread=chat, start_position=1,
                                   end_position=1, actor=person)
    dataset = Dataset.objects.get()
    assert (dataset.name, dataset.item_count) == ("evals", 2)
    assert call_item.dataset_id == range_item.dataset_id == dataset.pk
    lines = list(dataset_jsonl(dataset=dataset, batch=1))
    assert all(line.endswith("\n") for line in lines)
    stamp = [item.created_at.isoformat().replace("+00:00", "Z") for item in (call_item, range_item)]
    source = {"session": "s-1", "session_id": session.pk, "thread": "main", "thread_id": chat.pk}
    assert [json.loads(line) for line in lines] == [
        {"input": {"messages": [{"content": "hi", "role": "user"}], "tools": None, "params": {}},
         "expected_output": {"role": "assistant", "content": "hello"},
         "metadata": {"kind": "call", "source": {**source, "seq": 2, "model": "m"},
                      "added_at": stamp[0], "added_by": "pat"}},
        {"input": [{"seq": 1, "type": "Message", "role": "user", "content": "hi"}],
         "expected_output": None,
         "metadata": {"kind": "range", "source": {**source, "seq_from": 1, "seq_to": 1},
                      "added_at": stamp[1], "added_by": "pat"}},
    ]


def test_a_range_with_no_events_changes_nothing(chat, person):
    # a blank name or a backward range is refused at the form (tests/views/test_shape_doors.py)
    for kwargs in ({"dataset_name": "d", "start_position": 50, "end_position": 60},):
        with pytest.raises(InvalidInput):
            dataset_add_range(thread=chat, actor=person, **kwargs)
    assert not DatasetItem.objects.exists() and not Dataset.objects.exclude(name="d").exists()


def test_erasing_the_person_takes_their_dataset_items_and_share_links(workspace, session, chat, person):
    dataset_add_range(dataset_name="d", thread=chat, start_position=1, end_position=4, actor=person)
    share_link_create(session=session, kind="session", actor=person)
    receipt = user_erase(workspace=workspace, user_id="alice", actor=Actor.system("dpo"))
    assert (receipt["counts"]["dataset_items"], receipt["counts"]["share_links"]) == (1, 1)
    assert Dataset.objects.get().item_count == 0 and not ShareLink.objects.exists()


def test_the_activity_log_tells_who_did_what_with_links(thread, actor, person):
    event_append(thread=thread, actor=actor, events=messages(6))
    collapse = collapse_create(thread=thread, start_position=2, end_position=4, summary_text="s",
                               actor=person)
    collapse_undo(collapse=collapse, actor=person)
    clear = thread_clear_context(thread=thread, actor=person)
    thread_unclear(clear=clear, actor=person)
    fork = thread_fork(thread=thread, name="try", start_position=1, end_position=3, actor=person)
    block_upsert(thread=thread, name="rules", value="be brief", actor=person)
    entries, more = thread_activity(thread=thread)
    assert more is None
    said = [(a.who, a.text, a.link_text) for a in entries if a.row.action != "state.patch"]
    assert said == [
        ("pat", "created the block “rules”", ""),
        ("pat", "forked #1–#3 into a new thread:", f"thread {fork.pk}"),
        ("pat", "un-cleared a clear (6 events back in context)", ""),
        ("pat", "cleared the context (6 events out of what the model sees)", "show cleared events"),
        ("pat", "undid the collapse of", "#2–#4"),
        ("pat", "collapsed 3 events into a summary (180 → 1 tokens):", "#2–#4"),
    ]
    assert entries[-1].href == f"/threads/{thread.pk}/?from=2&to=4&around=2#e2"
    assert thread_activity(thread=fork)[0] == []  # the fork's own log starts empty
    link, _ = share_link_create(session=thread.session, kind="event", thread=thread, seq=5,
                                actor=person)
    share_link_revoke(link=link, actor=person)
    item = dataset_add_range(dataset_name="d", thread=thread, start_position=5, end_position=6,
                             actor=person)
    said = [(a.text, a.link_text, a.href) for a in thread_activity(thread=thread, limit=3)[0]]
    at_5 = f"/threads/{thread.pk}/?around=5#e5"
    assert said == [
        ("added a range to a dataset:", "#5–#6", f"/datasets/{item.dataset_id}/"),
        (f"revoked a read-only share link ({link.prefix}…) to event", "#5", at_5),
        (f"made a read-only share link ({link.prefix}…) to event", "#5", at_5),
    ]
    # Appends never enter the log: its index holds the activity rows only.
    assert not AuditLog.objects.filter(action="events.append").exclude(thread_id=None).exists()


def test_the_activity_log_pages_by_id_in_one_query(thread, person, django_assert_num_queries):
    for i in range(5):
        block_upsert(thread=thread, name=f"b{i}", value="x", actor=person)
    with django_assert_num_queries(1):  # one read of the partial index, whatever the history
        first, more = thread_activity(thread=thread, limit=3)
    rest, last = thread_activity(thread=thread, before=more, limit=3)
    assert [a.text for a in first + rest] == [f"created the block “b{i}”" for i in (4, 3, 2, 1, 0)]
    assert last is None


def test_deleting_the_session_keeps_its_dataset_items_and_ends_its_links(session, chat, person):
    from contextstore.services.sessions import session_delete
    item = dataset_add_range(dataset_name="d", thread=chat, start_position=1, end_position=2,
                             actor=person)
    share_link_create(session=session, kind="session", actor=person)
    session_delete(session=session, actor=person)
    item.refresh_from_db()
    assert (item.session_id, item.thread_id, item.user_id) == (None, None, "alice")
    assert len(item.input) == 2 and not ShareLink.objects.exists()
