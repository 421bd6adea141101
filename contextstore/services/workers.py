"""The Celery workers' heartbeats (models.WorkerHeartbeat), written by the workers themselves."""

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from contextstore.models import WorkerHeartbeat

# A worker gone for this long (a container replaced under another name) is forgotten.
FORGET_AFTER = timedelta(days=1)


def worker_heartbeat(*, hostname: str, pid: int) -> None:
    now = timezone.now()
    with transaction.atomic():
        WorkerHeartbeat.objects.update_or_create(hostname=hostname,
                                                 defaults={"pid": pid, "seen_at": now})
        WorkerHeartbeat.objects.filter(seen_at__lt=now - FORGET_AFTER).delete()
