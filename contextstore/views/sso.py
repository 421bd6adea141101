"""Single sign-on (OpenID Connect through mozilla-django-oidc) and the login page around it.

At every sign-on the person's groups claim (ID token first, else the userinfo answer) is mapped
by settings.OIDC_ROLE_MAP to workspace roles, and their memberships of the workspaces the map
names are made to match (services/workspaces.memberships_sync). Someone whose groups grant
nothing still signs in, and lands on the "no workspace" page.
"""

import logging
from typing import Any

import requests
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.urls import reverse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from contextstore.services.common import Actor
from contextstore.services.sso import grants_for_groups, managed_workspaces, role_map_parse
from contextstore.services.workspaces import memberships_sync
from contextstore.views.access import DashboardRequest, visible_workspaces

logger = logging.getLogger(__name__)


class SsoBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend (users found by their verified e-mail address, created on
    first sign-on without a usable password) that also keeps workspace roles in step."""

    def authenticate(self, request, **kwargs):
        try:
            return super().authenticate(request, **kwargs)
        except requests.RequestException as exc:  # provider down, or refusing the code or client
            logger.warning("single sign-on failed: %s", exc)
            return None  # back to the login page, with a message

    def get_userinfo(self, access_token, id_token, payload):
        claims = super().get_userinfo(access_token, id_token, payload)
        name = settings.OIDC_GROUPS_CLAIM
        if name in payload:  # the ID token's claim (signed, just verified) wins
            claims = {**claims, name: payload[name]}
        return claims

    def verify_claims(self, claims):
        # An address the provider says it has not verified names nobody here.
        return super().verify_claims(claims) and claims.get("email_verified") is not False

    def create_user(self, claims):
        user = super().create_user(claims)
        self._sync(user, claims)
        return user

    def update_user(self, user, claims):
        self._sync(user, claims)
        return user

    def _sync(self, user, claims: dict[str, Any]) -> None:
        role_map = role_map_parse(settings.OIDC_ROLE_MAP)
        grants = grants_for_groups(claims.get(settings.OIDC_GROUPS_CLAIM), role_map)
        memberships_sync(user=user, grants=grants, managed=managed_workspaces(role_map),
                         actor=Actor.system("sso"))


class SsoStart(OIDCAuthenticationRequestView):
    """Off (404) unless single sign-on is configured."""

    def __init__(self, *args, **kwargs):
        if not settings.OIDC_ENABLED:
            raise Http404("Single sign-on is not configured.")
        super().__init__(*args, **kwargs)


class SsoCallback(OIDCAuthenticationCallbackView):
    """Signed in: on to the page asked for, or to "no workspace" when the groups granted none."""

    @property
    def success_url(self):
        if not visible_workspaces(self.user).exists():
            return reverse("contextstore:no-workspace")
        return super().success_url

    def get(self, request):
        if not settings.OIDC_ENABLED:
            raise Http404("Single sign-on is not configured.")
        return super().get(request)


class LoginView(auth_views.LoginView):
    """Django's login page, with a "Sign in with SSO" button when single sign-on is on; with
    LOCAL_PASSWORDS off the password form is gone and a POST is refused (405)."""

    def dispatch(self, request, *args, **kwargs):
        if request.method == "POST" and not settings.LOCAL_PASSWORDS:
            return HttpResponseNotAllowed(["GET"])
        return super().dispatch(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        return super().get_context_data(
            **kwargs, sso=settings.OIDC_ENABLED, local_passwords=settings.LOCAL_PASSWORDS,
            sso_failed="sso" in self.request.GET,
        )


def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's login, when local passwords are off: the same sign-on as the dashboard."""
    if settings.LOCAL_PASSWORDS:
        from django.contrib import admin

        return admin.site.login(request)
    query = request.GET.urlencode()
    return redirect(f"{settings.LOGIN_URL}?{query}" if query else settings.LOGIN_URL)


@login_required
def no_workspace(request: DashboardRequest) -> HttpResponse:
    """Signed in, but a member of no workspace: say so (and show nothing else)."""
    if visible_workspaces(request.user).exists():
        return redirect("contextstore:sessions")
    return render(request, "contextstore/no_workspace.html", status=200)
