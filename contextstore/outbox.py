"""The outbox publisher, below the services (they queue jobs; tasks.py only runs them): summary
jobs, and OTLP derivation passes (contextstore.services.otlp.pending) the same way.

The job row is the outbox: it is written in the transaction that needed the summary, and
beat's recover_summaries sends again whatever was not sent. So a request never waits for the
broker: after commit it hands the id to one background thread per process, which publishes
with the broker's bounded connect and socket timeouts (settings). A message still queued
here when the process exits is sent later by that recovery.
"""

import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

_outbox: queue.SimpleQueue[tuple[Callable[[Any], None], Any]] = queue.SimpleQueue()
_sender_pid: int | None = None
_sender_lock = threading.Lock()


def _drain() -> None:
    while True:
        send, job_id = _outbox.get()
        try:
            send(job_id)
        except Exception:  # noqa: BLE001 - never let the sender thread die; beat recovers
            logger.exception("could not send job %s", job_id)


def publish_after_commit(send: Callable[[Any], None], job_id: Any) -> None:
    """Run send(job_id) without blocking the caller: in a background thread of this process,
    or inline when tasks run eagerly (tests), where there is no broker to wait for."""
    global _sender_pid
    if settings.CELERY_TASK_ALWAYS_EAGER:
        send(job_id)
        return
    with _sender_lock:
        if _sender_pid != os.getpid():  # first use in this process (or a forked child)
            threading.Thread(target=_drain, name="outbox-publisher", daemon=True).start()
            _sender_pid = os.getpid()
    _outbox.put((send, job_id))
