"""The login page and sign-on URLs with single sign-on off (the default), and the no-workspace page."""

from contextstore.models import Membership


def test_with_sso_off_the_login_page_has_only_the_password_form(client, db):
    html = client.get("/accounts/login/").content.decode()
    assert "Sign in with SSO" not in html and 'name="password"' in html
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404


def test_with_sso_on_the_login_page_offers_it_next_to_the_password_form(client, db, settings):
    settings.OIDC_ENABLED, settings.OIDC_RP_CLIENT_ID = True, "dashboard"
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = "https://id.example.test/authorize"
    html = client.get("/accounts/login/?next=/cache/").content.decode()
    assert "Sign in with SSO" in html and 'name="password"' in html
    response = client.get("/oidc/authenticate/?next=/cache/")
    assert response.status_code == 302
    assert response["Location"].startswith("https://id.example.test/authorize?")
    assert "code_challenge=" in response["Location"] and "client_id=dashboard" in response["Location"]
    assert "Single sign-on did not sign you in" in client.get("/accounts/login/?sso=failed").content.decode()


def test_the_no_workspace_page(client, user, workspace):
    assert client.get("/no-workspace/")["Location"].startswith("/accounts/login/")
    client.force_login(user)
    assert "Your account has no workspace" in client.get("/no-workspace/").content.decode()
    Membership.objects.create(workspace=workspace, user=user, role="viewer")
    assert client.get("/no-workspace/")["Location"] == "/"


def test_an_unverified_address_is_refused():
    from contextstore.views.sso import SsoBackend

    backend = SsoBackend.__new__(SsoBackend)  # verify_claims reads only settings
    assert backend.verify_claims({"email": "a@example.test", "email_verified": True})
    assert backend.verify_claims({"email": "a@example.test"})
    assert not backend.verify_claims({"email": "a@example.test", "email_verified": False})
    assert not backend.verify_claims({"sub": "1"})
