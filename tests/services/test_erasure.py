"""Erasure of a person (services/erasure.py, POST /api/v1/erasures/, manage.py erase_user).

Two people of one workspace get data through every door: the Python client (served
in-process by Django), the REST API (sync, staged sync parts, import, agent sessions with user state and
blobs, renders, logged prompts), services (memories, forks, runs, clears, provider state),
OpenTelemetry exports (one derived, one left pending) and the summarizer's worker. Each
person's texts carry a marker of their own. After erasing the first, every column of every
table is searched by SQL for the first marker (none), and every row that was not erased is
byte for byte what it was (the second person's rows all among them).
"""

import base64
import io
import json
from typing import Any

import httpx
import pytest
from contextstore_client import ContextStore
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.models import Q
from django.test import Client
from rest_framework.test import APIClient

from contextstore.errors import InvalidInput
from contextstore.models import (
    AuditLog,
    Collapse,
    CommitRecord,
    Event,
    Job,
    Memory,
    OtelPending,
    OtelSpan,
    ScopedState,
    Session,
    StoredText,
    Thread,
)
from contextstore.selectors.renders import sha256
from contextstore.services import summaries
from contextstore.services.common import Actor
from contextstore.services.erasure import subject_digest, user_erase
from contextstore.services.memories import memory_remember, provider_state_put
from contextstore.services.runs import run_start
from contextstore.services.search import search_index_pending
from contextstore.services.sessions import session_delete, session_ensure, thread_ensure
from contextstore.services.threads import thread_clear_context, thread_fork
from contextstore.services.workspaces import api_token_create
from contextstore.sessionspec import check_user_id
from tests.conftest import response_json
from tests.otlp.conftest import export, span

MARK_A = "Qx7ANNAmark"  # only the erased person's data holds this
MARK_B = "Wv3BENmark"
SHARED = "You are a helpful assistant for the shop."  # both people's agents send this prompt


class DjangoTransport(httpx.BaseTransport):
    """The Python client's requests served in-process by Django's test client (which, unlike a
    bare WSGI call, keeps the test's database connection open)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = Client().generic(
            request.method, request.url.raw_path.decode(), data=request.read(),
            content_type=request.headers.get("content-type", ""),
            headers={k: v for k, v in request.headers.items()
                     if k.lower() not in ("content-type", "content-length", "host")})
        content = b"".join(answer.streaming_content) if answer.streaming else answer.content
        return httpx.Response(answer.status_code, headers=dict(answer.headers), content=content)


def client_for(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def admin_token(workspace, actor):
    return api_token_create(workspace=workspace, name="dpo", scope="admin", actor=actor)


def build(*, workspace, token: str, user_id: str, mark: str, actor: Actor,
          capture) -> dict[str, Any]:
    """One person's data through every door; returns ids the test looks at again."""
    api = client_for(token)
    # The Python client, served in-process: messages, a logged prompt, blocks, state with a
    # summary, a recorded render, provider state and a clear.
    store = ContextStore("http://testserver", token, transport=DjangoTransport())
    handle = store.thread(f"chat-{mark}", user_id=user_id, agent="helper")
    handle.append([{"type": "Message", "role": "user" if i % 2 == 0 else "assistant",
                    "content": f"turn {i} about {mark} " + "words " * 30} for i in range(12)])
    handle.log_llm_call("gpt-4o", messages=[{"role": "system", "content": SHARED},
                                            {"role": "user", "content": f"what of {mark}?"}],
                        input_tokens=10, output_tokens=5)
    handle.put_block("profile", value=f"the user is {mark}", placement="prefix")
    handle.put_state({"preference": f"prefers {mark}"}, summary=f"so far {mark} asked")
    handle.context(max_tokens=4000)
    handle.put_provider_state("mem0", {"facts": [mark]})
    thread = Thread.objects.get(pk=handle.id)
    # The summarizer's worker collapses a range (a Summary event, a collapse and a job).
    with capture(execute=True):
        summaries.summarize_range_request(thread=thread, start_position=1, end_position=6,
                                          actor=actor)
    assert Job.objects.get(thread=thread).status == Job.Status.DONE
    # Services: a run, a fork, a clear, memories (one sourced from an event, kept without a
    # user id), another session.
    run_start(thread=thread, run_id=f"run-{mark}", actor=actor)
    thread.refresh_from_db()
    thread_fork(thread=thread, name=f"fork-{mark}", actor=actor)
    memory_remember(workspace=workspace, user_id=user_id, key=f"k-{mark}",
                    content=f"remembers {mark}", actor=actor)
    source = Event.objects.filter(thread=thread, type="Message").first()
    memory_remember(workspace=workspace, user_id="", content=f"learned {mark} from a chat",
                    source_event=source, actor=actor)
    other, _ = session_ensure(workspace=workspace, key=f"side-{mark}", user_id=user_id,
                              title=f"side {mark}", actor=actor)
    side = thread_ensure(session=other, actor=actor)[0]
    provider_state_put(thread=side, provider="letta", state={"f": mark}, actor=actor)
    thread_clear_context(thread=thread, actor=actor)
    # Sync: a whole save, and a save whose first part is staged while the second never came.
    url = f"/api/v1/threads/{side.pk}/sync/"
    saved = api.post(url, {"namespace": "fw", "items": [
        {"key": "m0", "event": {"type": "Message", "role": "user", "content": f"synced {mark}"}}],
        "state": {"fw": mark}}, format="json")
    assert saved.status_code == 200, saved.json()
    staged = api.post(url, {"namespace": "fw", "upload_id": "up-1", "part": 0, "parts": 2, "items": [
        {"key": "m1", "event": {"type": "Message", "role": "user", "content": f"staged {mark}"}}]},
        format="json")
    assert staged.json()["status"] == "staged"
    # Agent sessions (a framework's session): state, user-scope state, a blob.
    who = {"app": "shop", "user_id": user_id, "key": f"as-{mark}"}
    assert api.post("/api/v1/agent-sessions/", {**who, "state": {"cart": mark},
                                                "user_state": {"lang": mark}},
                    format="json").status_code == 201
    committed = api.post("/api/v1/agent-sessions/commit/", {**who, "batch_id": "b-1", "events": [
        {"type": "Message", "role": "user", "content": f"buy {mark}"}],
        "blobs": [{"key": "ckpt", "data": base64.b64encode(f"blob {mark}".encode()).decode()}]},
        format="json")
    assert committed.status_code == 200, committed.json()
    # Import: the chat's export as a new session of the same person.
    exported = response_json(api.get(f"/api/v1/threads/{thread.pk}/export/"))
    imported = api.post(f"/api/v1/threads/import/?session_key=imp-{mark}&user_id={user_id}",
                        exported, format="json")
    assert imported.status_code == 201, imported.json()
    # OpenTelemetry: a trace derived into a session of theirs.
    otel_export(token=token, user_id=user_id, mark=mark, capture=capture, derive=True)
    return {"thread": thread.pk}


def otel_export(*, token: str, user_id: str, mark: str, capture, derive: bool) -> None:
    """An OTLP/HTTP export of one chat span naming the person; derived at once, or left pending
    (its on-commit derivation never runs)."""
    trace = f"{mark.encode().hex()[:16]:0>16}" + ("a" if derive else "b") * 16
    body = export(span("1" * 16, f"chat {mark}", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "session.id": f"otel-{mark}", "user.id": user_id,
        "gen_ai.prompt": f"tell me about {mark}"}, trace_id=trace))
    with capture(execute=derive):
        answer = Client().post("/otlp/v1/traces", data=json.dumps(body), content_type="application/json",
                               headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200


def dump() -> dict[str, dict[Any, tuple]]:
    """Every row of every table, by primary key (or the whole row where there is none)."""
    tables = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            names = [c[0] for c in cursor.description]
            key = names.index("id") if "id" in names else names.index("sha256") if "sha256" in names else None
            rows = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                    for row in cursor.fetchall()]
            tables[table] = {(row[key] if key is not None else row): row for row in rows}
    return tables


def holding(tables: dict[str, dict[Any, tuple]], text: str) -> dict[str, list[Any]]:
    """The rows any column of which holds `text` (JSON and bytes included)."""
    found: dict[str, list[Any]] = {}
    raw = text.encode()
    for table, rows in tables.items():
        for key, row in rows.items():
            for value in row:
                # Case-insensitively: the search index keeps an upper-cased copy of the text.
                hit = (raw.upper() in value.upper() if isinstance(value, bytes)
                       else text.upper() in (value if isinstance(value, str)
                                             else json.dumps(value, default=str)).upper())
                if hit:
                    found.setdefault(table, []).append(key)
                    break
    return found


def sql_holding(text: str) -> dict[str, int]:
    """The same search in SQL: each column of each table cast to text, LIKE the marker in any
    case (bytes columns: PostgreSQL casts them to hex, so the marker's hex is looked for too)."""
    found = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            columns = [c.name for c in connection.introspection.get_table_description(cursor, table)]
            quoted = [connection.ops.quote_name(c) for c in columns]
            cond = " OR ".join(f"UPPER(CAST({c} AS TEXT)) LIKE %s OR UPPER(CAST({c} AS TEXT)) LIKE %s"
                               for c in quoted)
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)} WHERE {cond}",
                           [f"%{text.upper()}%", f"%{text.encode().hex().upper()}%"] * len(columns))
            if n := cursor.fetchone()[0]:
                found[table] = n
    return found


@pytest.fixture
def two_people(workspace, token, actor, eager_tasks, django_capture_on_commit_callbacks):
    a = build(workspace=workspace, token=token[1], user_id=f"ann-{MARK_A}", mark=MARK_A,
              actor=actor, capture=django_capture_on_commit_callbacks)
    b = build(workspace=workspace, token=token[1], user_id=f"ben-{MARK_B}", mark=MARK_B,
              actor=actor, capture=django_capture_on_commit_callbacks)
    # A trace each that is not derived yet: its spans name the person, no session does.
    for user_id, mark in ((f"ann-{MARK_A}", MARK_A), (f"ben-{MARK_B}", MARK_B)):
        otel_export(token=token[1], user_id=user_id, mark=mark,
                    capture=django_capture_on_commit_callbacks, derive=False)
    assert OtelPending.objects.count() == 2
    search_index_pending()  # the search index's copy of their texts (PostgreSQL) is there too
    return a, b


def test_erasure_leaves_no_text_of_the_person_and_every_other_row_as_it_was(two_people, workspace, actor):
    before = dump()
    a_rows, b_rows = holding(before, MARK_A), holding(before, MARK_B)
    # Every door left something of both people (the build reached what it meant to).
    for table in ("contextstore_event", "contextstore_memory", "contextstore_scopedstate",
                  "contextstore_threadblob", "contextstore_commitrecord", "contextstore_otelspan",
                  "contextstore_storedtext", "contextstore_staterevision", "contextstore_auditlog",
                  "contextstore_contextblockversion", "contextstore_providerstate",
                  "contextstore_clear", "contextstore_session", "contextstore_run",
                  "contextstore_thread", "contextstore_scopedstaterevision"):
        assert table in a_rows and table in b_rows, table
    if connection.vendor == "postgresql":
        assert "contextstore_eventsearch" in a_rows and "contextstore_eventsearch" in b_rows
    assert sql_holding(MARK_A) and sql_holding(MARK_B)
    a = Session.objects.filter(user_id=f"ann-{MARK_A}")
    assert a.count() == 5  # chat, side, agent session, import, otel
    assert Collapse.objects.filter(thread__session__in=a, source="worker").exists()
    assert CommitRecord.objects.filter(response__isnull=True).count() == 2  # the staged parts
    shared = StoredText.objects.get(sha256=sha256(json.dumps(
        {"content": SHARED, "role": "system"}, separators=(",", ":"))))

    receipt = user_erase(workspace=workspace, user_id=f"ann-{MARK_A}", actor=Actor.system("dpo"))

    after = dump()
    assert holding(after, MARK_A) == {}
    assert sql_holding(MARK_A) == {}
    assert holding(after, MARK_B) == b_rows
    # Every row not erased is as it was, but the audit rows that were about the person (their
    # details gone); the erasure added one audit row.
    redacted = []
    for table, rows in before.items():
        for key, row in rows.items():
            if key in after[table] and after[table][key] != row:
                assert table == "contextstore_auditlog", (table, row)
                redacted.append(key)
    assert AuditLog.objects.filter(pk__in=redacted).exclude(details={"erased": True}).count() == 0
    gone = {t: [k for k in rows if k not in after[t]] for t, rows in before.items()}
    for table, keys in b_rows.items():
        assert not set(keys) & set(gone[table]), table
    new = [k for k in after["contextstore_auditlog"] if k not in before["contextstore_auditlog"]]
    assert len(new) == 1
    log = AuditLog.objects.get(pk=new[0])
    assert (log.action, log.actor_label) == ("person.erase", "dpo")
    assert log.details == {"subject_sha256": subject_digest(f"ann-{MARK_A}"), "counts": receipt["counts"]}
    assert StoredText.objects.filter(pk=shared.pk).exists()  # the other person's agent sends it too

    counts = receipt["counts"]
    assert receipt["user_id"] == f"ann-{MARK_A}" and receipt["workspace"] == "acme"
    assert receipt["by"] == "dpo" and receipt["erased_at"].endswith("Z")
    assert counts["sessions"] == 5 and counts["threads"] == 6  # the fork is a thread
    assert counts["events"] == sum(1 for row in before["contextstore_event"].values()
                                   if row not in after["contextstore_event"].values())
    for kind in ("runs", "collapses", "clears", "blocks", "block_versions", "state_revisions",
                 "render_records", "stored_texts", "jobs", "blobs", "commit_records",
                 "provider_states", "memories", "scoped_states", "scoped_state_revisions",
                 "otel_spans", "otel_traces", "otel_pending", "audit_rows_redacted"):
        assert counts[kind] > 0, kind
    assert counts["memories"] == 2  # theirs, and the one learned from their chat
    assert counts["audit_rows_redacted"] == len(redacted)

    again = user_erase(workspace=workspace, user_id=f"ann-{MARK_A}", actor=Actor.system("dpo"))
    assert set(again["counts"].values()) == {0}


def test_the_other_workspace_is_untouched_even_for_the_same_user_id(
        workspace, other_workspace, actor, eager_tasks, django_capture_on_commit_callbacks):
    theirs = api_token_create(workspace=other_workspace, name="rival", actor=actor)[1]
    build(workspace=other_workspace, token=theirs, user_id="ann", mark=MARK_B, actor=actor,
          capture=django_capture_on_commit_callbacks)
    session_ensure(workspace=workspace, key="here", user_id="ann", title=MARK_A, actor=actor)
    theirs_before = {model: list(model.objects.filter(workspace=other_workspace).order_by("pk").values())
                     for model in (Session, Thread, Memory, ScopedState, OtelSpan, AuditLog)}
    before = dump()
    receipt = user_erase(workspace=workspace, user_id="ann", actor=actor)
    after = dump()
    assert receipt["counts"]["sessions"] == 1 and holding(after, MARK_A) == {}
    assert holding(after, MARK_B) == holding(before, MARK_B)
    for model, rows in theirs_before.items():
        assert list(model.objects.filter(workspace=other_workspace).order_by("pk").values()) == rows
    assert Session.objects.filter(workspace=other_workspace, user_id="ann").count() == 5


def test_audit_rows_of_a_session_deleted_before_lose_their_details_but_not_anothers(
        workspace, actor):
    gone, _ = session_ensure(workspace=workspace, key="support-chat", user_id="ann", actor=actor)
    thread_ensure(session=gone, name="main", actor=actor)
    session_delete(session=gone, actor=actor)
    kept, _ = session_ensure(workspace=workspace, key="support-chat", user_id="ben", actor=actor)
    thread_ensure(session=kept, name="main", actor=actor)
    # Each id with its own type: the gone session's id may be the kept thread's, and the reverse.
    bens = list(AuditLog.objects.filter(Q(target_type="session", target_id=str(kept.pk))
                                        | Q(target_type="thread", target_id=str(kept.threads.get().pk)))
                .order_by("pk").values())
    assert len(bens) == 2
    receipt = user_erase(workspace=workspace, user_id="ann", actor=actor)
    assert receipt["counts"]["sessions"] == 0
    assert receipt["counts"]["audit_rows_redacted"] == 3  # ann's session: created, its thread, deleted
    assert not AuditLog.objects.filter(details__contains="ann").exists()
    assert not AuditLog.objects.filter(details__contains="support-chat").exclude(
        pk__in=[row["id"] for row in bens]).exists()
    assert list(AuditLog.objects.filter(pk__in=[row["id"] for row in bens]).order_by("pk").values()) == bens


def test_the_admin_change_log_of_their_objects_goes(workspace, session, user, actor):
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.contrib.contenttypes.models import ContentType

    session_ensure(workspace=workspace, key=session.key, user_id="alice", title="Alice's divorce",
                   actor=actor)
    for obj in (session, Session.objects.create(workspace=workspace, key="x", user_id="bob")):
        LogEntry.objects.create(user=user, content_type=ContentType.objects.get_for_model(Session),
                                object_id=str(obj.pk), object_repr=str(obj), action_flag=CHANGE)
    receipt = user_erase(workspace=workspace, user_id="alice", actor=actor)
    assert receipt["counts"]["admin_log_entries"] == 1
    assert list(LogEntry.objects.values_list("object_repr", flat=True)) == ["x"]


def test_a_legal_hold_on_one_of_their_sessions_stops_the_erasure_before_anything_goes(
        workspace, session, thread, admin_token, actor):
    from contextstore.services.retention import retention_policy_set

    memory_remember(workspace=workspace, user_id="alice", content="likes tea", actor=actor)
    retention_policy_set(target=session, legal_hold=True, actor=actor)
    api = client_for(admin_token[1])
    api.get("/api/v1/sessions/")  # the token's last use is written now, not by the refusal
    before = dump()
    answer = api.post("/api/v1/erasures/", {"user_id": "alice"}, format="json")
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "legal_hold"
    assert answer.json()["error"]["details"] == {"legal_hold_sessions": [session.pk]}
    assert dump() == before
    retention_policy_set(target=session, legal_hold=False, actor=actor)
    assert user_erase(workspace=workspace, user_id="alice", actor=actor)["counts"]["memories"] == 1


def test_a_blank_or_missing_user_id_is_refused_by_erase_user_and_erases_nothing(workspace, session):
    # sessionspec.check_user_id, the command's (the API's serializer: test_the_api_refuses_...)
    from django.core.management import CommandError, call_command

    for user_id in ("", "   ", "a\x00b", "x" * 256):
        with pytest.raises(CommandError, match="user_id"):
            call_command("erase_user", "--workspace", workspace.slug, "--user-id", user_id)
    for user_id in (None, 7):
        with pytest.raises(InvalidInput):
            check_user_id(user_id)
    assert Session.objects.filter(pk=session.pk).exists()
    assert not AuditLog.objects.filter(action="person.erase").exists()


def test_the_events_go_in_batches_with_counters_right_between_them(workspace, session, thread, actor):
    from contextstore.services.events import event_append
    from tests.conftest import messages

    event_append(thread=thread, events=messages(25), actor=actor)
    receipt = user_erase(workspace=workspace, user_id="alice", actor=actor, batch_size=10)
    assert receipt["counts"]["events"] == 25 and receipt["counts"]["sessions"] == 1
    assert not Event.objects.exists() and not Thread.objects.exists()


def test_an_erasure_cut_short_leaves_consistent_counters_and_the_next_run_finishes_it(
        workspace, session, thread, actor, monkeypatch):
    from contextstore.services import erasure
    from contextstore.services.events import event_append
    from tests.conftest import messages

    event_append(thread=thread, events=messages(25), actor=actor)
    memory_remember(workspace=workspace, user_id="alice", content="likes tea", actor=actor)
    real, calls = erasure.events_delete_locked, []

    def failing_third(**kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("the process died")
        return real(**kwargs)

    monkeypatch.setattr(erasure, "events_delete_locked", failing_third)
    with pytest.raises(RuntimeError):
        user_erase(workspace=workspace, user_id="alice", actor=actor, batch_size=10)
    thread.refresh_from_db()
    assert thread.event_count == Event.objects.filter(thread=thread).count() == 5
    assert Session.objects.get(pk=session.pk).event_count == 5
    assert not Memory.objects.exists() and not AuditLog.objects.filter(action="person.erase").exists()
    monkeypatch.setattr(erasure, "events_delete_locked", real)
    receipt = user_erase(workspace=workspace, user_id="alice", actor=actor, batch_size=10)
    assert receipt["counts"]["events"] == 5 and receipt["counts"]["sessions"] == 1
    assert not Event.objects.exists() and not Session.objects.exists()


# --- the API and the command ---------------------------------------------------------------------

def test_the_api_erases_with_an_admin_token_and_answers_the_receipt(workspace, session, thread,
                                                                    admin_token, token):
    memory_remember(workspace=workspace, user_id="alice", content="likes tea",
                    actor=Actor.system("tests"))
    refused = client_for(token[1]).post("/api/v1/erasures/", {"user_id": "alice"}, format="json")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "scope"
    assert "admin scope" in refused.json()["error"]["message"]
    assert Session.objects.filter(pk=session.pk).exists()
    answer = client_for(admin_token[1]).post("/api/v1/erasures/", {"user_id": "alice"}, format="json")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["user_id"] == "alice" and body["workspace"] == "acme"
    assert body["by"] == f"token:{admin_token[0].prefix}"
    assert body["counts"]["sessions"] == 1 and body["counts"]["memories"] == 1
    assert not Session.objects.exists() and not Memory.objects.exists()
    again = client_for(admin_token[1]).post("/api/v1/erasures/", {"user_id": "alice"}, format="json")
    assert set(again.json()["counts"].values()) == {0}


@pytest.mark.parametrize("payload", [{}, {"user_id": ""}, {"user_id": "  "}, {"user_id": None},
                                     {"user_id": "x" * 256}, {"user_id": "a\x00b"}, []])
def test_the_api_refuses_a_missing_or_blank_user_id(workspace, session, admin_token, payload):
    answer = client_for(admin_token[1]).post("/api/v1/erasures/", payload, format="json")
    assert answer.status_code == 400, answer.json()
    assert answer.json()["error"]["code"] == "invalid"
    assert Session.objects.filter(pk=session.pk).exists()


def test_a_read_token_and_no_token_are_refused(workspace, session, read_token):
    assert client_for(read_token[1]).post("/api/v1/erasures/", {"user_id": "alice"},
                                          format="json").status_code == 403
    assert APIClient().post("/api/v1/erasures/", {"user_id": "alice"}, format="json").status_code == 401
    assert Session.objects.filter(pk=session.pk).exists()


def test_the_command_prints_the_receipt(workspace, session, thread):
    out = io.StringIO()
    call_command("erase_user", "--workspace", "acme", "--user-id", "alice", stdout=out)
    receipt = json.loads(out.getvalue())
    assert receipt["counts"]["sessions"] == 1 and receipt["counts"]["threads"] == 1
    assert receipt["by"].startswith("erase_user")
    assert not Session.objects.exists()
    with pytest.raises(CommandError, match="No workspace"):
        call_command("erase_user", "--workspace", "nope", "--user-id", "alice")
    with pytest.raises(CommandError, match="user_id is required"):
        call_command("erase_user", "--workspace", "acme", "--user-id", " ")


def test_the_admin_scope_can_write_and_is_in_the_schema(admin_token, thread):
    assert admin_token[0].can_write and admin_token[0].can_admin
    api = client_for(admin_token[1])
    assert api.post(f"/api/v1/threads/{thread.pk}/events/", {"events": [
        {"type": "Message", "role": "user", "content": "hi"}]}, format="json").status_code == 201
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert "post" in schema["paths"]["/api/v1/erasures/"]
