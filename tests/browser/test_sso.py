"""Single sign-on end to end: chromium, the dashboard (live_server) and a real OpenID Connect
provider (django-oauth-toolkit, tests/sso/provider) running as a process of its own."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth import authenticate, get_user_model
from django.test import Client

from contextstore.models import AuditLog, Membership
from contextstore.services.workspaces import workspace_ensure

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID, CLIENT_SECRET = "contextstore-dashboard", "dashboard-secret-for-tests"
USERS = [
    {"username": "ada", "password": "ada-pw-123", "email": "ada@example.test", "groups": ["ml-team"]},
    {"username": "carl", "password": "carl-pw-123", "email": "carl@example.test", "groups": ["marketing"]},
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def provider(live_server, tmp_path_factory):
    """The provider's base URL; its users are USERS, its one client the dashboard."""
    tmp = tmp_path_factory.mktemp("provider")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    setup = tmp / "setup.json"
    setup.write_text(json.dumps({"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                                 "redirect_uri": f"{live_server.url}/oidc/callback/", "users": USERS}))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    env.update(PROVIDER_DB=str(tmp / "provider.sqlite3"), PROVIDER_RSA_KEY=key, PYTHONPATH=str(ROOT))
    log = (tmp / "provider.log").open("w")
    process = subprocess.Popen([sys.executable, "-m", "tests.sso.provider.serve", str(port), str(setup)],
                               cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/o/.well-known/openid-configuration", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the test provider did not start:\n{(tmp / 'provider.log').read_text()}")
        time.sleep(0.2)
    yield url
    process.terminate()
    process.wait(10)
    log.close()


@pytest.fixture
def sso(settings, provider, transactional_db):
    """The dashboard's settings pointed at the provider; ml-team are editors of `research`."""
    settings.OIDC_ENABLED = True
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = CLIENT_ID, CLIENT_SECRET
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{provider}/o/authorize/"
    settings.OIDC_OP_TOKEN_ENDPOINT = f"{provider}/o/token/"
    settings.OIDC_OP_USER_ENDPOINT = f"{provider}/o/userinfo/"
    settings.OIDC_OP_JWKS_ENDPOINT = f"{provider}/o/.well-known/jwks.json"
    settings.OIDC_ROLE_MAP = json.dumps({"ml-team": {"research": "editor"}, "ops": {"prod": "admin"}})
    settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend",
                                        "contextstore.views.sso.SsoBackend"]
    workspace_ensure(slug="research", name="Research")
    workspace_ensure(slug="prod", name="Production")
    return settings


def sign_in(browser, live_server, username: str, password: str):
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto("/")
    page.get_by_role("button", name="Sign in with SSO").click()
    page.get_by_label("Provider username").fill(username)
    page.get_by_label("Provider password").fill(password)
    page.get_by_role("button", name="Sign in to the provider").click()
    page.wait_for_url(f"{live_server.url}/**")
    return context, page


def test_sso_grants_the_mapped_workspace_and_no_group_means_no_workspace(sso, browser, live_server):
    context, page = sign_in(browser, live_server, "ada", "ada-pw-123")
    assert page.url == f"{live_server.url}/"
    assert page.locator("#ws-switch option:checked").inner_text() == "Research"
    ada = get_user_model().objects.get(email="ada@example.test")
    assert not ada.has_usable_password()
    assert list(ada.memberships.values_list("workspace__slug", "role")) == [("research", "editor")]
    assert AuditLog.objects.filter(action="membership.set", actor_label="sso").count() == 1
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/accounts/login/")
    page.goto("/")
    assert "/accounts/login/" in page.url  # signed out of the dashboard
    context.close()

    context, page = sign_in(browser, live_server, "carl", "carl-pw-123")
    assert page.url == f"{live_server.url}/no-workspace/"
    assert page.get_by_role("heading", name="Your account has no workspace").is_visible()
    assert page.locator("#ws-switch").count() == 0  # nothing of any workspace shown
    carl = get_user_model().objects.get(email="carl@example.test")
    assert not Membership.objects.filter(user=carl).exists()
    context.close()


def test_with_local_passwords_off_only_sso_signs_in(sso, browser, live_server):
    sso.LOCAL_PASSWORDS = False
    sso.AUTHENTICATION_BACKENDS = ["contextstore.views.sso.SsoBackend"]
    get_user_model().objects.create_superuser("root", "root@example.test", "root-pw-123")

    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.goto("/admin/")
    assert "/accounts/login/" in page.url  # the admin signs in the same way
    assert page.get_by_role("button", name="Sign in with SSO").is_visible()
    assert page.locator("input[type=password]").count() == 0
    context.close()

    client = Client()
    response = client.post("/accounts/login/", {"username": "root", "password": "root-pw-123"})
    assert response.status_code == 405
    assert "_auth_user_id" not in client.session
    response = client.get("/admin/login/?next=/admin/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=%2Fadmin%2F"
    assert authenticate(username="root", password="root-pw-123") is None

    context, page = sign_in(browser, live_server, "ada", "ada-pw-123")
    assert page.url == f"{live_server.url}/"
    assert page.locator("#ws-switch option:checked").inner_text() == "Research"
    context.close()


def test_a_client_the_provider_refuses_lands_on_the_login_page_with_a_message(sso, browser, live_server):
    sso.OIDC_RP_CLIENT_SECRET = "not-the-secret"
    context, page = sign_in(browser, live_server, "ada", "ada-pw-123")
    assert page.url == f"{live_server.url}/accounts/login/?sso=failed"
    assert page.get_by_text("Single sign-on did not sign you in").is_visible()
    assert not get_user_model().objects.filter(email="ada@example.test").exists()
    context.close()
