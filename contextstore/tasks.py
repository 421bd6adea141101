"""Thin Celery tasks: take ids, call one service, retry on database trouble.

Tasks are acks_late (settings): a worker that dies mid-task leaves the message to be delivered
again, and the services make a second run harmless.
"""

import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from contextstore.services import summaries

logger = logging.getLogger(__name__)


@shared_task(
    autoretry_for=(OperationalError, InterfaceError), retry_backoff=True, retry_backoff_max=300,
    max_retries=8,
)
def summarize_job(job_id: str) -> dict | None:
    job = summaries.summary_job_run(job_id=job_id)
    return None if job is None else {"status": job.status, "result": job.result}


@shared_task
def recover_summaries() -> dict[str, int]:
    return summaries.summary_jobs_recover(stale_after=settings.SUMMARIZER_STALE_AFTER)


@shared_task
def expire_jobs() -> int:
    return summaries.summary_jobs_expire(older_than_days=settings.SUMMARIZER_JOB_RETENTION_DAYS)


# --- publishing -------------------------------------------------------------------------------
# The job row is the outbox: it is written in the transaction that needed the summary, and
# beat's recover_summaries sends again whatever was not sent. So a request never waits for the
# broker: after commit it hands the id to one background thread per process, which publishes
# with the broker's bounded connect and socket timeouts (settings). A message still queued
# here when the process exits is sent later by that recovery.

_outbox: queue.SimpleQueue[tuple[Callable[[Any], None], Any]] = queue.SimpleQueue()
_sender_pid: int | None = None
_sender_lock = threading.Lock()


def _drain() -> None:
    while True:
        send, job_id = _outbox.get()
        try:
            send(job_id)
        except Exception:  # noqa: BLE001 - never let the sender thread die; beat recovers
            logger.exception("could not send summary job %s", job_id)


def publish_after_commit(send: Callable[[Any], None], job_id: Any) -> None:
    """Run send(job_id) without blocking the caller: in a background thread of this process,
    or inline when tasks run eagerly (tests), where there is no broker to wait for."""
    global _sender_pid
    if settings.CELERY_TASK_ALWAYS_EAGER:
        send(job_id)
        return
    with _sender_lock:
        if _sender_pid != os.getpid():  # first use in this process (or a forked child)
            threading.Thread(target=_drain, name="summary-publisher", daemon=True).start()
            _sender_pid = os.getpid()
    _outbox.put((send, job_id))
