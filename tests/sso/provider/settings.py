"""A tiny OpenID Connect provider for the single sign-on tests: django-oauth-toolkit with OIDC on.

tests/sso/provider/serve.py runs it as a process of its own; the environment gives it its SQLite
file (PROVIDER_DB) and its RSA signing key (PROVIDER_RSA_KEY, PEM, made by the test).
"""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECRET_KEY = "provider-for-tests-only"  # noqa: S105
DEBUG = True
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.sso.provider.urls"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [HERE / "templates"],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": ["django.template.context_processors.request",
                                       "django.contrib.auth.context_processors.auth"]},
}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["PROVIDER_DB"]}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Cookies are per host, not per port: the dashboard under test runs on the same machine.
SESSION_COOKIE_NAME = "provider_session"
CSRF_COOKIE_NAME = "provider_csrf"
LOGIN_URL = "/accounts/login/"
USE_TZ = True
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": os.environ["PROVIDER_RSA_KEY"],
    "OAUTH2_VALIDATOR_CLASS": "tests.sso.provider.validator.GroupsValidator",
    "SCOPES": {"openid": "OpenID Connect", "email": "E-mail address", "profile": "Profile"},
    "PKCE_REQUIRED": True,
}
