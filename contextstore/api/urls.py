from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from contextstore.api import (
    blocks,
    clears,
    erasures,
    history,
    model_settings,
    providers,
    renders,
    retention,
    revisions,
    scores,
    state,
    store,
    sync,
    threads,
    views,
)
from contextstore.api.agent_sessions import AgentSessionViewSet
from contextstore.api.annotation import AnnotationItemViewSet, AnnotationQueueViewSet, ScoreConfigViewSet
from contextstore.api.datasets import DatasetViewSet, dataset_items
from contextstore.api.evaluators import EvaluatorViewSet
from contextstore.api.exceptions import api_not_found
from contextstore.api.experiments import ExperimentViewSet
from contextstore.api.monitoring import AlertEventViewSet, AlertRuleViewSet, SavedViewViewSet

router = SimpleRouter()
router.register("sessions", views.SessionViewSet, basename="session")
# /threads/{id}/...: one viewset per subject, registered before the nested routes below (the
# state revisions' list is ThreadStateViewSet's action).
router.register("threads", threads.ThreadViewSet, basename="thread")
router.register("threads", history.ThreadHistoryViewSet, basename="thread-history")
router.register("threads", state.ThreadStateViewSet, basename="thread-state")
router.register("threads", blocks.ThreadBlockViewSet, basename="thread-block")
router.register("threads", providers.ThreadProviderViewSet, basename="thread-provider")
router.register("threads", renders.ThreadRenderViewSet, basename="thread-render")
router.register(r"threads/(?P<thread_pk>[0-9]+)/state/revisions", revisions.RevisionViewSet,
                basename="thread-revision")
router.register(r"threads/(?P<thread_pk>[0-9]+)/clears", clears.ClearViewSet, basename="thread-clear")
router.register("threads", model_settings.ThreadModelViewSet, basename="thread-model")
router.register("sessions", model_settings.SessionModelViewSet, basename="session-model")
router.register("sessions", retention.SessionRetentionViewSet, basename="session-retention")
router.register(r"threads/(?P<thread_pk>[0-9]+)/sync", sync.ThreadSyncViewSet, basename="thread-sync")
router.register("collapses", views.CollapseViewSet, basename="collapse")
router.register("runs", views.RunViewSet, basename="run")
router.register("memories", views.MemoryViewSet, basename="memory")
router.register("jobs", views.JobViewSet, basename="job")
router.register("renders", renders.RenderViewSet, basename="render")
router.register("agent-sessions", AgentSessionViewSet, basename="agent-session")
router.register("erasures", erasures.ErasureViewSet, basename="erasure")
router.register(r"sessions/(?P<session_pk>[0-9]+)/scores", scores.SessionScoreViewSet,
                basename="session-score")
router.register(r"threads/(?P<thread_pk>[0-9]+)/events/(?P<seq>[0-9]+)/scores",
                scores.CallScoreViewSet, basename="call-score")
router.register("datasets", DatasetViewSet, basename="dataset")
router.register("score-configs", ScoreConfigViewSet, basename="score-config")
router.register("annotation-queues", AnnotationQueueViewSet, basename="annotation-queue")
router.register(r"annotation-queues/(?P<queue_pk>[0-9]+)/items", AnnotationItemViewSet,
                basename="annotation-item")
router.register("saved-views", SavedViewViewSet, basename="saved-view")
router.register("alert-rules", AlertRuleViewSet, basename="alert-rule")
router.register("alert-events", AlertEventViewSet, basename="alert-event")
router.register("evaluators", EvaluatorViewSet, basename="evaluator")
router.register("experiments", ExperimentViewSet, basename="experiment")

app_name = "api"
urlpatterns = [
    path("v1/workspace/retention/", retention.WorkspaceRetentionView.as_view(),
         name="workspace-retention"),
    path("v1/datasets/<int:pk>/items.jsonl", dataset_items, name="dataset-items"),
    path("v1/store/batch/", store.StoreBatchView.as_view(), name="store-batch"),
    path("v1/", include(router.urls)),
    # What no block route took: a name holding "/" gets an answer naming the rule.
    re_path(r"^v1/threads/(?P<pk>[0-9]+)/blocks/(?P<rest>[\s\S]+)$", blocks.block_path_not_found),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    re_path(r"^[\s\S]*$", api_not_found),  # any path, newlines included
]
