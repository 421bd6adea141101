from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from contextstore.api import sync, views
from contextstore.api.exceptions import api_not_found

router = SimpleRouter()
router.register("sessions", views.SessionViewSet, basename="session")
router.register("threads", views.ThreadViewSet, basename="thread")
router.register(r"threads/(?P<thread_pk>[0-9]+)/sync", sync.ThreadSyncViewSet, basename="thread-sync")
router.register("collapses", views.CollapseViewSet, basename="collapse")
router.register("runs", views.RunViewSet, basename="run")
router.register("memories", views.MemoryViewSet, basename="memory")
router.register("jobs", views.JobViewSet, basename="job")

app_name = "api"
urlpatterns = [
    path("v1/", include(router.urls)),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    re_path(r"^[\s\S]*$", api_not_found),  # any path, newlines included
]
