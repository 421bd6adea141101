"""Two web nodes, one truth: two gunicorn servers on two ports over one PostgreSQL database and
one Redis (CACHE_URL for the rate limits, CELERY_BROKER_URL for the jobs), with clients going
to either. They behave as one server:

- the reliability workload (concurrent appends with client ids, some retried on the other node;
  state compare-and-set loops; a collapse racing the appends) ends with exact counts, and a
  live tail reading from both nodes meanwhile saw every event once, in seq order;
- a revoked token is refused by both nodes within TOKEN_CACHE_SECONDS;
- a token's rate limit is counted once across both nodes;
- a summary job asked for on one node is the same job, with the same status, on the other, and
  is sent to the broker once.

The nodes serve pytest-django's test database (transactional_db: what the test writes is
committed, so they see it) and use Redis database 9 of CONTEXTSTORE_TEST_REDIS_URL's server,
which this test flushes (no other test uses it).
"""

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from django.db import connection

from contextstore.models import ApiToken, Job, Workspace
from contextstore.services.common import Actor
from contextstore.services.workspaces import api_token_create, api_token_revoke, workspace_ensure
from tests.test_deploy import production_env
from tests.test_production_layout import Processes, free_port, wait_for

redis = pytest.importorskip("redis")

REDIS_URL = urlunsplit(urlsplit(os.environ.get(
    "CONTEXTSTORE_TEST_REDIS_URL", "redis://127.0.0.1:6379/5"))._replace(path="/9"))
QUEUE = "contextstore-two-nodes"
RATE = 100  # per token per hour: above what one workload client sends, small enough to exhaust
TOKEN_CACHE_SECONDS = 1
WORKERS, ROUNDS, CAS_WRITES = 4, 8, 3

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(180)]


def _redis() -> "redis.Redis":
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1, socket_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable at {REDIS_URL}: {exc}")
    return client


class Nodes:
    def __init__(self, bases: list[str], processes: Processes, broker: "redis.Redis") -> None:
        self.bases, self.processes, self.broker = bases, processes, broker

    def clients(self, raw_token: str) -> list[httpx.Client]:
        """One client per node, the token's; callers alternate between them."""
        return [httpx.Client(base_url=base, timeout=30, headers={
            "X-Forwarded-Proto": "https", "Authorization": f"Bearer {raw_token}"})
            for base in self.bases]


def _token(workspace: Workspace, name: str) -> str:
    return api_token_create(workspace=workspace, name=name, actor=Actor.system("test"))[1]


@pytest.fixture
def nodes(transactional_db, tmp_path) -> Iterator[Nodes]:
    if connection.vendor != "postgresql":
        pytest.skip("several nodes share one database server: PostgreSQL (SQLite is one process's)")
    broker = _redis()
    broker.flushdb()
    db = connection.settings_dict
    database_url = (f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST'] or '127.0.0.1'}"
                    f":{db['PORT'] or 5432}/{db['NAME']}")
    ports = [free_port(), free_port()]
    processes = Processes(tmp_path, {})
    try:
        for n, port in enumerate(ports):
            processes.env = production_env(tmp_path) | {
                "DATABASE_URL": database_url, "CACHE_URL": REDIS_URL,
                "CELERY_BROKER_URL": REDIS_URL, "CELERY_QUEUE": QUEUE,
                "API_THROTTLE_RATE": f"{RATE}/hour",
                "TOKEN_CACHE_SECONDS": str(TOKEN_CACHE_SECONDS),
                "ALLOWED_HOSTS": "127.0.0.1", "GUNICORN_BIND": f"127.0.0.1:{port}",
                "GUNICORN_WORKERS": "1", "GUNICORN_THREADS": "4", "LOG_FORMAT": "text",
            }
            processes.start(f"node{n}", sys.executable, "-m", "gunicorn", "--config",
                            "project/gunicorn.py", "project.wsgi")
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        for base in bases:
            wait_for(f"{base}/healthz", lambda b=base: httpx.get(f"{b}/healthz").status_code == 200,
                     60, processes)
        yield Nodes(bases, processes, broker)
        for name in processes.running:
            assert "Internal Server Error" not in processes.log(name), processes.log(name)[-3000:]
    finally:
        processes.kill_all()
        broker.flushdb()


def _all_events(client: httpx.Client, thread_id: int) -> list[dict]:
    events, url = [], f"/api/v1/threads/{thread_id}/events/?status=all&page_size=500"
    while url:
        page = client.get(url)
        assert page.status_code == 200, page.text
        events += page.json()["results"]
        url = page.json()["next"]
    return events


def _workload(nodes: Nodes, workspace: Workspace) -> None:
    admin = nodes.clients(_token(workspace, "admin"))
    made = admin[0].post("/api/v1/threads/ensure/", json={"session_key": "two-nodes"})
    assert made.status_code in (200, 201), made.text
    thread_id = made.json()["id"]
    events_url, state_url = (f"/api/v1/threads/{thread_id}/events/",
                             f"/api/v1/threads/{thread_id}/state/")
    acknowledged: set[str] = set()
    cas_writes: list[int] = []
    errors: list[str] = []
    lock = threading.Lock()

    def writer(w: int, clients: list[httpx.Client]) -> None:
        for r in range(ROUNDS):
            batch = [{"type": "Message", "role": "user", "content": f"w{w} r{r} e{k}",
                      "client_id": f"w{w}-r{r}-e{k}"} for k in range(2)]
            tries = [clients[(w + r) % 2]]
            if r % 3 == 0:  # the answer was "lost": the same batch again, on the other node
                tries.append(clients[(w + r + 1) % 2])
            for client in tries:
                answer = client.post(events_url, json={"events": batch})
                if answer.status_code not in (200, 201):
                    errors.append(f"append {answer.status_code}: {answer.text}")
                    return
                with lock:
                    acknowledged.update(e["client_id"] for e in batch)
            # A compare-and-set increment: read on one node, write on the other, retry on 412.
            if r < CAS_WRITES:
                for _attempt in range(25):
                    read = clients[r % 2].get(state_url)
                    counter = read.json()["state"].get("counter", 0)
                    write = clients[(r + 1) % 2].patch(
                        state_url, json={"state": {"counter": counter + 1}},
                        headers={"If-Match": read.headers["ETag"]})
                    if write.status_code == 200:
                        with lock:
                            cas_writes.append(counter + 1)
                        break
                    if write.status_code != 412:
                        errors.append(f"state {write.status_code}: {write.text}")
                        return
                else:
                    errors.append("a compare-and-set never won in 25 tries")

    collapsed: list[dict] = []

    def collapser(clients: list[httpx.Client]) -> None:
        deadline = time.monotonic() + 30
        while len(acknowledged) < 6 and time.monotonic() < deadline:
            time.sleep(0.01)
        for attempt in range(10):  # a conflict with an append in flight is asked again
            answer = clients[attempt % 2].post(f"/api/v1/threads/{thread_id}/collapse/", json={
                "start_position": 1, "end_position": 4, "summary_text": "the first four"})
            if answer.status_code == 201:
                collapsed.append(answer.json())
                return
            if answer.status_code != 409:
                errors.append(f"collapse {answer.status_code}: {answer.text}")
                return
        errors.append("the collapse never went through")

    tailed: list[int] = []
    writing = threading.Event()

    def tail(clients: list[httpx.Client]) -> None:
        # A live tail (what the dashboard polls): what came after the last seq seen, from
        # either node. It must never skip an event that commits later with a lower seq.
        n = 0
        while True:
            done = not writing.is_set()
            n += 1
            page = clients[n % 2].get(f"{events_url}?status=all&page_size=500&after_seq="
                                      f"{tailed[-1] if tailed else 0}")
            if page.status_code != 200:
                errors.append(f"tail {page.status_code}: {page.text}")
                return
            tailed.extend(e["seq"] for e in page.json()["results"])
            if done and not page.json()["results"]:
                return
            time.sleep(0.02)

    threads = [threading.Thread(target=writer, args=(w, nodes.clients(_token(workspace, f"w{w}"))))
               for w in range(WORKERS)]
    threads.append(threading.Thread(target=collapser, args=(nodes.clients(_token(workspace, "c")),)))
    tailer = threading.Thread(target=tail, args=(nodes.clients(_token(workspace, "tail")),))
    writing.set()
    tailer.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    writing.clear()
    tailer.join(60)
    assert not errors, errors

    # Exact counts, read through both nodes.
    events = _all_events(admin[1], thread_id)
    assert _all_events(admin[0], thread_id) == events
    sent = [e["client_id"] for e in events if e["client_id"]]
    assert len(sent) == len(set(sent)), "a retried batch was stored twice"
    assert set(sent) == acknowledged and len(sent) == WORKERS * ROUNDS * 2
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert tailed == [e["seq"] for e in events], "the tail skipped or repeated an event"
    assert len(collapsed) == 1
    summaries = [e for e in events if e["type"] == "Summary"]
    assert len(summaries) == 1 and len(events) == len(sent) + 1
    inactive = [e for e in events if e["status"] != "active"]
    assert len(inactive) == collapsed[0]["event_count"] == 4
    for admin_client in admin:
        thread = admin_client.get(f"/api/v1/threads/{thread_id}/").json()
        assert thread["event_count"] == thread["last_seq"] == len(events)
        assert thread["active_event_count"] == len(events) - len(inactive)
        state = admin_client.get(state_url).json()
        assert sorted(cas_writes) == list(range(1, WORKERS * CAS_WRITES + 1))
        assert state["state"]["counter"] == len(cas_writes) == state["revision"]


def _revocation(nodes: Nodes, workspace: Workspace) -> float:
    raw = _token(workspace, "revoked")
    clients = nodes.clients(raw)
    assert [c.get("/api/v1/sessions/").status_code for c in clients] == [200, 200]  # now cached
    api_token_revoke(token=ApiToken.objects.get(prefix=raw[:12]), actor=Actor.system("test"))
    revoked = time.monotonic()
    refused = [False, False]
    while not all(refused) and time.monotonic() - revoked < TOKEN_CACHE_SECONDS + 2:
        for n, client in enumerate(clients):
            if not refused[n]:
                refused[n] = client.get("/api/v1/sessions/").status_code == 401
        time.sleep(0.05)
    waited = time.monotonic() - revoked
    assert all(refused), f"a node still accepted the revoked token after {waited:.1f}s: {refused}"
    assert [c.get("/api/v1/sessions/").status_code for c in clients] == [401, 401]
    return waited


def _rate_limit(nodes: Nodes, workspace: Workspace) -> None:
    into_hour = time.time() % 3600
    if into_hour > 3600 - 20:  # the fixed window would reset in the middle of the count
        time.sleep(3600 - into_hour + 0.5)
    clients = nodes.clients(_token(workspace, "limited"))
    codes = [clients[i % 2].get("/api/v1/sessions/").status_code for i in range(RATE)]
    assert codes == [200] * RATE
    for client in clients:
        refused = client.get("/api/v1/sessions/")
        assert refused.status_code == 429, refused.text
        assert int(refused.headers["Retry-After"]) >= 1
    other = nodes.clients(_token(workspace, "other"))
    assert [c.get("/api/v1/sessions/").status_code for c in other] == [200, 200]  # per token


def _job(nodes: Nodes, workspace: Workspace) -> None:
    a, b = nodes.clients(_token(workspace, "jobs"))
    thread_id = a.post("/api/v1/threads/ensure/", json={"session_key": "jobs"}).json()["id"]
    assert a.post(f"/api/v1/threads/{thread_id}/events/", json={"events": [
        {"type": "Message", "role": "user", "content": f"m{i}"} for i in range(5)]}).status_code == 201
    ask = {"start_position": 1, "end_position": 3, "summarize": True}
    first = a.post(f"/api/v1/threads/{thread_id}/collapse/", json=ask)
    again = b.post(f"/api/v1/threads/{thread_id}/collapse/", json=ask)
    assert first.status_code == again.status_code == 202, (first.text, again.text)
    job_id = first.json()["job_id"]
    assert again.json()["job_id"] == job_id  # one pending job for one range, whichever node
    seen = [client.get(f"/api/v1/jobs/{job_id}/") for client in (a, b)]
    assert [r.status_code for r in seen] == [200, 200]
    assert seen[0].json() == seen[1].json() and seen[0].json()["status"] == "queued"
    assert Job.objects.filter(thread_id=thread_id).count() == 1

    def sent() -> list[bytes]:
        return [m for m in nodes.broker.lrange(QUEUE, 0, -1) if job_id.encode() in m]

    wait_for("the job on the broker", sent, 10, nodes.processes)
    time.sleep(1)  # a second send (from the other node's outbox) would land by now
    messages = sent()
    assert len(messages) == 1, messages
    assert json.loads(messages[0])["headers"]["task"] == "contextstore.tasks.summarize_job"


def test_two_nodes_behave_as_one(nodes):
    workspace, _ = workspace_ensure(slug="two-nodes")
    started = time.monotonic()
    _workload(nodes, workspace)
    workload = time.monotonic() - started
    waited = _revocation(nodes, workspace)
    _rate_limit(nodes, workspace)
    _job(nodes, workspace)
    print(f"workload {workload:.1f}s; revocation seen by both nodes {waited:.2f}s after it "
          f"(TOKEN_CACHE_SECONDS={TOKEN_CACHE_SECONDS})")
