"""Background jobs and the workers' heartbeats."""

import uuid

from django.conf import settings
from django.db import models

from contextstore.fields import (
    AgentTextField,
    OrderedJSONField,
)
from contextstore.models.threads import Thread
from contextstore.models.workspaces import Workspace


class Job(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    class Kind(models.TextChoices):
        RANGE = "range"
        TOKEN_BUDGET = "token_budget"
        PER_RUN = "per_run"
        # Long dashboard operations (services/operations.py), run in batches by the worker.
        CLEAR = "clear"
        UNCLEAR = "unclear"
        COLLAPSE = "collapse"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="jobs")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    params = OrderedJSONField(default=dict)
    result = OrderedJSONField(null=True, blank=True)
    error = AgentTextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    # Set while a job is pending so a thread has at most one pending job of a kind.
    pending_key = models.CharField(max_length=100, null=True, blank=True, unique=True)
    # What a running job's worker is at (stage, the range it decided, how many events), for
    # the page; None until a worker takes it.
    progress = OrderedJSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "finished_at"], name="job_status")]

    def __str__(self) -> str:
        return f"{self.kind} job {self.id} ({self.status})"

    def pending_seconds(self, now) -> int | None:
        """Seconds this job has been queued (since created) or running (since taken); None when
        it is finished."""
        if self.status == self.Status.QUEUED:
            return int((now - self.created_at).total_seconds())
        if self.status == self.Status.RUNNING and self.started_at:
            return int((now - self.started_at).total_seconds())
        return None

    def is_timed_out(self, now) -> bool:
        """Queued or running for longer than SUMMARIZER_JOB_TIMEOUT: the page says so and
        offers Cancel and Retry (a worker may still finish it until it is cancelled)."""
        seconds = self.pending_seconds(now)
        return seconds is not None and seconds > settings.SUMMARIZER_JOB_TIMEOUT


class WorkerHeartbeat(models.Model):
    """The last sign of life of each Celery worker, by its node name: written every
    WORKER_HEARTBEAT_EVERY seconds from the worker's main loop (project/celery.py); /readyz
    reads the newest one when WORKER_HEARTBEAT_MAX_AGE is set (views/health.py)."""

    hostname = models.CharField(max_length=255, primary_key=True)
    pid = models.IntegerField()
    seen_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.hostname} (pid {self.pid}) at {self.seen_at:%Y-%m-%d %H:%M:%S}"
