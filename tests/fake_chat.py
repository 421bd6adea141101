"""A local chat-completions endpoint for replay tests: answers, fails or stalls on demand."""

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeChat(ThreadingHTTPServer):
    daemon_threads = True
    mode = "ok"  # ok, 500 or slow
    reply: str | None = None  # the answer's content when set (an evaluator's judge), else an echo
    fail_when = ""  # set: a request whose last message holds this text is answered 500
    requests: list[dict]

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up on a slow answer closed its socket: expected here

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: FakeChat

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "body": body,
                                     "auth": self.headers.get("Authorization")})
        last_text = json.dumps(body["messages"][-1]) if body.get("messages") else ""
        if self.server.mode == "500" or (self.server.fail_when and self.server.fail_when in last_text):
            return self._send(500, b'{"error": {"message": "overloaded"}}')
        if self.server.mode == "slow":
            time.sleep(3.0)
        last = body["messages"][-1].get("content") or ""
        reply = {"id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant",
                                          "content": self.server.reply or f"Replayed answer to: {last}"}}],
                 "usage": {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230}}
        self._send(200, json.dumps(reply).encode())

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def fake_chat() -> Iterator[FakeChat]:
    server = FakeChat(("127.0.0.1", 0), _Handler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
