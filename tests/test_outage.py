"""A database that cannot be reached answers 503 + Retry-After (code `database_unavailable`) on
every path, API, dashboard, OTLP and probes; a real bug keeps its 500. The errors are the
drivers' own: a refused and a timed-out connection, a backend PostgreSQL terminated (57P01),
an SQLite write lock held past busy_timeout. tests/test_outage_restart.py stops and restarts a
real PostgreSQL under a running server."""

import sqlite3
import threading

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError, IntegrityError, close_old_connections, connection
from django.db.utils import DatabaseErrorWrapper
from django.test import Client
from psycopg import errors as pg_errors

from contextstore import outage
from contextstore.models import Membership, Session
from tests.api.conftest import client_for
from tests.frozen import frozen_server
from tests.otlp.conftest import export, span
from tests.test_production_layout import free_port


class _Driver:
    """What Django's DatabaseErrorWrapper reads of a connection: its driver module."""

    Database = psycopg
    errors_occurred = False


def django_error_of(conninfo: str) -> DatabaseError:
    """The error Django raises when psycopg cannot connect with `conninfo` (its wrapper's own
    translation, without the test database pytest-django guards)."""
    try:
        with DatabaseErrorWrapper(_Driver()):
            psycopg.connect(conninfo)
    except DatabaseError as exc:
        return exc
    raise AssertionError("the connection opened")


# --- the classification, on the drivers' real errors ------------------------------------------

def test_a_refused_connection_is_an_outage():
    exc = django_error_of(f"host=127.0.0.1 port={free_port()} user=postgres")
    assert isinstance(exc.__cause__, psycopg.OperationalError)
    assert outage.database_unavailable(exc)


def test_a_connection_that_times_out_is_an_outage():
    with frozen_server() as port:  # accepts, never answers: libpq's connect_timeout ends it
        exc = django_error_of(f"host=127.0.0.1 port={port} user=postgres connect_timeout=1")
    assert "timeout" in str(exc).lower()
    assert outage.database_unavailable(exc)


@pytest.mark.parametrize("error", [pg_errors.AdminShutdown, pg_errors.CrashShutdown,
                                   pg_errors.CannotConnectNow, pg_errors.TooManyConnections,
                                   pg_errors.ConnectionFailure, pg_errors.ConnectionTimeout])
def test_postgresqls_unavailable_states_are_an_outage(error):
    from django.db import OperationalError
    exc = OperationalError("down")
    exc.__cause__ = error("down")
    assert outage.database_unavailable(exc)


@pytest.mark.parametrize("error", [pg_errors.QueryCanceled, pg_errors.DeadlockDetected,
                                   pg_errors.UndefinedTable, pg_errors.SyntaxError])
def test_other_postgresql_errors_are_not(error):
    from django.db import OperationalError, ProgrammingError
    exc = (OperationalError if issubclass(error, psycopg.OperationalError) else ProgrammingError)("x")
    exc.__cause__ = error("x")
    assert not outage.database_unavailable(exc)


def test_an_error_without_a_driver_cause_or_not_a_database_error_is_not():
    from django.db import OperationalError
    assert not outage.database_unavailable(OperationalError("raised by hand"))
    assert not outage.database_unavailable(ValueError("bug"))
    assert not outage.database_unavailable(IntegrityError("duplicate"))


def test_sqlite_locked_past_its_busy_timeout_is_an_outage_and_a_missing_table_is_not(tmp_path):
    path = tmp_path / "db.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    waiter = sqlite3.connect(path, timeout=0.05, isolation_level=None)
    from django.db import OperationalError
    errors = []
    for sql in ("BEGIN IMMEDIATE", "SELECT * FROM missing"):
        try:
            waiter.execute(sql)
        except sqlite3.OperationalError as driver_error:
            exc = OperationalError(str(driver_error))
            exc.__cause__ = driver_error
            errors.append(exc)
    holder.close()
    waiter.close()
    locked, missing = errors
    assert "locked" in str(locked)
    assert outage.database_unavailable(locked)
    assert not outage.database_unavailable(missing)


# --- every path, on a connection PostgreSQL terminated -----------------------------------------

@pytest.fixture
def member_client(workspace) -> Client:
    user = get_user_model().objects.create_user("pat", password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=user, role=Membership.Role.VIEWER)
    client = Client()
    client.force_login(user)
    return client


def assert_outage_json(response) -> None:
    assert response.status_code == 503, response.content
    assert int(response["Retry-After"]) >= 1
    assert response.json() == {"error": {"code": "database_unavailable", "message": outage.MESSAGE,
                                         "details": {}}}


def assert_outage_page(response) -> None:
    assert response.status_code == 503
    assert int(response["Retry-After"]) >= 1
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "<h1>The database is unavailable</h1>" in page and 'role="alert"' in page


@pytest.mark.postgres
def test_every_path_answers_503_while_its_connection_is_gone_and_200_once_it_is_replaced(
        transactional_db, token, session, member_client):
    if connection.vendor != "postgresql":
        pytest.skip("pg_terminate_backend is PostgreSQL's")
    api = client_for(token[1])
    assert api.get("/api/v1/sessions/").status_code == 200
    assert member_client.get(f"/sessions/{session.pk}/").status_code == 200
    pid = connection.connection.info.backend_pid
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])

    # The test client keeps the broken connection across requests (a server closes it at the end
    # of the request): the first request meets 57P01, the next ones a closed connection.
    assert_outage_json(api.get("/api/v1/sessions/"))
    assert_outage_json(api.post("/api/v1/threads/ensure/", {"session_key": "s-2"}, format="json"))
    assert_outage_page(member_client.get(f"/sessions/{session.pk}/"))
    assert_outage_page(member_client.get(f"/sessions/{session.pk}/", headers={"HX-Request": "true"}))
    assert_outage_json(Client().post("/otlp/v1/traces", export(span("00f067aa0ba902b7", "chat")),
                                     content_type="application/json",
                                     headers={"Authorization": f"Bearer {token[1]}"}))
    for probe in ("/healthz", "/readyz"):
        response = Client().get(probe)
        assert response.status_code == 503 and int(response["Retry-After"]) >= 1
        assert response.json()["checks"]["database"] == "error: OperationalError"

    close_old_connections()  # what request_finished runs: the unusable connection is dropped
    assert api.get("/api/v1/sessions/").status_code == 200
    assert member_client.get(f"/sessions/{session.pk}/").status_code == 200


def test_a_connection_lost_in_a_dashboard_middleware_answers_503_too(member_client, session, monkeypatch):
    """Raised outside any view (the session read by a middleware), handler500 answers."""
    from django.contrib.sessions.backends import db as session_db

    from tests.outage import lost_connection

    def load(self):
        lost_connection(None, "", None, False, {})
    monkeypatch.setattr(session_db.SessionStore, "load", load)
    client = Client(raise_request_exception=False)
    client.cookies = member_client.cookies
    assert_outage_page(client.get(f"/sessions/{session.pk}/"))


def test_a_real_bug_still_answers_500(token, member_client, session, monkeypatch):
    from contextstore.api.views import SessionViewSet
    from contextstore.views import sessions as session_views

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr(SessionViewSet, "list", broken)
    response = client_for(token[1]).get("/api/v1/sessions/")
    assert response.status_code == 500 and "Retry-After" not in response
    assert response.json()["error"]["code"] == "server_error"
    monkeypatch.setattr(session_views, "session_runs", broken)
    client = Client(raise_request_exception=False)
    client.cookies = member_client.cookies
    page = client.get(f"/sessions/{session.pk}/")
    assert page.status_code == 500 and "Retry-After" not in page
    assert b"Something went wrong" in page.content


# --- SQLite: the write lock held past busy_timeout ---------------------------------------------

def test_an_sqlite_write_that_waits_out_its_busy_timeout_answers_503_and_changes_nothing(
        transactional_db, token, session):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's write lock")
    api = client_for(token[1])
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout = 100")  # settings wait 20 s
    holder = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's long write
    try:
        response = api.post("/api/v1/threads/ensure/", {"session_key": "s-2"}, format="json")
        assert_outage_json(response)
    finally:
        holder.close()
    assert not Session.objects.filter(key="s-2").exists()
    assert api.post("/api/v1/threads/ensure/", {"session_key": "s-2"}, format="json").status_code == 201


# --- the queue: every path that queues work writes an outbox row first ------------------------

def test_a_summary_asked_for_while_the_broker_refuses_is_accepted_and_stays_queued(
        token, thread, settings, caplog, django_capture_on_commit_callbacks):
    """A broker outage fails no request: the job row is the outbox (beat's recovery sends it),
    as an OTLP export's OtelPending row is (tests/otlp/test_pending.py)."""
    from contextstore.models import Job
    from contextstore.outbox import publish_after_commit
    from tests.conftest import messages
    from tests.worker.conftest import _restore_broker, _use_broker

    api = client_for(token[1])
    url = f"/api/v1/threads/{thread.pk}/"
    assert api.post(url + "events/", {"events": messages(12)}, format="json").status_code == 201
    settings.CELERY_TASK_ALWAYS_EAGER = False
    saved = _use_broker("redis://127.0.0.1:1/0", "contextstore-outage-test",
                        {"socket_connect_timeout": 1, "socket_timeout": 1})
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post(url + "collapse/", {"start_position": 2, "end_position": 6,
                                                    "summarize": True}, format="json")
        sent = threading.Event()
        publish_after_commit(lambda _: sent.set(), None)  # after the job's own send, in order
        assert sent.wait(30)
    finally:
        _restore_broker(saved)
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.status == Job.Status.QUEUED
    assert f"could not send summary job {job.pk} to the broker" in caplog.text
