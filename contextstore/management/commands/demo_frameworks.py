"""Run one small offline agent per framework against a running contextstore server.

    python manage.py demo_frameworks --url http://127.0.0.1:8000 [--token cs_...]

Without --token a write token is created for --workspace (default: demo). Each framework's
agent gets its own session (demo-<framework>-<time>), so they show side by side in the dashboard.
"""

import logging

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from contextstore.services.common import Actor
from contextstore.services.workspaces import api_token_create, workspace_ensure


class Command(BaseCommand):
    help = "Run one offline agent per supported framework against a running server."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the running server")
        parser.add_argument("--token", default="", help="an API token (else one is created)")
        parser.add_argument("--workspace", default="demo", help="where a new token is created")
        parser.add_argument("--only", action="append", default=[],
                            help="run only this framework (repeatable)")

    def handle(self, *args, url: str, token: str, workspace: str, only: list[str], **options):
        from contextstore.adapters.demo import prepare_environment

        prepare_environment()  # before any framework is imported
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request is noise here
        from contextstore.adapters.demo import DEMOS
        from contextstore.client import ContextStore, ContextStoreError

        unknown = set(only) - set(DEMOS)
        if unknown:
            raise CommandError(f"Unknown framework(s): {', '.join(sorted(unknown))}; "
                               f"choose from {', '.join(DEMOS)}.")
        if not token:
            ws, _ = workspace_ensure(slug=workspace, name=workspace.title())
            created, token = api_token_create(workspace=ws, name="demo_frameworks",
                                              actor=Actor.system("demo_frameworks"))
            self.stderr.write(f"created token {created.prefix}… in workspace {ws.slug}")
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        failed = []
        with ContextStore(url, token) as cs:
            for name, run in DEMOS.items():
                if only and name not in only:
                    continue
                key = f"demo-{name}-{stamp}"
                try:
                    outcome = run(cs, key)
                except ContextStoreError as exc:
                    failed.append(name)
                    self.stderr.write(f"{name}: contextstore answered {exc.status}: {exc}")
                    continue
                self.stdout.write(f"{name}: session {key}: {outcome}")
        if failed:
            raise CommandError(f"{len(failed)} demo(s) failed: {', '.join(failed)}")
