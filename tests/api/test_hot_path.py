"""The agent's hot path (append, context, thread and state reads): statement counts that do not
grow with the history, hand-built serializers equal to DRF's, and the API-token cache."""

import base64
import datetime
import decimal
import uuid

import pytest
from django.db import connection, transaction
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext
from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH, MAX_CACHED_STATEMENT_PARAMS
from rest_framework import serializers as drf
from rest_framework.renderers import JSONRenderer
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from contextstore.api import serializers as s
from contextstore.api.agent_sessions import CommitSerializer
from contextstore.api.common import parse
from contextstore.api.renderers import ORJSONRenderer
from contextstore.db import read_together
from contextstore.errors import DomainError
from contextstore.llm_models import thread_model_settings
from contextstore.models import Event, ReadAudit, Thread
from contextstore.selectors import events as event_reads
from contextstore.selectors import rendering
from contextstore.selectors.events import event_search
from contextstore.selectors.threads import thread_of_workspace
from contextstore.services import document, threads
from contextstore.services.blocks import block_upsert
from contextstore.services.collapses import collapse_create
from contextstore.services.common import Actor, lock_thread
from contextstore.services.events import event_append
from contextstore.services.model_settings import model_settings_update
from contextstore.services.sessions import thread_ensure_by_key
from contextstore.services.summaries import summarizer_configure
from contextstore.services.threads import thread_fork
from contextstore.services.workspaces import api_token_revoke
from tests.api.conftest import client_for
from tests.conftest import messages


def grow(thread, actor, size: int) -> None:
    for start in range(0, size, 500):
        event_append(thread=thread, events=messages(min(500, size - start), start=start, words=8),
                     actor=actor)


def append_statements() -> int:
    # Any batch. PostgreSQL: the thread's row lock (its only read), one statement (rows,
    # counters, audit), in a savepoint. SQLite: lock, stored client_ids, INSERT, thread and
    # session counters, audit, in a savepoint.
    return 4 if connection.vendor == "postgresql" else 8


@pytest.mark.slow
@pytest.mark.parametrize("history", [0, 1500])
@pytest.mark.parametrize("size", [1, 100])
def test_append_statements_do_not_grow_with_history(api_client, thread, thread_url, actor,
                                                   history, size, django_assert_num_queries):
    grow(thread, actor, history)
    api_client.post(f"{thread_url}events/", {"events": messages(1)}, format="json")  # token
    batch = [{**event, "client_id": f"c-{i}"}
             for i, event in enumerate(messages(size, start=history + 1))]
    with django_assert_num_queries(append_statements()):
        response = api_client.post(f"{thread_url}events/", {"events": batch}, format="json")
    assert response.status_code == 201, response.content
    assert [e["seq"] for e in response.json()["events"]] == list(range(history + 2, history + 2 + size))


@pytest.mark.parametrize("body", [b"{not json", b'{"events": [], "x": 1}', b'{"events": []}',
                                  b'{"events": [{"type": "no spaces allowed"}]}'])
def test_an_append_refused_before_the_lock_is_a_404_on_a_thread_the_token_cannot_see(
        api_client, other_client, thread_url, body):
    """The append reads its thread only under the lock, after the body is checked; a refused
    body still answers 404 for another workspace's thread (and for one that doesn't exist),
    as every other route on a thread does, and 400 on the token's own."""
    post = {"path": f"{thread_url}events/", "data": body, "content_type": "application/json"}
    assert other_client.post(**post).status_code == 404
    assert api_client.post(**post).status_code == 400
    for pk in (2**63 - 1, 2**63, 10**30):
        assert api_client.post(f"/api/v1/threads/{pk}/events/", data=body,
                               content_type="application/json").status_code == 404
    assert api_client.post(f"/api/v1/threads/{2**63}/events/", {"events": messages(1)},
                           format="json").status_code == 404


def test_the_append_lock_never_takes_another_workspaces_row(thread, other_workspace, actor):
    """The API appends to Thread(pk=id, workspace_id=the token's): the row lock matches both, so
    a guess at another workspace's id locks nothing and appends nothing."""
    with pytest.raises(Thread.DoesNotExist):
        event_append(thread=Thread(pk=thread.pk, workspace_id=other_workspace.pk),
                     events=messages(1), actor=actor)
    with transaction.atomic(), pytest.raises(Thread.DoesNotExist):
        lock_thread(Thread(pk=thread.pk, workspace_id=other_workspace.pk), history_only=True)
    thread.refresh_from_db()
    assert thread.event_count == 0 and not Event.objects.filter(thread=thread).exists()


@pytest.mark.slow
@pytest.mark.parametrize("history", [300, 1500])
def test_reads_statements_do_not_grow_with_history(api_client, thread, thread_url, actor, history,
                                                  django_assert_num_queries,
                                                  django_capture_on_commit_callbacks):
    grow(thread, actor, history)
    api_client.get(thread_url)  # the token is read once, then cached
    with django_assert_num_queries(1):  # the thread with its session
        assert api_client.get(thread_url).json()["event_count"] == history
    with django_assert_num_queries(1):
        assert api_client.get(f"{thread_url}state/").status_code == 200
    # the thread, its blocks and the newest page (position, tokens; one round trip on
    # PostgreSQL), and the planned rows
    postgresql = connection.vendor == "postgresql"
    # The read audit's row (services/access_log) is one statement the first time in the hour;
    # the process remembers it once committed and skips it on every read after.
    with django_capture_on_commit_callbacks(execute=True):
        assert api_client.get(f"{thread_url}context/?max_tokens=8000").status_code == 200
    assert ReadAudit.objects.filter(action="context.read").count() == 1
    rendering.forget_kept()  # a whole render: nothing kept from the one above
    with django_assert_num_queries(3 if postgresql else 4):
        response = api_client.get(f"{thread_url}context/?max_tokens=8000")
    assert response.status_code == 200
    # with its record: PostgreSQL writes it in the last read's statement
    rendering.forget_kept()
    with django_assert_num_queries(3 if postgresql else 5):
        response = api_client.get(f"{thread_url}context/?max_tokens=8000&record=true")
    assert response.status_code == 200 and response.json()["render_id"]
    # Rendered again, a thread reads only what was appended since (selectors/rendering.Kept):
    # nothing, or the new rows; a record is then its INSERT alone.
    with django_assert_num_queries(1):
        assert api_client.get(f"{thread_url}context/?max_tokens=8000").status_code == 200
    with django_assert_num_queries(2):
        assert api_client.get(f"{thread_url}context/?max_tokens=8000&record=true").status_code == 200
    event_append(thread=thread, events=messages(3, start=history, words=8), actor=actor)
    with django_assert_num_queries(2):
        assert api_client.get(f"{thread_url}context/?max_tokens=8000").status_code == 200


@pytest.mark.skipif(connection.vendor != "postgresql", reason="psycopg's conversion cache")
def test_the_write_paths_statements_are_ones_psycopg_converts_once(api_client, thread_url):
    """psycopg's client-side binding splits a statement's placeholders once per process only
    when it has at most 50 values and 4 kB; past that, on every call."""
    seen: list[tuple[str, int]] = []

    def record(execute, sql, params, many, context):
        seen.append((sql, len(params or ())))
        return execute(sql, params, many, context)

    blob = base64.b64encode(b"\x00\xff" * 200).decode()
    commit = {"app": "lg", "user_id": "", "key": "s1", "create": True, "batch_id": "b1",
              "events": [{"type": "Checkpoint", "run_id": "r1", "client_id": "c1", "data": {"n": 1}}],
              "blobs": [{"key": f"k{i}", "data": blob, "meta": {"i": i}} for i in range(5)]}
    api_client.post("/api/v1/agent-sessions/commit/", {**commit, "batch_id": "b0", "events": []},
                    format="json")
    with connection.execute_wrapper(record):
        assert api_client.post(f"{thread_url}events/", {"events": messages(1)},
                               format="json").status_code == 201
        assert api_client.post("/api/v1/agent-sessions/commit/", commit,
                               format="json").status_code == 200
    assert len(seen) > 4
    for sql, count in seen:
        assert count <= MAX_CACHED_STATEMENT_PARAMS and len(sql.encode()) <= MAX_CACHED_STATEMENT_LENGTH, sql


def test_a_blob_is_base64_text_without_drfs_surrogate_loop():
    from contextstore.api.agent_sessions import BlobInSerializer

    field = BlobInSerializer().fields["data"]
    assert not any(isinstance(v, ProhibitSurrogateCharactersValidator) for v in field.validators)
    # DRF's other text fields keep their check
    assert any(isinstance(v, ProhibitSurrogateCharactersValidator) for v in drf.CharField().validators)


@pytest.mark.parametrize("data", [r"QUJD\udfff", r"QUJD\u00e9", "QUJD!"])  # as JSON text
def test_blob_text_outside_base64_is_refused_and_nothing_is_stored(api_client, workspace, data):
    body = '{"app": "a", "key": "k", "create": true, "blobs": [{"key": "b", "data": "DATA"}]}'.replace(
        "DATA", data)
    response = api_client.post("/api/v1/agent-sessions/commit/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert not Thread.objects.filter(workspace=workspace).exists()


def test_a_replayed_client_id_returns_the_stored_event_on_the_fast_path(api_client, thread_url):
    first = api_client.post(f"{thread_url}events/", {"events": messages(2, client_id=None)},
                            format="json").json()
    batch = [{"type": "Message", "content": "a", "client_id": "k-1"},
             {"type": "Message", "content": "b", "client_id": "k-2"}]
    stored = api_client.post(f"{thread_url}events/", {"events": batch[:1]}, format="json")
    assert stored.status_code == 201
    again = api_client.post(f"{thread_url}events/", {"events": batch}, format="json")
    assert again.status_code == 201
    body = again.json()
    assert body["created"] == 1
    assert [e["seq"] for e in body["events"]] == [3, 4]  # gap-free: the rolled-back try left none
    assert body["events"][0]["id"] == stored.json()["events"][0]["id"]
    assert len(first["events"]) == 2
    conflict = api_client.post(f"{thread_url}events/",
                               {"events": [{"type": "Message", "content": "x", "client_id": "k-1"}]},
                               format="json")
    assert conflict.status_code == 409
    thread = api_client.get(thread_url).json()
    assert (thread["last_seq"], thread["event_count"]) == (4, 4)


def test_thread_and_state_serializers_match_drf(api_client, thread, actor):
    with transaction.atomic():
        locked = lock_thread(thread)
        document.document_write(thread=locked, actor=actor, reason="test", values={
            "state": {"k": [1, {"b": None}], "n": None}, "memory": [{"fact": "x"}],
            "current_input": "hi", "iteration": 3, "summary": "so far",
            "system_prompt": "be brief", "last_results": {"s": 1}})
    event_append(thread=thread, events=messages(3), actor=actor)
    thread.refresh_from_db()
    for serializer in (s.ThreadSerializer, s.StateSerializer):
        generic = drf.ModelSerializer.to_representation(serializer(), thread)
        assert serializer(thread).data == generic


def test_a_thread_reads_byte_for_byte_as_drf_shows_it(api_client, other_client, workspace, thread,
                                                      actor):
    """GET /threads/{id}/ reads one row (selectors.threads.thread_data_of_workspace), not the
    model: its bytes are DRF's JSONRenderer over the ModelSerializer of the thread, whatever
    the thread holds; another workspace's thread, a deleted one or an id past bigint is a 404."""
    busy, _ = thread_ensure_by_key(workspace=workspace, actor=actor, session_key="s\u2028é 🧵",
                                   user_id="ünï\u2029", name="\u00a0naïve \"quoted\" ✓")
    event_append(thread=busy, events=messages(6), actor=actor)
    with transaction.atomic():
        document.document_write(thread=lock_thread(busy), actor=actor, reason="edges", values={
            "iteration": 2**40, "max_history_size": 0, "summary": "résumé\u2028\n\"x\"",
            "system_prompt": "", "state": {"é": [None, 1.5, "\u2029"]}})
    summarizer_configure(thread=busy, config={"token_budget": {"preserve_recent": 2}}, actor=actor)
    model_settings_update(target=busy, actor=actor, model="gpt-4o", context_window=9000)
    block_upsert(thread=busy, name="persona", value="You are terse.", actor=actor)
    collapse_create(thread=busy, start_position=2, end_position=4, summary_text="S", actor=actor)
    fork = thread_fork(thread=busy, name="fork", start_position=1, end_position=3, actor=actor)
    open_fork = thread_fork(thread=busy, name="open", actor=actor)
    renderer = JSONRenderer()
    for each in (thread, busy, fork, open_fork):
        loaded = Thread.objects.select_related("session").get(pk=each.pk)
        expected = renderer.render(drf.ModelSerializer.to_representation(s.ThreadSerializer(), loaded))
        response = api_client.get(f"/api/v1/threads/{each.pk}/")
        assert response.status_code == 200
        assert response.content == expected
        assert other_client.get(f"/api/v1/threads/{each.pk}/").status_code == 404
    assert api_client.get(f"/api/v1/threads/{2**63}/").status_code == 404
    threads.thread_delete_fork(thread=fork, actor=actor)
    assert api_client.get(f"/api/v1/threads/{fork.pk}/").json()["error"]["code"] == "not_found"


def test_a_render_with_max_tokens_reads_no_session_and_answers_the_same(
        api_client, thread, thread_url, actor, django_assert_num_queries):
    """/context/ joins the session only for the model settings an explicit max_tokens overrides."""
    event_append(thread=thread, events=messages(4), actor=actor)
    model_settings_update(target=thread.session, actor=actor, context_window=8000)
    budget = thread_model_settings(Thread.objects.get(pk=thread.pk)).budget
    budgeted = api_client.get(f"{thread_url}context/").json()
    rendering.forget_kept()
    assert api_client.get(f"{thread_url}context/?max_tokens={budget}").json() == budgeted
    with CaptureQueriesContext(connection) as read:
        got = thread_of_workspace(workspace_id=thread.workspace_id, pk=thread.pk, with_session=False)
    [query] = read.captured_queries
    assert " JOIN " not in query["sql"]  # the thread's row alone, no relation followed
    assert got.session_id == thread.session_id and got.summary == ""
    with django_assert_num_queries(1):
        assert got.session.key == thread.session.key  # read when asked for


def drf_outcome(serializer_class, data):
    serializer = serializer_class(data=data)
    try:
        return ("ok", serializer.validated_data) if serializer.is_valid() else ("error", serializer.errors)
    except DomainError as exc:  # a field's own refusal in the API's words (JSONObject)
        return "refused", exc.message, exc.details


def parse_outcome(serializer_class, data):
    try:
        return "ok", parse(serializer_class, data)
    except drf.ValidationError as exc:
        return "error", exc.detail
    except DomainError as exc:
        return "refused", exc.message, exc.details


@pytest.mark.parametrize("serializer_class", [
    s.ContextQuerySerializer, s.EventQuerySerializer, s.StateWriteSerializer, s.ForkInSerializer,
    s.WindowQuerySerializer, s.CollapseInSerializer, CommitSerializer])
def test_input_serializers_built_once_validate_as_drf_does(serializer_class, monkeypatch):
    """parse shares one instance per class across requests and threads: each answer, valid or
    not and in any order, is what a new DRF instance says, and no fields are built again."""
    fields = serializer_class().fields
    inputs = [{}, QueryDict("max_tokens=8000&record=true&format=openai"), QueryDict("limit=0"),
              {"name": "fork", "start_position": 2, "end_position": 1}, {"count": 3},
              {"start_position": 1, "end_position": 2, "summary_text": "s"}, "not an object",
              {"events": [{"type": "Message", "content": "hi"}, {}], "state": {"a": [1]}}]
    inputs += [{name: value for name in fields} for value in ("x", None, 1, True, [], {"a": 1})]
    expected = [drf_outcome(serializer_class, data) for data in inputs]
    built, get_fields = [], drf.Serializer.get_fields
    monkeypatch.setattr(drf.Serializer, "get_fields", lambda self: built.append(self) or get_fields(self))
    for data, outcome in zip(inputs, expected, strict=True):
        assert parse_outcome(serializer_class, data) == outcome, data
    built.clear()  # nested serializers bind their fields on first use, once
    for data, outcome in zip(inputs, expected, strict=True):
        assert parse_outcome(serializer_class, data) == outcome, data
    assert built == []


def test_a_revoked_token_is_refused_at_once(api_client, token, thread_url):
    assert api_client.get(thread_url).status_code == 200  # cached now
    api_token_revoke(token=token[0], actor=Actor.system("tests"))
    assert api_client.get(thread_url).status_code == 401
    assert client_for(token[1]).get(thread_url).status_code == 401


def test_the_orjson_renderer_writes_what_drf_writes():
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC)
    data = {"when": moment, "day": moment.date(), "cost": decimal.Decimal("1.25"),
            "id": uuid.UUID(int=7), "text": "a\u2028b\u2029c \u00e9 \"q\" </script>", 1: [None, 1.5],
            "nested": {"list": [True, False, {"x": -3}]}, "big": 2**70}
    for sample in (data, {k: v for k, v in data.items() if k != "big"}, [], "", 0):
        assert ORJSONRenderer().render(sample) == JSONRenderer().render(sample)
    assert ORJSONRenderer().render(None) == b""
    assert ORJSONRenderer().render({"a": 1}, "application/json; indent=2") == \
        JSONRenderer().render({"a": 1}, "application/json; indent=2")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("cap", [1000, 2])
def test_text_search_on_a_big_thread_finds_what_the_plain_query_finds(
        monkeypatch, cap, thread, actor):
    event_append(thread=thread, events=messages(12, words=6), actor=actor)
    event_append(thread=thread, events=[{"type": "Message", "content": "a rare QuokKa here"},
                                        {"type": "Note", "content": "quokka again"}], actor=actor)
    thread.refresh_from_db()
    plain = {w: [e.seq for e in event_search(thread=thread, text=w, first=501)]
             for w in ("quokka", "context", "turn 1", "nowhere")}
    monkeypatch.setattr(event_reads, "TEXT_INDEX_FIRST", 10)
    monkeypatch.setattr(event_reads, "TEXT_INDEX_CAP", cap)
    for word, seqs in plain.items():
        assert [e.seq for e in event_search(thread=thread, text=word, first=501)] == seqs
    assert plain["quokka"] == [13, 14] and plain["nowhere"] == []
    assert [e.seq for e in event_search(thread=thread, text="quokka", types=["Note"])] == [14]
    assert [e.seq for e in event_search(thread=thread, text="context", first=501,
                                        after_seq=10)] == [11, 12]
    if connection.vendor == "postgresql":  # the index answers a rare word, by id
        assert event_reads.text_candidates(thread, "quokka") is not None
        assert (event_reads.text_candidates(thread, "context") is None) == (cap < 12)
        with connection.cursor() as cursor:  # its short timeout ended with its query
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] != f"{event_reads.TEXT_INDEX_TIMEOUT_MS}ms"


@pytest.mark.parametrize("server_side_binding", [False, True])
def test_reads_together_answer_as_each_read_alone(thread, actor, monkeypatch, server_side_binding,
                                                  django_assert_num_queries):
    """A render's blocks and newest page come in one round trip on PostgreSQL with client-side
    binding (one message, two result sets); otherwise one after the other; the same answers."""
    event_append(thread=thread, events=messages(5), actor=actor)
    block_upsert(thread=thread, name="persona", value="You are terse.", actor=actor)
    monkeypatch.setitem(connection.settings_dict, "OPTIONS",
                        {**connection.settings_dict.get("OPTIONS", {}),
                         "server_side_binding": server_side_binding})
    alone = (rendering._BLOCKS.all(thread.pk), rendering._NEWEST.rows(thread.pk, limit=3))
    one_message = connection.vendor == "postgresql" and not server_side_binding
    with django_assert_num_queries(1 if one_message else 2):
        blocks, newest = read_together((rendering._BLOCKS, (thread.pk,), None),
                                       (rendering._NEWEST, (thread.pk,), 3))
    assert [(b.pk, b.name, b.version_pk) for b in blocks] == [(b.pk, b.name, b.version_pk)
                                                             for b in alone[0]]
    assert newest == alone[1] and [row[1] for row in newest] == [5, 4, 3]
