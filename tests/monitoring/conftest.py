"""Alerts and saved views: calls at known times, and a local webhook receiver."""

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure

NOW = datetime.fromisoformat("2026-03-10T12:00:00+00:00")


def stamp(minutes_ago: float, now: datetime = NOW) -> str:
    return (now - timedelta(minutes=minutes_ago)).isoformat()


def call(thread, actor, *, minutes_ago: float, cost: float | None = None, model: str = "gpt-4o",
         ms: int | None = None, now: datetime = NOW, **data) -> None:
    """One model call that ended `minutes_ago` before `now` (took `ms`, when given)."""
    end = {"type": "LLMComplete", "occurred_at": stamp(minutes_ago, now),
           "data": {"model": model, **({"cost": cost} if cost is not None else {}), **data}}
    events = [end]
    if ms is not None:
        events = [{"type": "LLMCallStart", "occurred_at": stamp(minutes_ago + ms / 60_000, now),
                   "data": {"model": model}}, end]
    event_append(thread=thread, actor=actor, events=events)


def make_thread(workspace, actor, key: str = "mon-1", agent: str = "helper"):
    session = session_ensure(workspace=workspace, key=key, agent=agent, actor=actor)[0]
    return thread_ensure(session=session, actor=actor)[0]


@dataclass
class Receiver:
    """A local HTTP server standing for a webhook: answers with `statuses` in turn (then 200)."""

    url: str
    statuses: list[int] = field(default_factory=list)
    received: list[dict] = field(default_factory=list)
    location: str = ""


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on 127.0.0.1
    settings.ALERT_WEBHOOK_TIMEOUT = 2

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.received.append({"headers": dict(self.headers), "body": body})
            status = got.statuses.pop(0) if got.statuses else 200
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", got.location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    got = Receiver(url=f"http://127.0.0.1:{server.server_address[1]}/hook")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield got
    server.shutdown()
    server.server_close()


def body_of(request: dict) -> dict:
    return json.loads(request["body"])
