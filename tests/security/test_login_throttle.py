"""Finding 2: password logins were not throttled: 60 wrong passwords, then the right one logged
in, on the dashboard's login page and the admin's alike. django-axes now locks a username, and
separately an address, out after LOGIN_FAILURE_LIMIT failures, for a wait that doubles as the
failures go on; each lockout is audited, and single sign-on is left alone."""

from datetime import timedelta

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.test import Client, RequestFactory

from contextstore.models import AuditLog

PASSWORD = "pw-for-tests-123"


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("root", password=PASSWORD, is_staff=True,
                                                is_superuser=True)


def _login(client: Client, path: str, username: str, password: str):
    return client.post(path, {"username": username, "password": password, "next": "/"})


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_sixty_wrong_passwords_then_the_right_one_does_not_log_in(staff, path):
    client = Client()
    for _ in range(60):
        assert _login(client, path, "root", "wrong").status_code in (200, 429)
    response = _login(client, path, "root", PASSWORD)
    assert response.status_code == 429
    assert b'id="locked-out"' in response.content
    assert not _signed_in(client)


def test_a_username_is_locked_from_any_address_and_an_address_for_any_username(staff, user, settings):
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        _login(Client(REMOTE_ADDR="10.0.0.1"), "/accounts/login/", "root", "wrong")
    elsewhere = Client(REMOTE_ADDR="10.0.0.2")
    assert _login(elsewhere, "/accounts/login/", "root", PASSWORD).status_code == 429
    assert not _signed_in(elsewhere)
    # 10.0.0.1 spent its failures too: another person from there waits as well
    same_place = Client(REMOTE_ADDR="10.0.0.1")
    assert _login(same_place, "/accounts/login/", "pat", PASSWORD).status_code == 429
    # a person from another address is not held back
    fine = Client(REMOTE_ADDR="10.0.0.3")
    assert _login(fine, "/accounts/login/", "pat", PASSWORD).status_code == 302 and _signed_in(fine)


def test_fewer_failures_than_the_limit_still_log_in(staff, settings):
    client = Client()
    for _ in range(settings.LOGIN_FAILURE_LIMIT - 1):
        assert _login(client, "/accounts/login/", "root", "wrong").status_code == 200
    assert _login(client, "/accounts/login/", "root", PASSWORD).status_code == 302


def test_signing_in_as_oneself_does_not_clear_the_guesses_at_someone_else(staff, user, settings):
    """An attacker with an account of their own, guessing root's password from one address."""
    client = Client(REMOTE_ADDR="10.0.0.5")
    for _ in range(settings.LOGIN_FAILURE_LIMIT - 1):
        _login(client, "/accounts/login/", "root", "wrong")
    assert _login(client, "/accounts/login/", "pat", PASSWORD).status_code == 302
    client.logout()
    _login(client, "/accounts/login/", "root", "wrong")
    assert _login(Client(REMOTE_ADDR="10.0.0.6"), "/accounts/login/", "root", PASSWORD).status_code == 429


def test_each_lockout_is_audited_and_the_wait_doubles_as_failures_go_on(staff, settings):
    client = Client(REMOTE_ADDR="10.0.0.9")
    for _ in range(settings.LOGIN_FAILURE_LIMIT * 3):
        _login(client, "/admin/login/", "root", "wrong")
    rows = list(AuditLog.objects.filter(action="login.locked_out").order_by("pk"))
    base = settings.LOGIN_COOLOFF_MINUTES * 60
    assert [(r.details["failures"], r.details["cooloff_seconds"]) for r in rows] == [
        (settings.LOGIN_FAILURE_LIMIT, base), (settings.LOGIN_FAILURE_LIMIT * 2, base * 2),
        (settings.LOGIN_FAILURE_LIMIT * 3, base * 4)]
    assert {(r.details["username"], r.ip, r.details["path"]) for r in rows} == {
        ("root", "10.0.0.9", "/admin/login/")}


def test_the_lockout_ends_after_its_wait(staff, settings, monkeypatch):
    client = Client()
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        _login(client, "/accounts/login/", "root", "wrong")
    assert _login(client, "/accounts/login/", "root", PASSWORD).status_code == 429
    from axes.models import AccessAttempt
    # the failures were made a wait and a minute ago
    for attempt in AccessAttempt.objects.all():
        attempt.attempt_time -= timedelta(minutes=settings.LOGIN_COOLOFF_MINUTES * 2 + 1)
        attempt.save()
    assert _login(client, "/accounts/login/", "root", PASSWORD).status_code == 302


def test_single_sign_on_is_neither_counted_nor_refused(staff, settings, monkeypatch):
    from contextstore.views.sso import SsoBackend

    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS,
                                        "contextstore.views.sso.SsoBackend"]
    signed = []

    def provider_says(self, request, **kwargs):  # the provider accepted the code (no network here)
        signed.append(kwargs)
        return staff if kwargs.get("code_verifier") == "good" else None

    monkeypatch.setattr(SsoBackend, "authenticate", provider_says)
    callback = RequestFactory().get("/oidc/callback/", REMOTE_ADDR="10.0.0.7")
    for _ in range(settings.LOGIN_FAILURE_LIMIT * 2):  # refused sign-ons: no password, not counted
        assert authenticate(request=callback, nonce="n", code_verifier="bad") is None
    assert not AuditLog.objects.filter(action="login.locked_out").exists()
    for _ in range(settings.LOGIN_FAILURE_LIMIT):  # the address is now locked for passwords
        _login(Client(REMOTE_ADDR="10.0.0.7"), "/accounts/login/", "root", "wrong")
    assert _login(Client(REMOTE_ADDR="10.0.0.7"), "/accounts/login/", "root", PASSWORD).status_code == 429
    assert authenticate(request=callback, nonce="n", code_verifier="good") == staff
