"""How long does a worker take to bring a long thread under its token budget?

For each size, fills a scratch thread with the demo's realistic turns (demo_turns.py), then sets a
token-budget
summarizer and runs the summarize task in this process (Celery's eager mode: the same task code
a worker runs, minus the broker hop) until the thread fits. Prints the time, the jobs and
collapses it took, and the throughput in events/s. The scratch workspace is deleted afterwards.
"""

import random
import time
import uuid

from django.core.management.base import OutputWrapper

from contextstore.demo_turns import TASKS, turn_events
from contextstore.models import Collapse, Job, Thread, Workspace
from contextstore.selectors import rendering
from contextstore.services import summaries
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.workspaces import workspace_ensure
from project.celery import app


class SummarizeBench:
    """bench_summarize's measurements, written to `stdout` (the command's)."""

    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, events: list[int], budget: int, preserve_recent: int, keep: bool) -> None:
        actor = Actor.system("bench_summarize")
        eager = app.conf.task_always_eager
        app.conf.task_always_eager = True
        try:
            for count in events:
                workspace = workspace_ensure(slug=f"bench-sum-{uuid.uuid4().hex[:8]}",
                                             name="bench_summarize (scratch)")[0]
                try:
                    self._one(workspace, count, budget, preserve_recent, actor)
                finally:
                    if not keep:
                        Collapse.objects.filter(thread__workspace=workspace).delete()
                        Workspace.objects.filter(pk=workspace.pk).delete()
        finally:
            app.conf.task_always_eager = eager

    def _one(self, workspace: Workspace, count: int, budget: int, preserve_recent: int,
             actor: Actor) -> None:
        session = session_ensure(workspace=workspace, key="bench", agent="bench", actor=actor)[0]
        thread = thread_ensure(session=session, actor=actor)[0]
        self.stdout.write(f"{count} events: filling…")
        started = time.perf_counter()
        self._fill(thread, count, actor)
        fill_s = time.perf_counter() - started
        thread = Thread.objects.get(pk=thread.pk)
        before = thread.active_tokens

        started = time.perf_counter()
        # Setting the summarizer queues the first job; each job queues the next while the
        # thread is still over budget (eager mode runs them right here, in order).
        summaries.summarizer_configure(
            thread=thread, actor=actor,
            config={"token_budget": {"max_tokens": budget, "preserve_recent": preserve_recent}})
        elapsed = time.perf_counter() - started

        thread = Thread.objects.get(pk=thread.pk)
        jobs = Job.objects.filter(thread=thread)
        failed = jobs.exclude(status=Job.Status.DONE).count()
        collapsed = sum(Collapse.objects.filter(thread=thread).values_list("event_count", flat=True))
        stats = rendering.context_render(thread=thread, max_tokens=budget)["stats"]
        self.stdout.write(
            f"{count} events ({thread.event_count - Collapse.objects.filter(thread=thread).count()} "
            f"stored, filled in {fill_s:.1f}s): {before} visible tokens -> {thread.active_tokens} "
            f"(budget {budget}, fits={stats['fits'] and thread.active_tokens <= budget}) in "
            f"{elapsed:.2f}s; {jobs.count()} jobs ({failed} not done), "
            f"{Collapse.objects.filter(thread=thread).count()} collapses covering {collapsed} "
            f"events; throughput {count / elapsed:,.0f} events/s"
        )

    def _fill(self, thread: Thread, count: int, actor: Actor) -> None:
        rng = random.Random(count)
        batch: list[dict] = [{"type": "Task", "role": "user", "content": rng.choice(TASKS)}]
        written, turn = 0, 0
        while written < count:
            if len(batch) < 900:
                turn += 1
                batch.extend(turn_events(rng, turn, f"run-{turn // 20}", f"call-{turn}"))
                continue
            batch = batch[: count - written]
            event_append(thread=thread, events=batch, actor=actor)
            written += len(batch)
            batch = []
