"""Bearer API tokens: `Authorization: Bearer cs_...`, checked by the workspaces service."""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from contextstore.errors import NotAuthenticated
from contextstore.models import ApiToken
from contextstore.services.workspaces import api_token_of_header


class TokenUser:
    """Stands in for request.user: the caller is a workspace token, not a person."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False

    def __init__(self, token: ApiToken):
        self.token = token
        self.pk = None

    def __str__(self) -> str:
        return f"token:{self.token.prefix}"

    def get_username(self) -> str:
        return str(self)


class BearerTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[TokenUser, ApiToken] | None:
        try:
            token = api_token_of_header(request.headers.get("Authorization", ""))
        except NotAuthenticated as exc:
            raise AuthenticationFailed(exc.message) from exc
        return None if token is None else (TokenUser(token), token)

    def authenticate_header(self, request: Request) -> str:
        # Having a challenge makes DRF answer 401 (not 403) when credentials are missing.
        return 'Bearer realm="api"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "contextstore.api.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer",
                "description": "A workspace API token (`cs_...`), scope read or write."}
