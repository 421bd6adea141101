"""Fill the `demo` workspace with realistic agent history. Safe to run again: it adds nothing twice."""

import random
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.utils import timezone

from contextstore.demo_turns import TASKS, run_events
from contextstore.models import Membership, Session
from contextstore.services.blocks import block_upsert
from contextstore.services.clientai import thread_set_input, thread_set_step_result
from contextstore.services.collapses import collapse_create
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.memories import memory_remember, provider_state_put
from contextstore.services.runs import run_finish
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.state import state_write
from contextstore.services.threads import thread_fork
from contextstore.services.workspaces import membership_set, workspace_ensure

AGENTS = ["support-bot", "code-reviewer", "research-assistant", "travel-planner"]
USERS = ["alice", "bob", "chen", "dara", ""]


class Command(BaseCommand):
    help = "Fill the workspace `demo` with realistic sessions, threads and events (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--if-empty", action="store_true",
                            help="do nothing when the demo workspace already has sessions")
        parser.add_argument("--events", type=int, default=4000, help="roughly how many events")

    def handle(self, *args, if_empty: bool, events: int, **options):
        workspace, _ = workspace_ensure(slug="demo", name="Demo")
        if if_empty and Session.objects.filter(workspace=workspace).exists():
            self.stdout.write("demo data already loaded")
            return
        actor = Actor.system("seed_demo")
        rng = random.Random(7)
        per_session = max(events // 12, 20)
        for n in range(12):
            agent = AGENTS[n % len(AGENTS)]
            user_id = USERS[n % len(USERS)]
            session, _ = session_ensure(
                workspace=workspace, key=f"demo-{n + 1:02d}", user_id=user_id, agent=agent,
                title=TASKS[n % len(TASKS)][:80], metadata={"channel": rng.choice(["web", "slack", "api"])},
                actor=actor,
            )
            thread, _ = thread_ensure(session=session, actor=actor)
            if thread.event_count:
                continue
            self._fill(thread, rng, per_session, actor, n)
        self._people(workspace, actor)
        sessions = Session.objects.filter(workspace=workspace).count()
        self.stdout.write(self.style.SUCCESS(f"demo workspace ready ({sessions} sessions)"))

    def _fill(self, thread, rng: random.Random, count: int, actor: Actor, n: int) -> None:
        task = TASKS[n % len(TASKS)]
        start = timezone.now() - timedelta(hours=12 - n)
        batch = run_events(rng, [{"type": "Task", "role": "user", "content": task,
                                  "occurred_at": start.isoformat()}], count)
        for i in range(0, len(batch), 500):
            event_append(thread=thread, events=batch[i:i + 500], actor=actor)
        for run in thread.runs.order_by("pk")[: max(thread.runs.count() - 1, 0)]:
            run_finish(run=run, status="failed" if rng.random() < 0.1 else "completed", actor=actor,
                       error="tool budget exhausted")

        block_upsert(thread=thread, name="persona", placement="prefix", order=0, actor=actor,
                     value="You are a careful assistant. Cite the tool output you rely on.")
        block_upsert(thread=thread, name="plan", placement="prefix", order=1, actor=actor,
                     value="1. Reproduce\n2. Find the cause\n3. Propose a fix\n4. Verify")
        block_upsert(thread=thread, name="progress", placement="suffix", actor=actor,
                     expr="Step {{ state.plan.step }} of {{ state.plan.total }}; iteration {{ iteration }}")
        block_upsert(thread=thread, name="scratch", placement="suffix", value=None, actor=actor)
        for step in range(1, 4):
            state_write(thread=thread, actor=actor, reason=f"advance to step {step}",
                        state={"plan": {"step": step, "total": 4}, "tasks": [
                            {"id": 1, "title": "reproduce", "done": step > 1},
                            {"id": 2, "title": "fix", "done": step > 2}],
                            "permissions": {"allow": ["read_file", "run_tests"]}})
        thread_set_input(thread=thread, input_data=task, actor=actor)
        thread_set_step_result(thread=thread, step="analyze", result="The cause is understood.",
                               actor=actor)
        provider_state_put(thread=thread, provider="UserInfoMemory", actor=actor,
                           state={"name": thread.session.user_id.title() or None, "age": None})
        if thread.session.user_id:
            memory_remember(workspace=thread.workspace, user_id=thread.session.user_id, key="preferences",
                            content=f"{thread.session.user_id.title()} prefers short answers with links.",
                            actor=actor)
        if n == 0:
            collapse_create(thread=thread, start_position=2, end_position=60, actor=actor, source="person",
                            widen=True,
                            summary_text="Reproduced the export failure: replica lag caused stale "
                                         "reads; retries had no backoff.")
            fork = thread_fork(thread=thread, name="what-if-primary", start_position=1, end_position=119,
                               actor=actor, system_prompt="Explore moving the job to the primary.")
            event_append(thread=fork, actor=actor, events=[
                {"type": "Message", "role": "user", "content": "What if we read from the primary?"}])

    def _people(self, workspace, actor: Actor) -> None:
        """A login for the local dashboard: only when DEBUG (never in production)."""
        if not settings.DEBUG:
            return
        User = get_user_model()
        user, created = User.objects.get_or_create(username="demo", defaults={"is_staff": True,
                                                                              "is_superuser": True})
        if created:
            user.set_password("demo")
            user.save()
            self.stdout.write("dashboard login: demo / demo (DEBUG only)")
        if not Membership.objects.filter(workspace=workspace, user=user).exists():
            membership_set(workspace=workspace, user=user, role="admin", actor=actor)
