from django.urls import path

from contextstore.views import actions, cache, calls, otlp, sessions, spans, sso, threads, trends

app_name = "contextstore"

urlpatterns = [
    path("", sessions.session_list, name="sessions"),
    path("no-workspace/", sso.no_workspace, name="no-workspace"),
    path("sessions/<int:pk>/", sessions.session_detail, name="session"),
    path("sessions/<int:pk>/cache/", cache.session_cache_view, name="session-cache"),
    path("cache/", cache.workspace_cache_view, name="cache"),
    path("trends/", trends.workspace_trends_view, name="trends"),
    path("sessions/<int:pk>/archive/", sessions.session_archive_toggle, name="session-archive"),
    path("threads/<int:pk>/", threads.thread_detail, name="thread"),
    path("threads/<int:pk>/context/", threads.model_view, name="model-view"),
    path("threads/<int:pk>/jump/", threads.jump, name="jump"),
    path("threads/<int:pk>/events/<int:seq>/", threads.event_detail, name="event"),
    path("threads/<int:pk>/calls/<int:seq>/sent/", calls.call_sent, name="call-sent"),
    path("threads/<int:pk>/calls/<int:seq>/diff/", calls.call_diff, name="call-diff"),
    path("threads/<int:pk>/runs/<str:run_id>/spans/", spans.run_waterfall, name="run-spans"),
    path("threads/<int:pk>/export/", threads.thread_export_view, name="export"),
    path("threads/<int:pk>/export/size/", threads.export_size, name="export-size"),
    path("threads/<int:pk>/collapses/<int:collapse_id>/", threads.collapse_detail, name="collapse"),
    path("threads/<int:pk>/collapses/<int:collapse_id>/undo/", actions.collapse_undo,
         name="collapse-undo"),
    path("threads/<int:pk>/collapse/", actions.collapse_range, name="collapse-range"),
    path("threads/<int:pk>/summarize/", actions.summarize_range, name="summarize"),
    path("threads/<int:pk>/fork/", actions.fork_range, name="fork"),
    path("threads/<int:pk>/clear/", actions.clear_context, name="clear"),
    path("threads/<int:pk>/clears/<int:clear_id>/undo/", actions.unclear, name="unclear"),
    path("threads/<int:pk>/delete/", actions.delete_fork, name="delete-fork"),
    path("threads/<int:pk>/reset/", actions.reset, name="reset"),
    path("threads/<int:pk>/reset-all/", actions.reset_all, name="reset-all"),
    path("threads/<int:pk>/blocks/", actions.block_save, name="block-save"),
    path("threads/<int:pk>/blocks/delete/", actions.block_delete, name="block-delete"),
    path("threads/<int:pk>/blocks/restore/", actions.block_restore, name="block-restore"),
    path("threads/<int:pk>/state/diff/", actions.state_diff, name="state-diff"),
    path("threads/<int:pk>/state/restore/", actions.state_restore, name="state-restore"),
    # OTLP/HTTP: OTEL_EXPORTER_OTLP_ENDPOINT=<host>/otlp
    path("otlp/v1/traces", otlp.traces, name="otlp-traces"),
    path("otlp/v1/logs", otlp.logs, name="otlp-logs"),
    path("jobs/<uuid:job_id>/", actions.job_status, name="job"),
    path("threads/<int:pk>/jobs/<uuid:job_id>/cancel/", actions.job_cancel, name="job-cancel"),
    path("threads/<int:pk>/jobs/<uuid:job_id>/retry/", actions.job_retry, name="job-retry"),
]
