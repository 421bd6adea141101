"""A ContextStore whose requests are counted, for the requests-per-framework-call tests."""

import os
import uuid

import httpx
from contextstore_client import ContextStore


class CountingTransport(httpx.HTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.count += 1
        return super().handle_request(request)


def counting_client() -> tuple[ContextStore, CountingTransport]:
    transport = CountingTransport()
    client = ContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"],
                          transport=transport)
    return client, transport


def fresh_namespace() -> str:
    return uuid.uuid4().hex


def filler(n: int, start: int = 0) -> list[dict]:
    """n plain events of history (batches of at most 1000, the API's batch limit)."""
    return [{"type": "Message", "role": "user", "content": f"earlier message {start + i}"} for i in range(n)]
