"""A broker that accepts connections and never answers must not hold up an append: the job row
(the outbox) is written with the events, the publish happens after commit off the request's
thread with bounded timeouts, and beat's recovery sends the job once a broker answers again."""

import threading
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from contextstore.models import Job
from contextstore.outbox import publish_after_commit
from contextstore.services import summaries
from tests.api.conftest import client_for
from tests.conftest import messages
from tests.frozen import frozen_server
from tests.worker.conftest import REDIS_URL, _redis_up, _restore_broker, _use_broker

pytestmark = pytest.mark.worker


@pytest.fixture
def frozen_broker_url() -> Iterator[str]:
    with frozen_server() as port:
        yield f"redis://127.0.0.1:{port}/8"


def _options() -> dict:
    # What settings give a redis:// broker (asserted in tests/test_deploy.py), shortened.
    return {"socket_connect_timeout": 1, "socket_timeout": 1, "retry_on_timeout": False}


def _publisher_idle(timeout: float = 30) -> None:
    """Wait until the background publisher has handled everything queued before this call."""
    done = threading.Event()
    publish_after_commit(lambda _: done.set(), None)
    assert done.wait(timeout), "the background publisher is stuck"


def test_appends_answer_in_normal_time_with_a_frozen_broker_and_recovery_sends_later(
        transactional_db, token, thread, actor, frozen_broker_url, settings):
    if not _redis_up(REDIS_URL):
        pytest.skip(f"no Redis at {REDIS_URL}")
    settings.CELERY_TASK_ALWAYS_EAGER = False
    api_client = client_for(token[1])
    summaries.summarizer_configure(thread=thread, config={"token_budget": {"max_tokens": 500}},
                                   actor=actor)
    queue = f"contextstore-test-{uuid.uuid4().hex[:8]}"
    saved = _use_broker(frozen_broker_url, queue, _options())
    try:
        url = f"/api/v1/threads/{thread.pk}/events/"
        durations = []
        for i in range(3):
            started = time.monotonic()
            response = api_client.post(url, {"events": messages(20, start=i * 20)}, format="json")
            durations.append(time.monotonic() - started)
            assert response.status_code == 201, response.json()
        job = Job.objects.get(thread=thread)  # one pending job per thread, written with the events
        assert job.status == Job.Status.QUEUED
        assert max(durations) < 0.9, durations  # the broker's 1 s timeout was never waited for
        started = time.monotonic()
        _publisher_idle()
        assert time.monotonic() - started < 10  # the background send gave up in bounded time
    finally:
        _restore_broker(saved)

    real_url = REDIS_URL.rsplit("/", 1)[0] + "/8"
    saved = _use_broker(real_url, queue, _options())
    client = redis.Redis.from_url(real_url)
    try:
        assert client.llen(queue) == 0
        result = summaries.summary_jobs_recover(stale_after=0)
        assert result["resent"] == 1
        assert client.llen(queue) == 1
        assert str(job.pk) in client.lindex(queue, 0).decode()
    finally:
        _restore_broker(saved)
        for key in client.scan_iter(match=f"*{queue}*"):
            client.delete(key)
