import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from contextstore.services.common import Actor
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.workspaces import api_token_create, workspace_ensure


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2 costs about a second per user; no test here is about hashing strength."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def actor() -> Actor:
    return Actor.system("tests")


@pytest.fixture
def workspace(db):
    return workspace_ensure(slug="acme", name="Acme")[0]


@pytest.fixture
def other_workspace(db):
    return workspace_ensure(slug="rival", name="Rival")[0]


@pytest.fixture
def session(workspace, actor):
    return session_ensure(workspace=workspace, key="s-1", user_id="alice", agent="helper",
                          actor=actor)[0]


@pytest.fixture
def thread(session, actor):
    return thread_ensure(session=session, actor=actor)[0]


@pytest.fixture
def token(workspace, actor):
    """(ApiToken, raw value) with write scope."""
    return api_token_create(workspace=workspace, name="tests", scope="write", actor=actor)


@pytest.fixture
def read_token(workspace, actor):
    return api_token_create(workspace=workspace, name="reader", scope="read", actor=actor)


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("pat", password="pw-for-tests-123")


def messages(n: int, *, start: int = 0, words: int = 60, **extra) -> list[dict]:
    """n realistic Message events (about `words` words each)."""
    body = " ".join(["context"] * (words - 4))
    return [
        {"type": "Message", "role": "user" if i % 2 == 0 else "assistant",
         "content": f"turn {start + i}: {body}", **extra}
        for i in range(n)
    ]


def response_json(response) -> Any:
    """The JSON body of a response, streamed (the exports) or not."""
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    return json.loads(raw)
