"""Dashboard fixtures: people with a role in the workspace, logged-in clients."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from contextstore.models import Membership


def _member(workspace, username: str, role: str):
    user = get_user_model().objects.create_user(username, password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=user, role=role)
    return user


@pytest.fixture
def editor(workspace):
    return _member(workspace, "eddie", Membership.Role.EDITOR)


@pytest.fixture
def viewer(workspace):
    return _member(workspace, "vera", Membership.Role.VIEWER)


@pytest.fixture
def outsider(other_workspace):
    return _member(other_workspace, "otto", Membership.Role.ADMIN)


@pytest.fixture
def editor_client(editor) -> Client:
    client = Client()
    client.force_login(editor)
    return client


@pytest.fixture
def viewer_client(viewer) -> Client:
    client = Client()
    client.force_login(viewer)
    return client


@pytest.fixture
def outsider_client(outsider) -> Client:
    client = Client()
    client.force_login(outsider)
    return client


HTMX = {"HTTP_HX_REQUEST": "true"}
