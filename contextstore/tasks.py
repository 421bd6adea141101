"""Thin Celery tasks: take ids, call one service, retry on database trouble.

Tasks are acks_late (settings): a worker that dies mid-task leaves the message to be delivered
again, and the services make a second run harmless.
"""

import logging
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from contextstore.embeddings import EmbedderUnavailable
from contextstore.services import (
    alerts,
    cache_verdicts,
    commits,
    evaluators,
    experiments,
    operations,
    replays,
    retention,
    search,
    store,
    summaries,
)
from contextstore.services.otlp import pending

logger = logging.getLogger(__name__)
SEARCH_INDEX_SECONDS = 60  # one run's share of a worker; beat queues the next meanwhile
# A job's task, retried while the database is unreachable (backing off up to five minutes).
JOB_RETRIES: dict[str, Any] = {"autoretry_for": (OperationalError, InterfaceError), "retry_backoff": True,
               "retry_backoff_max": 300, "max_retries": 8}


@shared_task(**JOB_RETRIES)
def summarize_job(job_id: str) -> dict | None:
    job = summaries.summary_job_run(job_id=job_id)
    return None if job is None else {"status": job.status, "result": job.result}


@shared_task(**JOB_RETRIES)
def operation_job(job_id: str) -> dict | None:
    """A long clear, un-clear or collapse, in batches (services/operations.py)."""
    job = operations.operation_job_run(job_id=job_id)
    return None if job is None else {"status": job.status, "progress": job.progress}


@shared_task(**JOB_RETRIES)
def replay_call(replay_id: int) -> str | None:
    """A dashboard replay: the recorded call sent again to the playground (services/replays.py)."""
    replay = replays.replay_run(replay_id=replay_id)
    return None if replay is None else replay.status


@shared_task(**JOB_RETRIES)
def run_experiment(experiment_id: int) -> str | None:
    """A dataset sent through an experiment's variant, item by item (services/experiments.py)."""
    experiment = experiments.experiment_run(experiment_id=experiment_id)
    return None if experiment is None else experiment.status


@shared_task
def recover_summaries() -> dict[str, int]:
    return summaries.summary_jobs_recover(stale_after=settings.SUMMARIZER_STALE_AFTER)


@shared_task
def expire_jobs() -> int:
    return summaries.summary_jobs_expire(older_than_days=settings.SUMMARIZER_JOB_RETENTION_DAYS)


@shared_task(
    autoretry_for=(OperationalError, InterfaceError), retry_backoff=True, retry_backoff_max=60,
    max_retries=8,
)
def derive_otlp() -> dict[str, int]:
    """Queued after each OTLP export and run by beat: derives whatever the outbox names."""
    return pending.pending_traces_derive()


@shared_task
def apply_retention() -> dict[str, int]:
    return retention.retention_run()


@shared_task
def prune_commit_records() -> dict[str, int]:  # the replay store of framework saves
    return commits.commit_records_prune()


@shared_task(expires=60)
def index_search() -> dict[str, int]:
    """Run by beat: indexes the queued events for a while; the next run goes on."""
    return search.search_index_pending(seconds=SEARCH_INDEX_SECONDS)


@shared_task(autoretry_for=(EmbedderUnavailable, OperationalError, InterfaceError), retry_backoff=True,
             retry_backoff_max=300, max_retries=8)
def embed_store_items(item_pks: list[int]) -> int:  # the deployment's embedder (embeddings.py)
    return store.store_items_embed(item_pks=item_pks)


@shared_task
def expire_store_items() -> int:  # items past their TTL become deleted versions
    return store.store_expire()


@shared_task(expires=120)
def compare_cache_pending() -> dict[str, int]:
    """Run by beat: compares, in a bounded batch, model calls whose prompt-cache verdict is not
    stored yet (services/cache_verdicts.py); the next run goes on."""
    return cache_verdicts.cache_verdicts_compute()


@shared_task(expires=120)
def evaluate_alerts() -> dict[str, int]:
    """Run by beat: checks the alert rules due (services/alerts.py); a changed state records an
    event and queues its delivery; a delivery whose message was lost is queued again."""
    return {**alerts.alerts_evaluate(), "resent": alerts.alert_deliveries_recover()}


@shared_task(bind=True, max_retries=None)
def deliver_alert(self: Any, event_id: int) -> None:
    """Posts an alert event to its rule's webhook; a failed attempt is tried again
    ALERT_WEBHOOK_RETRIES times, ALERT_WEBHOOK_BACKOFF * 2**n seconds apart, then the event is
    marked failed. Every attempt is recorded on the event."""
    last = self.request.retries >= settings.ALERT_WEBHOOK_RETRIES
    if not alerts.alert_event_deliver(event_id=event_id, last=last):
        raise self.retry(countdown=settings.ALERT_WEBHOOK_BACKOFF * 2 ** self.request.retries)


@shared_task(expires=120)
def evaluate_online() -> dict[str, int]:
    """Run by beat: the evaluators' online run picks what arrived since its watermarks and
    sends each evaluation to a worker (services/evaluators.py)."""
    return evaluators.evaluations_schedule()


@shared_task(**JOB_RETRIES)
def run_evaluation(evaluation_id: int) -> str | None:
    """One evaluation of an online run: a judge's call or a rule, and the score it gives."""
    evaluation = evaluators.evaluation_run(evaluation_id=evaluation_id)
    return None if evaluation is None else evaluation.status
