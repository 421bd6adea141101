"""The frameworks' own test suites, each in its own virtualenv (scripts/framework-venv),
against this test run's live server on whichever database the run uses.

The virtualenvs are built by the project's scripts from PyPI when missing; a failed build
fails these tests (never skips them).
"""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def framework_env(live_server, transactional_db, token, settings) -> dict[str, str]:
    # The suites make thousands of requests a minute through one token.
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {"token": "off"}}
    return {**os.environ, "CONTEXTSTORE_URL": live_server.url, "CONTEXTSTORE_TOKEN": token[1]}


def run_suite(name: str, env: dict[str, str]) -> str:
    build = subprocess.run([str(ROOT / "scripts/framework-venv"), name], cwd=ROOT, capture_output=True,
                           text=True, timeout=1800, check=False)
    assert build.returncode == 0, (
        f"building .venv-{name} failed:\n{build.stdout[-3000:]}{build.stderr[-3000:]}")
    # The adapters come from the client distribution alone: nothing of the server's stack
    # (psycopg may be there: LangGraph's own PostgresSaver, which bench_peers measures, uses it).
    listed = subprocess.run([Path(sys.executable).with_name("uv"), "pip", "list", "--format", "json",
                             "--python", ROOT / f".venv-{name}/bin/python"],
                            capture_output=True, text=True, check=True).stdout
    names = {p["name"].lower() for p in json.loads(listed)}
    assert "contextstore-client" in names and not names & {"contextstore", "django", "celery"}
    run = subprocess.run([str(ROOT / "scripts/framework-tests"), name], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=1800, check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"{name} suite failed:\n{output[-6000:]}"
    return output


# What each suite prints when all of it passed.
SUITES = {"openai-agents": " passed",
          "langgraph": "81 tests passed, 0 failed",  # base and extended capabilities
          "adk": "7 passed"}


@pytest.mark.timeout(1800)
def test_the_frameworks_own_suites_pass_side_by_side(framework_env):
    """The three suites at once against one live server, as three agents would use it: each
    waits on its own HTTP round trips, so together they take about as long as the longest."""
    with ThreadPoolExecutor(len(SUITES)) as pool:
        outputs = dict(zip(SUITES, pool.map(lambda name: run_suite(name, framework_env), SUITES),
                           strict=True))
    for name, passed in SUITES.items():
        assert passed in outputs[name], f"{name}: {outputs[name][-3000:]}"
