"""Runs: one invocation (AgentScope run id, clientai interaction, Nooa method call)."""

from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from contextstore.errors import Conflict
from contextstore.models import Run, Thread
from contextstore.services.common import Actor, audit
from contextstore.services.summaries import run_completed_check

FINISHED = {Run.Status.COMPLETED, Run.Status.FAILED, Run.Status.INTERRUPTED}


def run_start(
    *, thread: Thread, run_id: str, actor: Actor, input_data: Any = None, iteration: int = 0
) -> tuple[Run, bool]:
    try:
        with transaction.atomic():
            run, created = Run.objects.get_or_create(
                thread=thread, run_id=run_id, defaults={"input": input_data, "iteration": iteration}
            )
            if created:
                audit(actor=actor, action="run.start", target=run, workspace=thread.workspace,
                      run_id=run_id)
    except IntegrityError:
        run, created = Run.objects.get(thread=thread, run_id=run_id), False
    return run, created


def run_finish(*, run: Run, status: str, actor: Actor, error: str = "",
               started_at: datetime | None = None, ended_at: datetime | None = None) -> Run:
    """Mark a run completed, failed or interrupted. Finishing twice with the same status is a
    no-op (retries are safe); a different final status is a conflict. `started_at` and
    `ended_at` are the run's own times when the caller knows them (OTLP: its span's), else it
    ends now."""
    with transaction.atomic():
        run = Run.objects.select_for_update().select_related("thread").get(pk=run.pk)
        if run.status == status:
            return run
        if run.status in FINISHED:
            raise Conflict(f"This run already ended as {run.status}.", code="run_finished",
                           details={"status": run.status})
        run.status = status
        run.error = error or ""
        run.ended_at = ended_at or timezone.now()
        if started_at is not None:
            run.started_at = started_at
        run.save(update_fields=["status", "error", "ended_at", "started_at"])
        audit(actor=actor, action=f"run.{status}", target=run, workspace=run.thread.workspace,
              run_id=run.run_id)
    if status == Run.Status.COMPLETED:
        run_completed_check(run=run)
    return run
