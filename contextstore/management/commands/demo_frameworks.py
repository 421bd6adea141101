"""Run one small offline agent per framework against a running contextstore server.

    python manage.py demo_frameworks --url http://127.0.0.1:8000 [--token cs_...] [--only NAME]

Without --token a write token is created for --workspace (default: demo). Each framework's
agent gets its own session (demo-<framework>-<time>), so they show side by side in the dashboard.

Eight frameworks, one line each: what its demo did, or why it was skipped and how to install
what it needs. peteos, clientai, AgentScope, Agent Framework and Nooa run in this process (the
server's `adapters` extra pins them). LangGraph, ADK and the OpenAI Agents SDK pin versions that
conflict with those, so their demos (contextstore_client/adapters/framework_demos.py) run in
their own virtualenvs (``make framework-venvs``), one process each, or here when the framework
is importable here. A framework named with --only that cannot run is an error (exit 1).
"""

import importlib.util
import logging
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from contextstore.services.common import Actor
from contextstore.services.workspaces import api_token_create, workspace_ensure

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Framework:
    name: str
    module: str  # what must import for its demo to run
    install: str  # the command that makes it importable
    venv: bool = False  # its demo may run in .venv-<name> (framework_demos.py)


VENVS = "make framework-venvs"
FRAMEWORKS = (
    Framework("peteos", "peteos", "pip install peteos==0.6.13"),
    Framework("clientai", "clientai", "pip install clientai==0.5.0"),
    Framework("agentscope", "agentscope", "pip install agentscope==2.0.11"),
    Framework("agent-framework", "agent_framework", "pip install agent-framework-core==1.23.0"),
    Framework("nooa", "nooa", "pip install nooa==0.0.10"),
    # the pins of scripts/framework-venv
    Framework("langgraph", "langgraph", f"{VENVS} (or: pip install langgraph==1.2.22)", venv=True),
    Framework("adk", "google.adk", f"{VENVS} (or: pip install google-adk==2.13.0)", venv=True),
    Framework("openai-agents", "agents", f"{VENVS} (or: pip install openai-agents==0.24.0)", venv=True),
)


def importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing (google for google.adk)
        return False


def venv_python(name: str) -> Path | None:
    python = ROOT / f".venv-{name}" / "bin" / "python"
    return python if python.exists() else None


def where(framework: Framework) -> str | Path | None:
    """How its demo can run: "here" (this process), a venv's python, or None (it cannot)."""
    if framework.venv and (python := venv_python(framework.name)) is not None:
        return python  # the versions the demo is tested with
    return "here" if importable(framework.module) else None


def skip_reason(framework: Framework) -> str:
    where_not = f"here, and .venv-{framework.name} does not exist" if framework.venv else "here"
    return f"skipped: {framework.module} is not importable {where_not}; install it with: {framework.install}"


class Command(BaseCommand):
    help = "Run one offline agent per supported framework against a running server."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the running server")
        parser.add_argument("--token", default="", help="an API token (else one is created)")
        parser.add_argument("--workspace", default="demo", help="where a new token is created")
        parser.add_argument("--only", action="append", default=[],
                            help="run only this framework (repeatable); one that cannot run is an error")

    def handle(self, *args, url: str, token: str, workspace: str, only: list[str], **options):
        names = [f.name for f in FRAMEWORKS]
        unknown = set(only) - set(names)
        if unknown:
            raise CommandError(f"Unknown framework(s): {', '.join(sorted(unknown))}; "
                               f"choose from {', '.join(names)}.")
        if not importable("contextstore_client"):  # the production image has no client
            raise CommandError("The demos run on the Python client, which is not installed here: "
                               "pip install ./clients/python")
        chosen = [f for f in FRAMEWORKS if not only or f.name in only]
        places = {f.name: where(f) for f in chosen}
        cannot = [f for f in chosen if places[f.name] is None]
        if only and cannot:  # asked for by name: say so before anything runs
            raise CommandError("Cannot run " + "; ".join(f"{f.name}: {skip_reason(f)}" for f in cannot))

        from contextstore_client.adapters.demo import prepare_environment

        prepare_environment()  # before any framework is imported
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request is noise here
        from contextstore_client import ContextStore
        from contextstore_client.adapters import demo, framework_demos

        in_process = {**demo.DEMOS, **framework_demos.DEMOS}
        if not token:
            ws, _ = workspace_ensure(slug=workspace, name=workspace.title())
            created, token = api_token_create(workspace=ws, name="demo_frameworks",
                                              actor=Actor.system("demo_frameworks"))
            self.stderr.write(f"created token {created.prefix}… in workspace {ws.slug}")
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        failed: list[str] = []
        with ContextStore(url, token) as cs:
            for framework in chosen:
                name, place, key = framework.name, places[framework.name], f"demo-{framework.name}-{stamp}"
                if place is None:
                    self.stdout.write(f"{name}: {skip_reason(framework)}")
                elif isinstance(place, Path):
                    if (line := self._run_in_venv(framework, place, url, token, key)) is None:
                        failed.append(name)
                    else:
                        self.stdout.write(line)
                else:
                    try:
                        self.stdout.write(f"{name}: session {key}: {in_process[name](cs, key)}")
                    except Exception as exc:  # one framework's failure is reported, the others run
                        failed.append(name)
                        self.stderr.write(f"{name}: failed: {type(exc).__name__}: {exc}")
        ran = len(chosen) - len(cannot) - len(failed)
        summary = f"{ran} of {len(chosen)} framework demos ran"
        if cannot:
            summary += f"; skipped {', '.join(f.name for f in cannot)} (see above)"
        self.stdout.write(summary + ".")
        if failed:
            raise CommandError(f"{len(failed)} demo(s) failed: {', '.join(failed)}")

    def _run_in_venv(self, framework: Framework, python: Path, url: str, token: str, key: str) -> str | None:
        ran = subprocess.run(
            [str(python), "-m", "contextstore_client.adapters.framework_demos", framework.name,
             "--url", url, "--token", token, "--key", key],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
            text=True, timeout=300, check=False)
        if ran.returncode != 0:
            venv = python.parent.parent.name
            self.stderr.write(f"{framework.name}: failed in {venv}: {ran.stderr[-2000:]}")
            return None
        return ran.stdout.strip()
