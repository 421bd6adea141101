"""Read replicas (contextstore/db_router.py) against a real streaming replica.

One replica cluster per session (scripts/replica-for-tests: pg_basebackup -R from the test
server, started on a free port); it streams everything, the test database pytest-django made
included, so its connection reads that database by name (TEST MIRROR semantics). Pausing
replay (pg_wal_replay_pause) makes the lag real: what the primary writes then is not on the
replica until replay resumes.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from contextstore import db_router
from contextstore.models import ApiToken, Membership, Thread
from contextstore.services.sessions import session_ensure

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "replica-for-tests"
ALIAS = "replica_1"
# Under pytest-xdist (--dist loadgroup) this module's tests share one worker, so one replica (a
# pg_basebackup of the whole server) is made per run, not one per worker.
pytestmark = pytest.mark.xdist_group("replica")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _script(*args: str) -> None:
    server_port = str(connection.settings_dict["PORT"] or 5432)
    if os.environ.get("DATABASE_POOLER"):  # behind the CI's pooler: copy its server
        server_port = "5432"
    subprocess.run([str(SCRIPT), *args], check=True, timeout=180,
                   env=os.environ | {"SERVER_PORT": server_port})


@pytest.fixture(scope="session")
def replica_server(django_db_setup):
    """A streaming replica of the test server for the whole session: (its directory, port)."""
    if connection.vendor != "postgresql":
        pytest.skip("streaming replicas are PostgreSQL's")
    if not shutil.which("pg_basebackup"):
        pytest.skip("pg_basebackup is not installed")
    # Under /tmp, not tmp_path: as root the replica runs as `postgres`, who must reach it.
    run_dir, port = tempfile.mkdtemp(prefix="cs-replica-"), _free_port()
    _script("start", run_dir, str(port))
    try:
        yield run_dir, port
    finally:
        _script("remove", run_dir)  # stopped, and its replication slot dropped
        shutil.rmtree(run_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def replica_alias(replica_server):
    """The replica as a database alias while this module runs, built as project/settings.py
    builds DATABASE_REPLICA_URLS' entries: the primary's settings, another host and port, and
    the test database's name (MIRROR: no test database of its own, never flushed)."""
    run_dir, port = replica_server
    connections.settings[ALIAS] = {**connection.settings_dict, "HOST": "127.0.0.1", "PORT": str(port),
                                   "TEST": {**connection.settings_dict["TEST"], "MIRROR": DEFAULT_DB_ALIAS}}
    try:
        yield run_dir, port
    finally:
        connections[ALIAS].close()
        del connections[ALIAS]
        del connections.settings[ALIAS]


# A test that reads the replica declares it (Django refuses an undeclared database) and commits
# (what a test's open transaction holds never reaches a replica).
reads_replica = pytest.mark.django_db(transaction=True, databases=[DEFAULT_DB_ALIAS, ALIAS])


def on_replica(sql: str) -> tuple:
    with connections[ALIAS].cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone()


def primary_lsn() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_flush_lsn()::text")
        return cursor.fetchone()[0]


def wait_for(sql: str, timeout: float = 120) -> None:  # a loaded machine's replica can trail
    deadline = time.monotonic() + timeout
    while not on_replica(sql)[0]:
        assert time.monotonic() < deadline, f"replica never answered true to {sql}"
        time.sleep(0.05)


def caught_up() -> None:
    """Wait until the replica has replayed every commit made so far: one committed after now
    (txid_current() gives the statement's transaction an id, so it commits and is replayed)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()::text")
        since = cursor.fetchone()[0]
        cursor.execute("SELECT txid_current()")
    wait_for(f"SELECT pg_last_xact_replay_timestamp() >= '{since}'::timestamptz")


def pause() -> None:
    """Replay stops once the replica has everything written so far."""
    caught_up()
    on_replica("SELECT pg_wal_replay_pause()")
    wait_for("SELECT pg_get_wal_replay_pause_state() = 'paused'")


def behind() -> None:
    """Wait until the replica has received WAL it has not replayed (so its lag is counted)."""
    wait_for(f"SELECT pg_last_wal_receive_lsn() >= '{primary_lsn()}'::pg_lsn "
             "AND pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()")


@pytest.fixture
def replicas(replica_alias, settings):
    """DATABASE_REPLICA_URLS pointed at the session's replica; yields the replica's directory.
    Replay runs again, and the replica is started again if a test stopped it, afterwards."""
    run_dir, port = replica_alias
    settings.DATABASE_REPLICAS = [ALIAS]
    settings.DATABASE_ROUTERS = ["contextstore.db_router.ReplicaRouter"]
    settings.REPLICA_MAX_LAG = 300
    settings.REPLICA_CHECK_SECONDS = 0  # asked on every request unless a test says otherwise
    db_router.forget_states()
    cache.clear()
    try:
        yield run_dir
    finally:
        if not os.path.exists(os.path.join(run_dir, "data", "postmaster.pid")):
            _script("start", run_dir, str(port))
            connections[ALIAS].close()
        on_replica("SELECT pg_wal_replay_resume()")
        caught_up()  # the next test must not find a stale replica
        db_router.forget_states()
        cache.clear()


@pytest.fixture
def dashboard(workspace, actor):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("eddie", password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=user, role=Membership.Role.EDITOR)
    client = Client()
    client.force_login(user)
    return client


def api(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def session_list(client: Client) -> str:
    response = client.get("/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_router_keeps_writes_transactions_and_access_on_the_primary(transactional_db, settings,
                                                                        thread):
    """No replica needed: where each kind of query would go while a request reads from one."""
    settings.DATABASE_ROUTERS = ["contextstore.db_router.ReplicaRouter"]
    assert Thread.objects.all().db == DEFAULT_DB_ALIAS  # no request chose a replica: a task, a command
    token = db_router.read_alias.set(ALIAS)
    try:
        assert Thread.objects.all().db == ALIAS
        assert Thread.objects.select_for_update().db == DEFAULT_DB_ALIAS
        assert ApiToken.objects.all().db == Membership.objects.all().db == DEFAULT_DB_ALIAS
        with transaction.atomic():  # a service reading what it is about to change
            assert Thread.objects.all().db == DEFAULT_DB_ALIAS
        assert db_router.ReplicaRouter().db_for_write(Thread, instance=thread) == DEFAULT_DB_ALIAS
    finally:
        db_router.read_alias.reset(token)


@pytest.mark.nodb
@pytest.mark.parametrize(("method", "path", "may_lag"), [
    ("GET", "/", True), ("GET", "/threads/3/export/", True), ("GET", "/admin/contextstore/event/", True),
    ("GET", "/api/v1/sessions/", True), ("POST", "/", False), ("POST", "/api/v1/sessions/", False),
    ("GET", "/api/v1/threads/3/context/", False), ("GET", "/api/v1/threads/3/sync/", False),
    ("GET", "/admin/contextstore/event/7/change/", False), ("GET", "/readyz", False),
    ("GET", "/accounts/login/", False), ("POST", "/threads/3/blocks/", False),
])
def test_which_requests_may_read_a_replica(rf, method, path, may_lag):
    assert db_router.lag_tolerant(rf.generic(method, path)) is may_lag


@pytest.mark.skipif(bool(os.environ.get("DATABASE_REPLICA_URLS")), reason="replicas configured")
def test_without_replica_urls_there_is_no_router(settings):
    assert settings.DATABASE_REPLICAS == [] and settings.DATABASE_ROUTERS == []
    assert "contextstore.db_router.ReplicaMiddleware" in settings.MIDDLEWARE  # a pass-through then


def test_replica_urls_become_mirrors_of_the_primary_with_its_options(monkeypatch):
    import runpy

    monkeypatch.setenv("DATABASE_URL", "postgres://app@primary:5432/cs")
    monkeypatch.setenv("DATABASE_REPLICA_URLS", "postgres://app@r1:5432/cs, postgres://app@r2:6432/cs")
    monkeypatch.setenv("REPLICA_MAX_LAG", "4.5")
    loaded = runpy.run_path(str(Path(__file__).resolve().parent.parent / "project" / "settings.py"))
    databases = loaded["DATABASES"]
    assert loaded["DATABASE_REPLICAS"] == ["replica_1", "replica_2"]
    assert loaded["DATABASE_ROUTERS"] == ["contextstore.db_router.ReplicaRouter"]
    assert [(databases[a]["HOST"], databases[a]["PORT"]) for a in loaded["DATABASE_REPLICAS"]] == [
        ("r1", 5432), ("r2", 6432)]
    for alias in loaded["DATABASE_REPLICAS"]:
        assert databases[alias]["OPTIONS"] == databases["default"]["OPTIONS"]  # statement timeout too
        assert databases[alias]["TEST"] == {"MIRROR": "default"}
    assert loaded["REPLICA_MAX_LAG"] == 4.5


@pytest.mark.postgres
@reads_replica
def test_the_dashboard_list_is_stale_and_says_so_while_replay_is_paused(replicas, dashboard, workspace,
                                                                         actor):
    session_ensure(workspace=workspace, key="before-pause", user_id="u", agent="a", actor=actor)
    pause()
    session_ensure(workspace=workspace, key="while-paused", user_id="u", agent="a", actor=actor)
    behind()
    time.sleep(1.2)  # lag counts from the last transaction replayed: past a second
    page = session_list(dashboard)
    assert "before-pause" in page and "while-paused" not in page
    assert "data-replica-lag" in page and "s ago" in page
    on_replica("SELECT pg_wal_replay_resume()")
    caught_up()
    assert "while-paused" in session_list(dashboard)  # fresh (on a busy primary, maybe a second behind)


@pytest.mark.postgres
@reads_replica
def test_an_agent_reads_its_own_writes_while_the_replica_lags(replicas, token, read_token, thread):
    writer, reader = api(token[1]), api(read_token[1])
    url = f"/api/v1/threads/{thread.pk}/"
    pause()
    for i in range(3):
        appended = writer.post(f"{url}events/", {"events": [{"type": "Message", "role": "user",
                                                             "content": f"turn {i}"}]}, format="json")
        assert appended.status_code == 201
        messages = writer.get(f"{url}context/?format=openai").json()["messages"]
        assert messages[-1]["content"] == f"turn {i}"
        written = writer.put(f"{url}state/", {"state": {"turn": i}}, format="json")
        assert written.status_code == 200
        state = writer.get(f"{url}state/")
        assert state.json()["state"] == {"turn": i} and state["ETag"] == f'"{i + 1}"'
    created = writer.post("/api/v1/sessions/", {"key": "new-one", "user_id": "u", "agent": "a"},
                          format="json")
    assert created.status_code == 201
    behind()
    # The session list may lag: the writer, pinned to the primary, sees its new session; another
    # client of the same workspace that wrote nothing reads the replica, which has not got it.
    assert "new-one" in {s["key"] for s in writer.get("/api/v1/sessions/").json()["results"]}
    assert "new-one" not in {s["key"] for s in reader.get("/api/v1/sessions/").json()["results"]}
    # Thread reads are the primary's for everyone.
    assert reader.get(f"{url}state/").json()["state"] == {"turn": 2}


@pytest.mark.postgres
@reads_replica
def test_a_dashboard_user_who_wrote_reads_the_primary(replicas, dashboard, workspace, actor):
    session = session_ensure(workspace=workspace, key="to-archive", user_id="u", agent="a",
                             actor=actor)[0]
    pause()
    assert dashboard.post(f"/sessions/{session.pk}/archive/").status_code in (200, 302)
    behind()
    assert "to-archive" not in session_list(dashboard)  # archived: the list leaves it out
    other = Client()
    other.force_login(Membership.objects.get(role=Membership.Role.EDITOR).user)  # a new cookie
    assert "to-archive" in session_list(other)  # from the replica: not archived yet there


@pytest.mark.postgres
@reads_replica
def test_a_replica_beyond_the_max_lag_is_skipped(replicas, dashboard, workspace, actor, settings):
    settings.REPLICA_MAX_LAG = 1
    pause()
    session_ensure(workspace=workspace, key="while-paused", user_id="u", agent="a", actor=actor)
    behind()
    time.sleep(1.2)
    page = session_list(dashboard)
    assert "while-paused" in page and "data-replica-lag" not in page
    ready = Client().get("/readyz").json()["checks"]
    assert ready[ALIAS].startswith("lagging") and ready[ALIAS].endswith("(skipped)")


@pytest.mark.postgres
@reads_replica
def test_readyz_reports_each_replica(replicas):
    caught_up()
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"][ALIAS].startswith("ok, ")  # ok, 0.0 s behind (or a little more)


@pytest.mark.postgres
@reads_replica
def test_a_stopped_replica_changes_nothing_for_clients(replicas, dashboard, token, thread, workspace,
                                                       actor, settings):
    """Stopped between two checks: the request that finds it gone runs again on the primary;
    the next ones go there directly; /readyz says so and stays 200."""
    settings.REPLICA_CHECK_SECONDS = 3600
    session_ensure(workspace=workspace, key="first", user_id="u", agent="a", actor=actor)
    caught_up()
    assert "first" in session_list(dashboard)  # from the replica, its state now cached as ok
    assert db_router.replica_state(ALIAS).usable
    _script("stop", replicas)
    session_ensure(workspace=workspace, key="second", user_id="u", agent="a", actor=actor)
    assert "second" in session_list(dashboard)
    assert not db_router.replica_state(ALIAS).up
    assert "second" in session_list(dashboard)
    writer = api(token[1])
    assert writer.post(f"/api/v1/threads/{thread.pk}/events/", {"events": [
        {"type": "Message", "content": "still here"}]}, format="json").status_code == 201
    assert {s["key"] for s in api(token[1]).get("/api/v1/sessions/").json()["results"]} >= {"first", "second"}
    ready = Client().get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"][ALIAS].startswith("down")


@pytest.mark.postgres
@reads_replica
def test_the_dashboard_pages_read_from_the_replica(replicas, dashboard, thread, actor):
    """Each page works on a read-only server (its reads there, any write it makes on the primary)."""
    from django.contrib.auth import get_user_model

    from contextstore.services.events import event_append

    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": f"hello {i}"} for i in range(3)])
    admin = Client()
    admin.force_login(get_user_model().objects.create_superuser("root", password="pw-for-tests-123"))
    caught_up()
    session = thread.session_id
    pages = ["/", "/?q=hello", f"/sessions/{session}/", f"/threads/{thread.pk}/",
             f"/threads/{thread.pk}/context/", f"/threads/{thread.pk}/events/2/",
             f"/threads/{thread.pk}/export/", f"/sessions/{session}/cache/", "/cache/"]
    with CaptureQueriesContext(connections[ALIAS]) as on_the_replica:
        for url in pages:
            response = dashboard.get(url)
            assert response.status_code == 200, (url, response.status_code)
            if response.streaming:  # an export reads as it streams: the replica still
                before = len(on_the_replica)
                b"".join(response.streaming_content)
                assert len(on_the_replica) > before, url
        for url in ("/admin/contextstore/event/", "/admin/contextstore/session/"):
            assert admin.get(url).status_code == 200, url
    assert len(on_the_replica) >= 2 * len(pages)
    assert db_router.replica_state(ALIAS).up


@pytest.mark.postgres
@reads_replica
def test_a_revoked_share_link_stops_opening_at_once_while_the_replica_lags(replicas, workspace, actor):
    from contextstore.models import ShareLink
    from contextstore.services.sharing import share_link_create, share_link_revoke

    session = session_ensure(workspace=workspace, key="shared", user_id="u", agent="a", actor=actor)[0]
    link, raw = share_link_create(session=session, kind="session", actor=actor)
    expiring, raw_expiring = share_link_create(session=session, kind="session", actor=actor)
    assert Client().get(f"/share/{raw}/").status_code == 200
    pause()
    share_link_revoke(link=link, actor=actor)
    ShareLink.objects.filter(pk=expiring.pk).update(expires_at=expiring.created_at)
    behind()
    assert on_replica(f"SELECT revoked_at IS NULL FROM contextstore_sharelink WHERE id = {link.pk}")[0]
    assert Client().get(f"/share/{raw}/").status_code == 410
    assert Client().get(f"/share/{raw_expiring}/").status_code == 410
