"""The framework sessions API: identity, one-request reads, atomic conditional appends."""

import base64
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contextstore.models import AuditLog, Event, Run, ScopedState, Session, ThreadBlob

URL = "/api/v1/agent-sessions/"
WHO = {"app": "shop", "user_id": "ann", "key": "s1"}


def create(client, **extra):
    return client.post(URL, {**WHO, **extra}, format="json")


def commit(client, headers=None, **payload):
    return client.post(URL + "commit/", {**WHO, **payload}, format="json", headers=headers or {})


def read(client, **params):
    return client.get(URL + "read/", {**WHO, **params})


def test_create_is_create_only_with_initial_state_and_first_thread(api_client):
    answer = create(api_client, state={"step": 1}, app_state={"theme": "dark"}, user_state={"lang": "fi"})
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert body["state"] == {"step": 1} and body["app_state"] == {"theme": "dark"}
    assert body["user_state"] == {"lang": "fi"} and body["thread"] and body["events"] == []
    again = create(api_client, state={"step": 2})
    assert again.status_code == 409 and again.json()["error"]["code"] == "session_exists"
    assert read(api_client).json()["state"] == {"step": 1}


def test_the_app_is_part_of_a_sessions_identity(api_client):
    assert create(api_client).status_code == 201
    assert api_client.post(URL, {**WHO, "app": "other"}, format="json").status_code == 201
    assert Session.objects.filter(key="s1", user_id="ann").count() == 2


def test_lookup_never_creates(api_client):
    assert read(api_client).status_code == 404
    assert not Session.objects.exists()


def test_commit_appends_events_and_patches_state_and_scopes_in_one_answer(api_client):
    create(api_client, state={"a": 1})
    answer = commit(api_client, headers={"If-Match": '"1"'},
                    events=[{"type": "Message", "role": "user", "content": "hi", "client_id": "e1",
                             "occurred_at": "2026-01-02T03:04:05Z"}],
                    state={"b": 2}, app_state={"x": 1}, user_state={"y": 1},
                    blobs=[{"key": "k", "data": base64.b64encode(b"\x00\xff").decode(), "meta": {"t": 1}}])
    assert answer.status_code == 200, answer.json()
    result = answer.json()
    assert result["revision"] == 2 and result["last_seq"] == 1
    assert result["events"][0]["client_id"] == "e1" and result["app_revision"] == 1
    body = read(api_client, limit=5, blob="k").json()
    assert body["state"] == {"a": 1, "b": 2} and body["app_state"] == {"x": 1}
    assert body["user_state"] == {"y": 1} and [e["content"] for e in body["events"]] == ["hi"]
    assert base64.b64decode(body["blobs"][0]["data"]) == b"\x00\xff"
    # Last activity follows the newest event's own time, not the server's clock.
    assert body["last_activity_at"] == "2026-01-02T03:04:05Z"


def test_a_commit_updates_its_session_row_once(api_client):
    create(api_client)
    with CaptureQueriesContext(connection) as queries:
        answer = commit(api_client, events=[
            {"type": "Message", "content": "a", "occurred_at": "2026-01-02T03:04:05Z"},
            {"type": "Message", "content": "b", "occurred_at": "2026-01-02T03:04:06Z"}])
    assert answer.status_code == 200, answer.json()
    # the counters and the last activity in one UPDATE (each is a new row version and, with
    # last_activity_at indexed, new entries in the session's indexes)
    updates = [q["sql"] for q in queries.captured_queries if 'UPDATE "contextstore_session"' in q["sql"]]
    assert len(updates) == 1, updates
    session = Session.objects.get()
    assert session.last_activity_at.isoformat() == "2026-01-02T03:04:06+00:00"
    assert session.event_count == 2


def test_a_stale_commit_changes_nothing(api_client):
    create(api_client, state={"a": 1})
    stale = commit(api_client, headers={"If-Match": '"0"'}, events=[{"type": "Message", "content": "x"}],
                   state={"a": 2}, user_state={"y": 1})
    assert stale.status_code == 412
    stale_history = commit(api_client, expected_last_seq=3, events=[{"type": "Message", "content": "x"}])
    assert stale_history.status_code == 412
    assert stale_history.json()["error"]["code"] == "stale_history"
    assert not Event.objects.exists() and not ScopedState.objects.exists()
    assert read(api_client).json()["state"] == {"a": 1}


def test_a_failing_part_rolls_back_the_whole_commit(api_client):
    create(api_client)
    bad = commit(api_client, events=[{"type": "Message", "content": "x"}], app_state={"x": 1},
                 blobs=[{"key": "k", "data": "not base64!"}])
    assert bad.status_code == 400
    bad = commit(api_client, events=[{"type": "Message", "content": "x"}, {"type": ""}], user_state={"x": 1})
    assert bad.status_code == 400
    assert not Event.objects.exists() and not ScopedState.objects.exists() and not ThreadBlob.objects.exists()


def test_a_replayed_batch_returns_the_first_answer_and_applies_nothing_twice(api_client):
    create(api_client)
    payload = {"events": [{"type": "Message", "content": "x"}], "app_state": {"n": 1}, "batch_id": "b1"}
    first = commit(api_client, **payload).json()
    assert commit(api_client, **payload).json() == first
    assert Event.objects.count() == 1 and ScopedState.objects.get().revision == 1
    other = commit(api_client, **{**payload, "app_state": {"n": 2}})
    assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_conflict"


def test_a_batch_naming_a_client_id_twice_is_rerun_checked_and_stores_it_once(api_client):
    create(api_client, state={"a": 1})
    twice = {"type": "Message", "content": "x", "client_id": "e1"}
    answer = commit(api_client, events=[twice, {"type": "Message", "content": "y"}, twice],
                    state={"b": 2}, blobs=[{"key": "k", "data": "eA=="}], batch_id="b1")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert [e["seq"] for e in body["events"]] == [1, 2, 1] and body["last_seq"] == 2
    assert body["revision"] == 2 and Event.objects.count() == 2 and ThreadBlob.objects.count() == 1
    assert commit(api_client, events=[twice], state={"b": 2}, blobs=[{"key": "k", "data": "eA=="}],
                  batch_id="b1").status_code == 409  # another request under the same batch id
    assert read(api_client).json()["state"] == {"a": 1, "b": 2}


def test_a_stored_client_id_is_rerun_checked_and_answers_the_stored_event(api_client):
    create(api_client)
    first = commit(api_client, events=[{"type": "Message", "content": "x", "client_id": "e1"}]).json()
    again = commit(api_client, events=[{"type": "Message", "content": "x", "client_id": "e1"},
                                       {"type": "Message", "content": "y", "client_id": "e2"}],
                   state={"n": 1}, blobs=[{"key": "k", "data": "eA=="}])
    assert again.status_code == 200, again.json()
    assert again.json()["events"][0] == first["events"][0] and again.json()["last_seq"] == 2
    assert Event.objects.count() == 2 and read(api_client).json()["state"] == {"n": 1}
    assert AuditLog.objects.filter(action="events.append").count() == 2


def test_a_conflicting_client_id_is_a_409_and_nothing_of_the_commit_is_written(api_client):
    create(api_client)
    commit(api_client, events=[{"type": "Message", "content": "x", "client_id": "e1"}])
    audits = AuditLog.objects.count()
    clash = commit(api_client, events=[{"type": "Message", "content": "y"},
                                       {"type": "Message", "content": "other", "client_id": "e1"}],
                   state={"n": 1}, app_state={"x": 1}, blobs=[{"key": "k", "data": "eA=="}], batch_id="b1")
    assert clash.status_code == 409 and clash.json()["error"]["code"] == "idempotency_conflict"
    assert Event.objects.count() == 1 and not ThreadBlob.objects.exists() and not ScopedState.objects.exists()
    assert AuditLog.objects.count() == audits and read(api_client).json()["state"] == {}


def test_a_stale_revision_is_a_412_and_nothing_is_written_even_with_a_batch_id(api_client):
    create(api_client, state={"a": 1})
    stale = commit(api_client, headers={"If-Match": '"0"'}, events=[{"type": "Message", "content": "x"}],
                   state={"a": 2}, blobs=[{"key": "k", "data": "eA=="}], batch_id="b1")
    assert stale.status_code == 412 and stale.json()["error"]["code"] == "stale_revision"
    assert not Event.objects.exists() and not ThreadBlob.objects.exists()
    assert read(api_client).json()["state"] == {"a": 1}
    # nothing was kept under the batch id: the same batch, now current, applies
    fresh = commit(api_client, headers={"If-Match": '"1"'}, events=[{"type": "Message", "content": "x"}],
                   state={"a": 2}, blobs=[{"key": "k", "data": "eA=="}], batch_id="b1")
    assert fresh.status_code == 200, fresh.json()
    assert Event.objects.count() == 1 and read(api_client).json()["state"] == {"a": 2}


def test_commit_can_create_the_session(api_client):
    assert commit(api_client, events=[{"type": "Message", "content": "x"}]).status_code == 404
    assert commit(api_client, create=True, events=[{"type": "Message", "content": "x"}]).status_code == 200
    assert read(api_client).json()["last_seq"] == 1


def test_read_bounds_events_by_count_time_client_id_and_data(api_client):
    create(api_client)
    commit(api_client, events=[
        {"type": "Message", "content": f"m{i}", "client_id": f"c{i}", "data": {"k": {"n": i % 2}},
         "occurred_at": f"2026-01-0{i + 1}T00:00:00Z"} for i in range(5)])
    contents = lambda **q: [e["content"] for e in read(api_client, **q).json()["events"]]  # noqa: E731
    assert contents(limit=2) == ["m3", "m4"]
    assert contents(after="2026-01-04T00:00:00Z") == ["m3", "m4"]
    assert contents(client_id="c2") == ["m2"]
    assert contents(data_contains=json.dumps({"k": {"n": 1}})) == ["m1", "m3"]
    assert read(api_client, data_contains="[").status_code == 400


def test_retract_takes_out_the_newest_event_and_keeps_it(api_client):
    create(api_client)
    commit(api_client, events=[{"type": "Message", "content": "a"}, {"type": "Message", "content": "b"}])
    retracted = api_client.post(URL + "retract/", WHO, format="json").json()["event"]
    assert retracted["content"] == "b" and retracted["status"] == "retracted"
    assert [e["content"] for e in read(api_client).json()["events"]] == ["a"]
    assert Event.objects.get(content="b").status == "retracted"
    assert AuditLog.objects.filter(action="event.retract").count() == 1
    api_client.post(URL + "retract/", WHO, format="json")
    assert api_client.post(URL + "retract/", WHO, format="json").json() == {"event": None}


def test_clear_and_delete(api_client):
    create(api_client)
    commit(api_client, events=[{"type": "Message", "content": "a"}])
    assert api_client.post(URL + "clear/", WHO, format="json").json() == {"cleared": 1}
    assert read(api_client).json()["events"] == []
    assert api_client.post(URL + "delete/", WHO, format="json").json() == {"deleted": 1}
    assert read(api_client).status_code == 404


def test_list_orders_by_last_activity_with_state_and_cursor_pages(api_client):
    for i in range(3):
        api_client.post(URL, {**WHO, "key": f"s{i}", "state": {"i": i}}, format="json")
        commit(api_client, key=f"s{i}", events=[{"type": "Message", "content": "x",
                                                 "occurred_at": f"2026-01-0{3 - i}T00:00:00Z"}])
    page = api_client.get(URL, {"app": "shop", "user_id": "ann", "limit": 2}).json()
    assert [(s["key"], s["state"]) for s in page["results"]] == [("s0", {"i": 0}), ("s1", {"i": 1})]
    rest = api_client.get(URL, {"app": "shop", "user_id": "ann", "cursor": page["next_cursor"]}).json()
    assert [s["key"] for s in rest["results"]] == ["s2"] and rest["next_cursor"] is None
    assert api_client.get(URL, {"app": "elsewhere"}).json()["results"] == []


def test_scopes_are_shared_across_sessions_and_revisioned(api_client):
    create(api_client)
    api_client.post(URL, {**WHO, "key": "s2", "user_id": "bob"}, format="json")
    commit(api_client, app_state={"a": 1}, user_state={"u": "ann"})
    bob = read(api_client, key="s2", user_id="bob").json()
    assert bob["app_state"] == {"a": 1} and bob["user_state"] == {}
    patched = api_client.patch(URL + "scopes/", {"app": "shop", "scope": "app", "patch": {"a": None, "b": 2}},
                               format="json").json()
    assert patched["app_state"] == {"b": 2} and patched["app_revision"] == 2
    assert ScopedState.objects.get(scope="app").revisions.count() == 2


def test_a_commit_answers_the_scopes_revisions_whether_it_patched_them_or_not(api_client):
    create(api_client)
    api_client.post(URL, {**WHO, "key": "s2", "user_id": "bob"}, format="json")
    commit(api_client, app_state={"a": 1}, user_state={"u": 1})
    commit(api_client, user_state={"u": 2})
    bobs = {**WHO, "key": "s2", "user_id": "bob"}
    answer = api_client.post(URL + "commit/", {**bobs, "user_state": {"v": 1}}, format="json").json()
    assert (answer["app_revision"], answer["user_revision"]) == (1, 1)
    answer = api_client.post(URL + "commit/", {**bobs, "events": [{"type": "Message"}], "batch_id": "b"},
                             format="json").json()
    assert (answer["app_revision"], answer["user_revision"]) == (1, 1)
    answer = commit(api_client, app_state={"a": 2})
    assert (answer.json()["app_revision"], answer.json()["user_revision"]) == (2, 2)
    fresh = api_client.post(URL + "commit/", {**WHO, "key": "s3", "create": True, "batch_id": "b"},
                            format="json").json()  # a new session: the revisions read after
    assert (fresh["app_revision"], fresh["user_revision"]) == (2, 2)


def test_other_workspaces_see_nothing(api_client, other_client):
    create(api_client)
    assert other_client.get(URL + "read/", WHO).status_code == 404
    assert other_client.post(URL + "commit/", {**WHO, "events": []}, format="json").status_code == 404
    assert other_client.post(URL + "retract/", WHO, format="json").json() == {"event": None}


@pytest.mark.parametrize("path", ["commit/", "retract/", "clear/", "delete/", "copy/", "remove/"])
def test_a_read_token_cannot_write(read_client, path):
    assert read_client.post(URL + path, WHO, format="json").status_code == 403


# ---------------------------------------------------------------- copy and remove (LangGraph)

def checkpoint(cid: str, run: str = "", thread: str = "main") -> dict:
    blob = base64.b64encode(cid.encode()).decode()
    return {"thread": thread, "events": [{"type": "Checkpoint", "client_id": cid, "run_id": run,
                                          "data": {"n": cid}, "visible": False}],
            "blobs": [{"key": f"cp/{cid}", "data": blob}, {"key": f"w/{cid}/t/0", "data": blob},
                      {"key": "ch/shared/1", "data": blob}], "create": True}


def events_of(client, key: str, thread: str = "main") -> list[str]:
    answer = client.get(URL + "read/", {**WHO, "key": key, "thread": thread})
    return [e["client_id"] for e in answer.json()["events"]] if answer.status_code == 200 else []


def test_copy_makes_a_new_session_with_every_threads_history_state_and_blobs(api_client):
    for cid, thread in (("c1", "main"), ("c2", "main"), ("n1", "ns:child")):
        assert commit(api_client, **checkpoint(cid, run="r1", thread=thread)).status_code == 200
    commit(api_client, state={"step": 2})

    answer = api_client.post(URL + "copy/", {**WHO, "target_key": "s2"}, format="json")

    assert answer.status_code == 200 and answer.json() == {"copied": 3}
    assert events_of(api_client, "s2") == events_of(api_client, "s1") == ["c1", "c2"]
    assert events_of(api_client, "s2", "ns:child") == ["n1"]
    copy = api_client.get(URL + "read/", {**WHO, "key": "s2", "blob": ["cp/c1", "w/c1/t/0"]}).json()
    assert copy["state"] == {"step": 2} and [b["key"] for b in copy["blobs"]] == ["cp/c1", "w/c1/t/0"]
    assert Event.objects.filter(thread__session__key="s2", run__run_id="r1").count() == 3
    assert AuditLog.objects.filter(action="session.copy").count() == 1


def test_copy_refuses_a_missing_source_and_an_existing_target_and_changes_nothing(api_client):
    assert api_client.post(URL + "copy/", {**WHO, "target_key": "s2"}, format="json").status_code == 404
    commit(api_client, **checkpoint("c1"))
    create(api_client, key="s2")
    before = Event.objects.count(), ThreadBlob.objects.count()
    answer = api_client.post(URL + "copy/", {**WHO, "target_key": "s2"}, format="json")
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "session_exists"
    assert (Event.objects.count(), ThreadBlob.objects.count()) == before
    bad = api_client.post(URL + "copy/", {**WHO, "target_key": ""}, format="json")
    assert bad.status_code == 400 and "target_key" in bad.json()["error"]["details"]


def test_remove_keeps_each_threads_latest_and_deletes_the_others_own_blobs(api_client):
    for cid, thread in (("c1", "main"), ("c2", "main"), ("c3", "main"), ("n1", "ns:x"), ("n2", "ns:x")):
        commit(api_client, **checkpoint(cid, thread=thread))
    prefixes = ["cp/{client_id}", "w/{client_id}/"]

    answer = api_client.post(URL + "remove/", {**WHO, "keys": ["s1"], "type": ["Checkpoint"],
                                               "keep_latest": True, "blob_prefixes": prefixes},
                             format="json")

    assert answer.status_code == 200 and answer.json() == {"removed": 3}
    assert events_of(api_client, "s1") == ["c3"] and events_of(api_client, "s1", "ns:x") == ["n2"]
    assert sorted(ThreadBlob.objects.values_list("key", flat=True)) == [
        "ch/shared/1", "ch/shared/1", "cp/c3", "cp/n2", "w/c3/t/0", "w/n2/t/0"]
    assert set(Event.objects.filter(status="removed").values_list("client_id", flat=True)) == {
        "c1", "c2", "n1"}  # kept for audit


def test_remove_by_run_reaches_every_session_of_the_app_and_no_other(api_client):
    commit(api_client, **checkpoint("a1", run="r1"))
    commit(api_client, **checkpoint("a2", run="r2"))
    api_client.post(URL + "commit/", {**WHO, "key": "s2", **checkpoint("b1", run="r1")}, format="json")
    api_client.post(URL + "commit/", {**WHO, "app": "other", **checkpoint("o1", run="r1")}, format="json")

    answer = api_client.post(URL + "remove/", {**WHO, "run_ids": ["r1", "nobody"]}, format="json")

    assert answer.json() == {"removed": 2}
    assert events_of(api_client, "s1") == ["a2"] and events_of(api_client, "s2") == []
    assert Event.objects.get(client_id="o1").status == "active"


@pytest.mark.parametrize("body", [
    {}, {"keys": ["s1"], "run_ids": ["r1"]}, {"run_ids": ["r1"], "keep_latest": True},
    {"keys": ["s1"], "blob_prefixes": ["cp/"]}, {"keys": "s1"}, {"keys": ["s1"] * 501},
])
def test_a_bad_remove_is_a_400_and_removes_nothing(api_client, body):
    commit(api_client, **checkpoint("c1"))
    answer = api_client.post(URL + "remove/", {**WHO, **body}, format="json")
    assert answer.status_code == 400, answer.json()
    assert events_of(api_client, "s1") == ["c1"] and ThreadBlob.objects.count() == 3


def test_copy_and_remove_never_reach_another_workspace(api_client, other_client):
    commit(api_client, **checkpoint("c1", run="r1"))
    assert other_client.post(URL + "copy/", {**WHO, "target_key": "s2"}, format="json").status_code == 404
    assert other_client.post(URL + "remove/", {**WHO, "run_ids": ["r1"]}, format="json").json() == {
        "removed": 0}
    assert events_of(api_client, "s1") == ["c1"]


def test_a_read_gives_each_event_as_the_events_endpoint_does(api_client):
    """The read builds its events from rows of values, not model instances: the same fields,
    values and formats as every other endpoint's events."""
    events = [{"type": "Message", "role": "user", "content": "hi", "client_id": "e1", "run_id": "run-1",
               "data": {"adk": {"n": 1}}, "occurred_at": "2026-01-02T03:04:05.123456Z"},
              {"type": "ToolCall", "role": "assistant", "content": "f()", "call_id": "c1",
               "step": "agent", "visible": False, "parts": [{"type": "text", "text": "f()"}]}]
    assert commit(api_client, create=True, events=events).status_code == 200
    got = read(api_client).json()
    listed = api_client.get(f"/api/v1/threads/{got['thread']}/events/").json()["results"]
    assert got["events"] == listed
    assert [e["run_id"] for e in got["events"]] == ["run-1", None]


def test_a_replayable_commit_reads_its_record_with_the_lock_and_writes_it_with_the_rest(
        api_client, django_assert_num_queries):
    assert commit(api_client, create=True).status_code == 200
    blob = [{"key": "cp/1", "data": base64.b64encode(b"x").decode()}]
    # as a LangGraph put. PostgreSQL: BEGIN, the thread under its lock with the commit record
    # and the scopes' revisions, the events (their counters and audit row), the blobs with the
    # record (INSERT … ON CONFLICT DO NOTHING RETURNING), COMMIT; no savepoint. SQLite: BEGIN,
    # the read, the event, the thread's and session's counters, the audit row, the blobs, the
    # record, COMMIT.
    with django_assert_num_queries(5 if connection.vendor == "postgresql" else 9):
        first = commit(api_client, events=[{"type": "Checkpoint", "content": "c"}], blobs=blob, batch_id="b1")
    assert first.status_code == 200
    again = commit(api_client, events=[{"type": "Checkpoint", "content": "c"}], blobs=blob, batch_id="b1")
    assert again.json() == first.json() and Event.objects.count() == 1
    # one audit row for the commit: the append's, naming the blob
    [log] = AuditLog.objects.filter(action__in=["events.append", "blobs.put"])
    assert log.action == "events.append" and log.details["blob_keys"] == ["cp/1"]
    assert log.details["blob_count"] == 1 and log.details["count"] == 1
    assert Session.objects.get().last_activity_at == Event.objects.get().occurred_at


def test_an_event_of_a_run_is_counted_on_its_run_within_the_appends_statement(
        api_client, django_assert_num_queries):
    assert commit(api_client, create=True).status_code == 200
    usage = {"model": "m", "usage": {"input_tokens": 7, "output_tokens": 3}}
    # as an ADK append: a run new, then the same run again, then a model call's usage on it.
    # PostgreSQL: BEGIN, the thread under its lock, the run (found or made, one statement), the
    # event with its counters, the run's and the audit row, COMMIT; a call's usage on the run
    # makes its statement one psycopg would convert on every call: the run's counters go apart
    # (with the call's figures and the session's model name). SQLite: the run read, made and
    # counted apart.
    for events, pg, sqlite in (([{"type": "Message", "content": "a", "run_id": "r1"}], 5, 10),
                               ([{"type": "Message", "content": "b", "run_id": "r1"}], 5, 9),
                               ([{"type": "LLMComplete", "content": "c", "run_id": "r1", "data": usage}],
                                8, 11)):
        with django_assert_num_queries(pg if connection.vendor == "postgresql" else sqlite):
            assert commit(api_client, events=events).status_code == 200
    [run] = Run.objects.all()
    assert (run.run_id, run.event_count, run.input_tokens, run.output_tokens) == ("r1", 3, 7, 3)
    assert Event.objects.filter(run=run).count() == 3


def test_a_commit_that_stores_no_event_audits_its_blobs_in_a_row_of_their_own(api_client):
    commit(api_client, create=True, events=[{"type": "Message", "content": "x", "client_id": "e1"}])
    blobs = [{"key": f"w/{i}", "data": "eA=="} for i in range(60)]
    assert commit(api_client, blobs=blobs).status_code == 200
    # a replayed event stores nothing: its blobs are put all the same
    assert commit(api_client, events=[{"type": "Message", "content": "x", "client_id": "e1"}],
                  blobs=blobs[:2]).status_code == 200
    puts = [log.details for log in AuditLog.objects.filter(action="blobs.put").order_by("pk")]
    assert puts == [{"keys": [f"w/{i}" for i in range(50)], "count": 60},
                    {"keys": ["w/0", "w/1"], "count": 2}]
    [append] = AuditLog.objects.filter(action="events.append")
    assert "blob_keys" not in append.details


def test_one_commit_writes_its_blobs_in_one_statement_last_key_wins(api_client,
                                                                    django_assert_num_queries):
    first = commit(api_client, create=True, events=[{"type": "Message", "content": "first"}])
    assert first.status_code == 200
    blobs = [{"key": f"ch/{i}", "data": base64.b64encode(bytes([i])).decode()} for i in range(5)]
    # a LangGraph put: one event and five blobs, sent twice (the second overwrites by key)
    for round_ in range(2):
        blobs[-1] = {"key": "ch/0", "data": base64.b64encode(b"last").decode(), "meta": {"r": round_}}
        # PostgreSQL: BEGIN, the thread under its lock (the scopes' revisions with it), one
        # statement for the event, its counters, the session's activity and the commit's audit
        # row, one for the blobs, COMMIT. SQLite: BEGIN, the read, the event, the thread's and
        # session's counters, the audit row, the blobs, COMMIT.
        with django_assert_num_queries(5 if connection.vendor == "postgresql" else 8):
            answer = commit(api_client, events=[{"type": "Checkpoint", "content": f"step {round_}"}],
                            blobs=blobs)
        assert answer.status_code == 200, answer.json()
    kept = {b.key: b for b in ThreadBlob.objects.all()}
    assert sorted(kept) == ["ch/0", "ch/1", "ch/2", "ch/3"]
    assert bytes(kept["ch/0"].data) == b"last" and kept["ch/0"].meta == {"r": 1} and kept["ch/0"].size == 4


# ---------------------------------------------------------------- blobs the events name

def named_checkpoint(cid: str, refs) -> dict:
    blob = base64.b64encode(cid.encode()).decode()
    return {"events": [{"type": "Checkpoint", "client_id": cid, "visible": False,
                        "data": {"n": cid, "blob_refs": refs}}],
            "blobs": [{"key": f"cp/{cid}", "data": blob}, {"key": f"w/{cid}/t/0", "data": blob},
                      {"key": f"w/{cid}/t/1", "data": blob}, {"key": f"ch/x/{cid}", "data": blob}],
            "create": True}


def test_a_read_returns_the_blobs_its_events_name(api_client, django_assert_num_queries):
    for cid in ("c1", "c2", "c3"):
        refs = {"keys": [f"cp/{cid}", "ch/x/c1", "missing"], "prefixes": [f"w/{cid}/"]}
        assert commit(api_client, **named_checkpoint(cid, refs)).status_code == 200
    assert commit(api_client, events=[{"type": "Message", "content": "no refs"}]).status_code == 200
    # the identity's session and thread with the scoped states (one message on PostgreSQL),
    # the events, the blobs
    with django_assert_num_queries(3 if connection.vendor == "postgresql" else 4):
        body = read(api_client, type="Checkpoint", limit=2, event_blobs="true").json()
    assert [e["client_id"] for e in body["events"]] == ["c2", "c3"]
    assert [b["key"] for b in body["blobs"]] == ["ch/x/c1", "cp/c2", "cp/c3", "w/c2/t/0", "w/c2/t/1",
                                                 "w/c3/t/0", "w/c3/t/1"]
    assert base64.b64decode(body["blobs"][1]["data"]) == b"c2"
    # without the option, none; with keys and prefixes asked for by name, those too
    assert read(api_client, type="Checkpoint", limit=1).json()["blobs"] == []
    both = read(api_client, type="Checkpoint", limit=1, event_blobs="true", blob="cp/c1",
                blob_prefix="ch/").json()
    assert [b["key"] for b in both["blobs"]] == ["ch/x/c1", "ch/x/c2", "ch/x/c3", "cp/c1", "cp/c3",
                                                 "w/c3/t/0", "w/c3/t/1"]


@pytest.mark.parametrize("refs", [None, "cp/c1", ["cp/c1"], {"keys": "cp/c1"},
                                  {"keys": [1, None, ""], "prefixes": [""]}])
def test_ill_formed_blob_refs_name_no_blobs(api_client, refs):
    assert commit(api_client, **named_checkpoint("c1", refs)).status_code == 200
    body = read(api_client, event_blobs="true").json()
    assert body["events"][0]["data"]["blob_refs"] == refs and body["blobs"] == []


def test_many_named_blobs_are_read_in_batches(api_client, monkeypatch):
    monkeypatch.setattr("contextstore.selectors.agent_sessions.MAX_BLOB_TERMS_PER_QUERY", 2)
    refs = {"keys": ["cp/c1", "ch/x/c1", "cp/c1"], "prefixes": ["w/c1/", "w/c1/t/"]}
    assert commit(api_client, **named_checkpoint("c1", refs)).status_code == 200
    body = read(api_client, event_blobs="true").json()
    assert [b["key"] for b in body["blobs"]] == ["ch/x/c1", "cp/c1", "w/c1/t/0", "w/c1/t/1"]


@pytest.mark.parametrize("params", [{"event_blobs": "maybe"}, {"blob_prefix": ""}])
def test_bad_blob_options_are_refused(api_client, params):
    assert commit(api_client, **named_checkpoint("c1", {"keys": ["cp/c1"]})).status_code == 200
    answer = read(api_client, **params)
    assert answer.status_code == 400 and set(answer.json()["error"]["details"]) == set(params)


@pytest.mark.parametrize("accept", ["application/json", "application/json; indent=2"])
def test_event_data_reads_back_as_stored_whichever_encoder_renders(api_client, accept):
    """Events' data and parts go out as their stored JSON text (orjson), or parsed again when
    DRF's encoder renders the answer (an indent asked for, an integer beyond 64 bits)."""
    data = {"z": 1, "a": [None, 2.5, "ü\u2028\u0000"], "big": 2**70, "nested": {"b": {}, "a": []}}
    assert commit(api_client, create=True, events=[
        {"type": "Message", "content": "x", "data": data, "parts": [{"type": "text", "text": "x"}]},
        {"type": "Message", "content": "y"}]).status_code == 200
    answer = api_client.get(URL + "read/", WHO, HTTP_ACCEPT=accept)
    assert answer.status_code == 200
    first, second = answer.json()["events"]
    assert first["data"] == data and list(first["data"]) == ["z", "a", "big", "nested"]
    assert first["parts"] == [{"type": "text", "text": "x"}] and second["data"] is None
    assert b"\xe2\x80\xa8" not in answer.content


def test_a_read_returns_only_the_event_fields_asked_for(api_client, django_assert_num_queries):
    assert commit(api_client, create=True, events=[
        {"type": "Message", "content": "hi", "client_id": "e1", "data": {"item": {"b": 1, "a": 2}},
         "run_id": "r1", "occurred_at": "2026-01-02T03:04:05Z"}]).status_code == 200
    whole = read(api_client).json()["events"][0]
    # the identity's session and thread with the scoped states (one message on PostgreSQL),
    # the events
    with django_assert_num_queries(2 if connection.vendor == "postgresql" else 3):
        some = read(api_client, fields="data,content,run_id,occurred_at,data").json()["events"]
    assert some == [{k: whole[k] for k in ("data", "content", "run_id", "occurred_at")}]
    assert list(some[0]["data"]["item"]) == ["b", "a"] and some[0]["occurred_at"] == "2026-01-02T03:04:05Z"
    assert read(api_client, fields="collapse").json()["events"] == [{"collapse": None}]
    for wrong in ("content,secret", "0", "content,", ",content"):
        refused = read(api_client, fields=wrong)
        assert refused.status_code == 400 and "content, parts" in refused.json()["error"]["details"]["fields"]


def test_a_blob_key_prefix_is_matched_exactly(api_client):
    """Prefixes are ranges of the (thread, key) index, keys compared byte for byte on both
    databases: case, accents and the last code points count."""
    keys = ["w/c1/", "w/c1/é", "w/c1/\U0010ffff", "w/c1/\U0010ffff/x", "w/c10", "W/C1/x", "w/c1",
            "w/c0/z", "p\ud7ffa", "p\ue000", "q\U0010ffffa", "q\U0010ffff"]
    blob = base64.b64encode(b"x").decode()
    assert commit(api_client, create=True, blobs=[{"key": k, "data": blob} for k in keys]).status_code == 200
    for prefix, found in (("w/c1/", ["w/c1/", "w/c1/é", "w/c1/\U0010ffff", "w/c1/\U0010ffff/x"]),
                          ("w/c1/\U0010ffff", ["w/c1/\U0010ffff", "w/c1/\U0010ffff/x"]),
                          ("p\ud7ff", ["p\ud7ffa"]), ("q\U0010ffff", ["q\U0010ffff", "q\U0010ffffa"])):
        answer = api_client.get(URL + "blobs/", {**WHO, "prefix": prefix}).json()
        assert sorted(b["key"] for b in answer) == sorted(found), prefix
        assert [b["key"] for b in read(api_client, blob_prefix=prefix).json()["blobs"]] == sorted(found)
