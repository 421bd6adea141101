"""`pip install './clients/python[mcp]'` into a fresh virtualenv: the `contextstore-mcp` console
script it brings serves a live server over stdio, with none of the server's stack installed."""

import json
import shutil
import subprocess

import pytest
from mcp import Client, StdioServerParameters

from tests.mcp.conftest import call
from tests.test_client_distribution import ROOT, SERVER_STACK, UV, clean_env, install

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture(scope="module")
def mcp_env_python(tmp_path_factory):
    work = tmp_path_factory.mktemp("mcp-dist")
    source = shutil.copytree(ROOT / "clients" / "python", work / "python",
                             ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    return install(work / "venv", f"{source}[mcp]")


async def test_the_console_script_of_the_mcp_extra_serves_a_thread(mcp_env_python, live_server, token,
                                                                  transactional_db):
    listed = subprocess.run([UV, "pip", "list", "--python", mcp_env_python, "--format", "json"],
                            capture_output=True, text=True, check=True, env=clean_env()).stdout
    installed = {p["name"].lower() for p in json.loads(listed)}
    assert {"contextstore-client", "mcp"} <= installed and not installed & SERVER_STACK

    script = mcp_env_python.parent / "contextstore-mcp"
    env = {**clean_env(), "CONTEXTSTORE_URL": live_server.url, "CONTEXTSTORE_TOKEN": token[1]}
    server = StdioServerParameters(command=str(script), args=["--session-key", "dist", "--user-id", "ann"],
                                   env=env, cwd=str(mcp_env_python.parent))
    async with Client(server) as client:
        appended = await call(client, "append_events", events=[{"type": "Message", "content": "hi"}])
        got = await call(client, "get_thread")
    assert got["id"] == appended["thread_id"] and got["event_count"] == 1
    assert (got["session_key"], got["user_id"]) == ("dist", "ann")
