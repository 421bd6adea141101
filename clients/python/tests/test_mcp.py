"""contextstore-mcp: without the mcp extra it says how to install it (one line, exit 2); with
it, the server's tools answer in-process over a fake API, and a missing or empty token is a
usage error."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from client_fakes import TOKEN, URL, FakeApi, thread_json

HINT = "pip install 'contextstore-client[mcp]'"
HAS_MCP = importlib.util.find_spec("mcp") is not None
needs_mcp = pytest.mark.skipif(not HAS_MCP, reason="the mcp extra is not installed")


def command(*args: str, code: str = "",
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """contextstore-mcp's main in a new interpreter, after `code` (which may hide a module)."""
    script = f"{code}\nfrom contextstore_client._mcp_command import main\nmain({list(args)!r})"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})}, check=False)


def test_without_the_mcp_sdk_the_command_prints_one_line_with_the_install_hint():
    done = command("--url", URL, "--token", TOKEN, code="import sys; sys.modules['mcp'] = None")
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
    assert HINT in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(HAS_MCP, reason="the mcp extra is installed here")
def test_the_installed_console_script_without_the_extra_prints_the_install_hint():
    script = Path(sys.executable).with_name("contextstore-mcp")
    done = subprocess.run([script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert HINT in done.stderr


@needs_mcp
@pytest.mark.parametrize("token", ["", "cs_abc\n"])
def test_an_empty_or_malformed_token_is_a_usage_error_before_anything_is_sent(token):
    done = command(env={"CONTEXTSTORE_URL": "http://127.0.0.1:9", "CONTEXTSTORE_TOKEN": token})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "usage: contextstore-mcp" in done.stderr


@needs_mcp
@pytest.mark.anyio
async def test_the_server_lists_its_tools_and_renders_the_default_thread_over_the_api():
    from contextstore_client import ContextStore
    from contextstore_client.mcp_server import Defaults, build_server
    from mcp import Client

    api = FakeApi()
    api.on("POST", "threads/ensure/", thread_json())
    api.on("GET", "threads/7/context/", {"messages": [{"role": "user", "content": "Hi"}],
                                         "stats": {"total_tokens": 3}, "format": "openai"})
    api.on("POST", "threads/7/events/", {"events": [{"seq": 2, "id": 2, "token_count": 1, "client_id": "c"}]})
    with ContextStore(URL, TOKEN, transport=httpx.MockTransport(api)) as store:
        server = build_server(store, Defaults(session_key="conversation-42", user_id="ann"), poll_interval=60)
        async with Client(server) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            rendered = await client.call_tool("get_context", {"format": "openai"})
            appended = await client.call_tool("append_events", {"events": [
                {"type": "Message", "role": "assistant", "content": "Hello", "client_id": "c"}]})
    assert {"get_context", "append_events", "set_block", "collapse", "recall"} <= tools
    assert not rendered.is_error, rendered.content
    assert rendered.structured_content == {"thread_id": 7, "format": "openai", "system": None,
                                           "messages": [{"role": "user", "content": "Hi"}],
                                           "stats": {"total_tokens": 3}}
    assert not appended.is_error and appended.structured_content["events"][0]["seq"] == 2
    assert json.loads(api.seen[-1].content)["events"][0]["content"] == "Hello"
    assert api.seen[1].url.params["record"] == "false"  # reading stays a read
