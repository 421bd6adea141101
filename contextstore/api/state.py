"""A thread's document under /api/v1/threads/{id}/: its state (GET/PUT/PATCH), state revisions
and restore, the clientai operations (input, results, iteration, max history size, history,
reset, reset-all) and clear-context."""


from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api import serializers as s
from contextstore.api.common import ThreadSubjectViewSet, actor_of, body, if_match_revision, parse
from contextstore.errors import NotFound
from contextstore.selectors.document import revision_documents
from contextstore.selectors.threads import thread_revisions
from contextstore.services import (
    clientai,
    state,
    threads,
)
from contextstore.services.common import UNSET


@extend_schema(tags=["threads"])
class ThreadStateViewSet(ThreadSubjectViewSet):
    # /threads/{id}/state/, state/revisions/, input/, results/, iteration/, reset/, clear-context/ ...
    # (no docstring: drf-spectacular would copy it into every operation description)

    @extend_schema(methods=["GET"], responses=s.StateSerializer)
    @extend_schema(methods=["PUT", "PATCH"], request=s.StateWriteSerializer,
                   parameters=[OpenApiParameter("If-Match", str, OpenApiParameter.HEADER,
                                                description='The revision ETag, e.g. "3".')],
                   responses=s.StateSerializer,
                   description="PUT replaces state/memory; PATCH applies a JSON merge patch "
                               "(RFC 7386). A stale If-Match is refused with 412.")
    @action(detail=True, methods=["get", "put", "patch"], url_path="state")
    def state(self, request: Request, pk: str) -> Response:
        thread = self.get_object()
        if request.method == "GET":
            return self.state_response(thread)
        expected = if_match_revision(request)
        data = parse(s.StateWriteSerializer, body(request))
        thread = state.state_write(
            thread=thread, actor=actor_of(request), state=data.get("state", UNSET),
            memory=data.get("memory", UNSET), summary=data.get("summary", UNSET),
            reason=data.get("reason", ""),
            merge=request.method == "PATCH", expected_revision=expected)
        return self.state_response(thread)

    @extend_schema(responses=s.StateRevisionSerializer(many=True))
    @action(detail=True, methods=["get"], url_path="state/revisions")
    def revisions(self, request: Request, pk: str) -> Response:
        thread = self.get_object()
        self.paginator.ordering = "revision"
        page = self.paginate_queryset(thread_revisions(thread=thread))
        docs = revision_documents(thread=thread, revisions=[r.revision for r in page])
        return self.get_paginated_response(
            s.StateRevisionSerializer(page, many=True, context={"documents": docs}).data)

    @extend_schema(request=None, responses=s.StateSerializer,
                   parameters=[OpenApiParameter("If-Match", str, OpenApiParameter.HEADER)])
    @action(detail=True, methods=["post"], url_path=r"state/revisions/(?P<revision>[0-9]+)/restore")
    def restore(self, request: Request, pk: str, revision: str) -> Response:
        thread = state.state_restore(thread=self.get_object(), revision=int(revision),
                                     actor=actor_of(request),
                                     expected_revision=if_match_revision(request))
        return self.state_response(thread)

    # -- clientai

    @extend_schema(request=s.InputSerializer, responses=s.StateSerializer)
    @action(detail=True, methods=["post"], url_path="input")
    def set_input(self, request: Request, pk: str) -> Response:
        data = parse(s.InputSerializer, body(request))
        thread = clientai.thread_set_input(thread=self.get_object(), input_data=data["input"],
                                           actor=actor_of(request),
                                           timestamp=data.get("timestamp"))
        return self.state_response(thread)

    @extend_schema(request=s.StepResultInSerializer, responses=s.StepResultSerializer)
    @action(detail=True, methods=["post"], url_path="results")
    def results(self, request: Request, pk: str) -> Response:
        data = parse(s.StepResultInSerializer, body(request))
        thread = clientai.thread_set_step_result(thread=self.get_object(), step=data["step"],
                                                 result=data["result"], actor=actor_of(request))
        return Response({"step": data["step"], "result": thread.last_results[data["step"]]})

    @extend_schema(responses=s.StepResultSerializer)
    @action(detail=True, methods=["get"], url_path=r"results/(?P<step>[^/]+)")
    def result(self, request: Request, pk: str, step: str) -> Response:
        thread = self.get_object()
        if step not in thread.last_results:
            raise NotFound(f"No result for step {step!r}.", details={"step": step})
        return Response({"step": step, "result": clientai.thread_get_step_result(thread=thread, step=step)})

    @extend_schema(request=None, responses=s.IterationSerializer)
    @action(detail=True, methods=["post"])
    def iteration(self, request: Request, pk: str) -> Response:
        value = clientai.thread_increment_iteration(thread=self.get_object(), actor=actor_of(request))
        return Response({"iteration": value})

    @extend_schema(request=s.MaxHistorySizeSerializer, responses=s.StateSerializer)
    @action(detail=True, methods=["put"], url_path="max-history-size")
    def max_history_size(self, request: Request, pk: str) -> Response:
        data = parse(s.MaxHistorySizeSerializer, body(request))
        thread = clientai.thread_set_max_history_size(thread=self.get_object(), size=data["size"],
                                                      actor=actor_of(request))
        return self.state_response(thread)

    @extend_schema(parameters=[s.HistoryQuerySerializer],
                   responses={200: OpenApiResponse(
                       OpenApiTypes.ANY, description="raw: a list of interactions; "
                       "else {\"text\": ...} in clientai's format")})
    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str) -> Response:
        query = parse(s.HistoryQuerySerializer, request.query_params)
        result = clientai.recent_history(thread=self.get_object(), n=query.get("n"), raw=query["raw"])
        return Response(result if query["raw"] else {"text": result})

    @extend_schema(request=None, responses=s.StateSerializer, summary="clientai clear()")
    @action(detail=True, methods=["post"])
    def reset(self, request: Request, pk: str) -> Response:
        return self.state_response(clientai.thread_reset(thread=self.get_object(), actor=actor_of(request)))

    @extend_schema(request=None, responses=s.StateSerializer, summary="clientai clear_all()")
    @action(detail=True, methods=["post"], url_path="reset-all")
    def reset_all(self, request: Request, pk: str) -> Response:
        return self.state_response(
            clientai.thread_reset_all(thread=self.get_object(), actor=actor_of(request)))

    @extend_schema(request=None, responses=s.ClearedSerializer, summary="AgentScope clearContext")
    @action(detail=True, methods=["post"], url_path="clear-context")
    def clear_context(self, request: Request, pk: str) -> Response:
        clear = threads.thread_clear_context(thread=self.get_object(), actor=actor_of(request))
        return Response({"cleared": clear.event_count, "clear": s.ClearSerializer(clear).data})
