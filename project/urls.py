from django.contrib import admin
from django.urls import include, path

from contextstore.views import health, sso

# A database outage raised outside a view (a middleware) answers 503; anything else the 500 page.
handler500 = "contextstore.outage.server_error"

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", health.metrics, name="metrics"),
    path("api/", include("contextstore.api.urls")),
    # The OpenAI Conversations API: OpenAI(base_url=f"{server}/openai/v1", api_key=<API token>)
    path("openai/", include("contextstore.api.openai_urls")),
    path("admin/login/", sso.admin_login),  # with LOCAL_PASSWORDS off: the dashboard's sign-on
    path("admin/", admin.site.urls),
    path("accounts/login/", sso.LoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("oidc/", include("mozilla_django_oidc.urls")),  # sign-on start, callback (off: 404)
    path("", include("contextstore.urls")),
]
