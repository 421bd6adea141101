"""ContextStoreMemoryService in ADK's own virtualenv against the live server: the assertions of
ADK's memory-service tests, run against InMemoryMemoryService and ours alike, random sessions
searched on both with identical answers (framework_tests/test_adk_memory.py), and the timings of
both (docs/performance.md)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(1800)
def test_adks_memory_service_checks_pass_against_contextstore(live_server, transactional_db, token, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"token": "off"}}
    subprocess.run([str(ROOT / "scripts/framework-venv"), "adk"], cwd=ROOT, check=True, timeout=1800)
    env = {**os.environ, "CONTEXTSTORE_URL": live_server.url, "CONTEXTSTORE_TOKEN": token[1],
           "PYTHONPATH": str(ROOT)}
    run = subprocess.run([str(ROOT / ".venv-adk/bin/python"), "-m", "pytest", "-q", "-s", "-p",
                          "no:cacheprovider", "-c", "framework_tests/pytest.ini",
                          "framework_tests/test_adk_memory.py"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]
    # Every check ran on both services (the random and timing ones on ours alone).
    assert "37 passed, 3 skipped" in output, output[-3000:]
    [line] = [line for line in output.splitlines() if "ADK_MEMORY_TIMINGS " in line]
    figures = json.loads(line.split("ADK_MEMORY_TIMINGS ", 1)[1])
    print("\n" + line)  # for docs/performance.md (pytest -s)
    assert set(figures) == {"in_memory @20", "contextstore @20", "in_memory @200", "contextstore @200"}
