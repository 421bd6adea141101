"""The Celery workers' heartbeats, as /readyz reads them."""

from datetime import datetime

from django.db.models import Max

from contextstore.models import WorkerHeartbeat


def worker_last_heartbeat() -> datetime | None:
    """When the most recently seen worker last wrote its heartbeat (None: never)."""
    return WorkerHeartbeat.objects.aggregate(seen=Max("seen_at"))["seen"]
