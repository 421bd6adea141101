"""The MCP server as hosts run it: `contextstore-mcp` in its own process, over stdio or
Streamable HTTP, reached with the mcp SDK's own client, against this test run's live server."""

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client as DjangoClient
from mcp import Client, StdioServerParameters

from contextstore.models import Membership

ROOT = Path(__file__).resolve().parents[2]
CLIENT_SRC = ROOT / "clients" / "python"
SERVER = [sys.executable, "-m", "contextstore_client.mcp_server"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def mcp_env(live_server, transactional_db, token) -> dict[str, str]:
    """The environment a host gives the server: the API's address and a write token."""
    path = os.pathsep.join(filter(None, [str(CLIENT_SRC), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "CONTEXTSTORE_URL": live_server.url,
            "CONTEXTSTORE_TOKEN": token[1]}


def in_db(fn, *args, **kwargs):
    """Run ORM work off the event loop (Django refuses it inside one), closing the worker
    thread's connection after it (else the test database cannot be dropped)."""
    def work():
        try:
            return fn(*args, **kwargs)
        finally:
            connections.close_all()
    return anyio.to_thread.run_sync(work)


async def call(client, tool, /, **arguments) -> dict:
    """A tool's structured result (also its text content), failing the test on a tool error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def refused(client, tool, /, **arguments) -> str:
    """A tool error's text, failing the test if the call succeeded."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error and result.structured_content is None
    return result.content[0].text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(process: subprocess.Popen, port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"contextstore-mcp --http exited: {process.stderr.read().decode()[-3000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("contextstore-mcp --http did not start listening")


@pytest.fixture(params=["stdio", "http"])
def transport(request) -> str:
    return request.param


@pytest.fixture
def connect(transport, mcp_env) -> Iterator[Callable[..., Any]]:
    """connect(*args, env=..., mode=...): an entered mcp Client on a fresh server process started
    with `args`, over this test's transport."""
    processes: list[subprocess.Popen] = []

    @asynccontextmanager
    async def connect(*args: str, env: dict[str, str] | None = None, mode: str = "auto", **client: Any):
        env = {**mcp_env, **(env or {})}
        argv = [*args, "--poll-interval", "0.2"]
        if transport == "stdio":
            server: Any = StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], *argv], env=env)
        else:
            port = _free_port()
            process = subprocess.Popen([*SERVER, *argv, "--http", f"127.0.0.1:{port}"], env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            processes.append(process)
            _wait_for_port(process, port)
            server = f"http://127.0.0.1:{port}/mcp"
        async with Client(server, mode=mode, **client) as session:
            yield session

    yield connect
    for process in processes:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def dashboard(workspace):
    """A person's browser on the dashboard: an editor of the workspace, logged in."""
    person = get_user_model().objects.create_user("eddie", password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=person, role=Membership.Role.EDITOR)
    browser = DjangoClient()
    browser.force_login(person)
    return browser
