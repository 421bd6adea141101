"""Run one small offline agent per framework against a running contextstore server.

    python manage.py demo_frameworks --url http://127.0.0.1:8000 [--token cs_...]

Without --token a write token is created for --workspace (default: demo). Each framework's
agent gets its own session (demo-<framework>-<time>), so they show side by side in the dashboard.

LangGraph, ADK and the OpenAI Agents SDK live in their own virtualenvs (``make
framework-venvs``); their demos (contextstore_client/adapters/framework_demos.py) run there, one
process each, for every such venv that exists.
"""

import logging
import os
import subprocess
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from contextstore.services.common import Actor
from contextstore.services.workspaces import api_token_create, workspace_ensure

ROOT = Path(__file__).resolve().parents[3]
VENV_DEMOS = ("langgraph", "adk", "openai-agents")


class Command(BaseCommand):
    help = "Run one offline agent per supported framework against a running server."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the running server")
        parser.add_argument("--token", default="", help="an API token (else one is created)")
        parser.add_argument("--workspace", default="demo", help="where a new token is created")
        parser.add_argument("--only", action="append", default=[],
                            help="run only this framework (repeatable)")

    def handle(self, *args, url: str, token: str, workspace: str, only: list[str], **options):
        from contextstore_client.adapters.demo import prepare_environment

        prepare_environment()  # before any framework is imported
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request is noise here
        from contextstore_client import ContextStore, ContextStoreError
        from contextstore_client.adapters.demo import DEMOS

        unknown = set(only) - set(DEMOS) - set(VENV_DEMOS)
        if unknown:
            raise CommandError(f"Unknown framework(s): {', '.join(sorted(unknown))}; "
                               f"choose from {', '.join([*DEMOS, *VENV_DEMOS])}.")
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
        for name in VENV_DEMOS:
            python = ROOT / f".venv-{name}" / "bin" / "python"
            if (only and name not in only) or not python.exists():
                continue
            ran = subprocess.run(
                [str(python), "-m", "contextstore_client.adapters.framework_demos", name, "--url", url,
                 "--token", token, "--key", f"demo-{name}-{stamp}"],
                cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                text=True, timeout=300, check=False)
            if ran.returncode != 0:
                failed.append(name)
                self.stderr.write(f"{name}: {ran.stderr[-2000:]}")
                continue
            self.stdout.write(ran.stdout.strip())
        if failed:
            raise CommandError(f"{len(failed)} demo(s) failed: {', '.join(failed)}")
