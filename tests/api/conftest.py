import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from contextstore.services.workspaces import api_token_create


def client_for(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture(autouse=True)
def fresh_throttle_counters():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def api_client(token) -> APIClient:
    return client_for(token[1])


@pytest.fixture
def read_client(read_token) -> APIClient:
    return client_for(read_token[1])


@pytest.fixture
def other_client(other_workspace, actor) -> APIClient:
    """A write token of another workspace: everything of `workspace` must be a 404 to it."""
    return client_for(api_token_create(workspace=other_workspace, name="rival", actor=actor)[1])


@pytest.fixture
def thread_url(thread) -> str:
    return f"/api/v1/threads/{thread.pk}/"
