"""Summarization: per-thread settings (config.py), the requests and triggers that queue jobs
(requests.py), and the worker side that turns a job into exactly one collapse (worker.py).

Nooa's TokenBudgetSummarizer (collapse the oldest events, keeping the last `preserve_recent`,
when the visible history passes `max_tokens`) and MethodSummarizer (collapse a completed run's
events when it has at least `min_events`) run here as Celery jobs instead of in-process.

How the guarantees hold:
- at most one pending job per (thread, kind): `Job.pending_key` is unique while pending, so a
  fast appender queues one job, not one per append;
- the range is decided when the job reads its events; the commit re-reads that range under the
  thread lock and collapses only if it still holds exactly the events that were summarized —
  events appended meanwhile sit after the range and stay active; a range collapsed or cleared
  meanwhile is skipped;
- collapse and job completion commit in one transaction, and `collapse_create(job=...)` returns
  the existing collapse for a job, so a retried or redelivered task produces one collapse.
"""

from contextstore.services.summaries.config import summarizer_config_clean
from contextstore.services.summaries.requests import (
    run_completed_check,
    summarization_check,
    summarize_range_request,
    summarizer_configure,
    summary_job_cancel,
    summary_job_retry,
)
from contextstore.services.summaries.worker import (
    event_item,
    summary_job_run,
    summary_jobs_expire,
    summary_jobs_recover,
)

# What callers use: a short face over the three modules.
__all__ = [
    "event_item", "run_completed_check", "summarization_check", "summarize_range_request",
    "summarizer_config_clean", "summarizer_configure", "summary_job_cancel", "summary_job_retry",
    "summary_job_run", "summary_jobs_expire", "summary_jobs_recover",
]
