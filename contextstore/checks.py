"""System checks: configuration mistakes stop `manage.py check`, `migrate` and the server's start."""

from django.conf import settings
from django.core.checks import CheckMessage, Error, register

from contextstore.errors import InvalidInput
from contextstore.services.sso import role_map_parse


@register()
def sso_settings(app_configs, **kwargs) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    try:
        role_map_parse(settings.OIDC_ROLE_MAP)
    except InvalidInput as exc:
        errors.append(Error(str(exc), hint="Fix the OIDC_ROLE_MAP environment variable.",
                            id="contextstore.E101"))
    if settings.OIDC_ENABLED:
        missing = [name for name in ("OIDC_RP_CLIENT_SECRET", "OIDC_OP_AUTHORIZATION_ENDPOINT",
                                     "OIDC_OP_TOKEN_ENDPOINT", "OIDC_OP_USER_ENDPOINT")
                   if not getattr(settings, name)]
        if settings.OIDC_RP_SIGN_ALGO.startswith("RS") and not settings.OIDC_OP_JWKS_ENDPOINT:
            missing.append("OIDC_OP_JWKS_ENDPOINT")
        if missing:
            errors.append(Error(f"OIDC_RP_CLIENT_ID is set but {', '.join(missing)} is not.",
                                hint="Single sign-on needs the provider's endpoints (its "
                                     "/.well-known/openid-configuration lists them).",
                                id="contextstore.E102"))
    elif not settings.LOCAL_PASSWORDS:
        errors.append(Error("LOCAL_PASSWORDS is off but single sign-on is not configured "
                            "(OIDC_RP_CLIENT_ID): nobody could sign in.", id="contextstore.E103"))
    return errors
