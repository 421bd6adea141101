"""Bearer API tokens: `Authorization: Bearer cs_...`, checked by the workspaces service."""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from contextstore.models import ApiToken
from contextstore.services.workspaces import api_token_authenticate


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
    keyword = b"bearer"

    def authenticate(self, request: Request) -> tuple[TokenUser, ApiToken] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        if len(parts) != 2:
            raise AuthenticationFailed("The Authorization header must be 'Bearer <token>'.")
        try:
            raw = parts[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise AuthenticationFailed("Invalid API token.") from exc
        token = api_token_authenticate(raw)
        if token is None:
            raise AuthenticationFailed("Invalid or revoked API token.")
        return TokenUser(token), token

    def authenticate_header(self, request: Request) -> str:
        # Having a challenge makes DRF answer 401 (not 403) when credentials are missing.
        return 'Bearer realm="api"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "contextstore.api.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer",
                "description": "A workspace API token (`cs_...`), scope read or write."}
