from django.contrib import admin
from django.urls import include, path

from contextstore.views import health

# A database outage raised outside a view (a middleware) answers 503; anything else the 500 page.
handler500 = "contextstore.outage.server_error"

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("api/", include("contextstore.api.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("contextstore.urls")),
]
