"""Agent API v1: thin views that parse, call one service, and serialize. Here: sessions,
collapses, runs, memories and jobs; /threads/ is api/threads.py and its subject modules.

Every queryset is scoped to the token's workspace in get_queryset, so another workspace's
object is a 404. Writes need a write-scoped token (permissions.TokenScope).
"""

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api import serializers as s
from contextstore.api.common import actor_of, body, parse, token_of
from contextstore.api.pagination import SearchResultsPagination
from contextstore.models import Collapse, Job, Run, Session
from contextstore.selectors.sessions import session_threads, workspace_sessions
from contextstore.selectors.workspaces import memory_recall
from contextstore.services import collapses, memories, runs, sessions

# ---------------------------------------------------------------------------- sessions

@extend_schema(tags=["sessions"])
class SessionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.SessionSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[Session]:
        if self.action == "list":
            query = parse(s.SessionQuerySerializer, self.request.query_params)
            return workspace_sessions(workspace=token_of(self.request).workspace, **query)
        return Session.objects.filter(workspace=token_of(self.request).workspace)

    @extend_schema(parameters=[s.SessionQuerySerializer])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=s.SessionUpsertSerializer,
                   responses={200: s.SessionSerializer, 201: s.SessionSerializer},
                   summary="Upsert a session by (user_id, key)")
    def create(self, request: Request) -> Response:
        data = parse(s.SessionUpsertSerializer, body(request))
        session, created = sessions.session_ensure(
            workspace=token_of(request).workspace, actor=actor_of(request), **data)
        return Response(s.SessionSerializer(session).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(request=s.SessionPatchSerializer, responses=s.SessionSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        session = self.get_object()
        data = parse(s.SessionPatchSerializer, body(request))
        session = sessions.session_update(session=session, actor=actor_of(request), **data)
        return Response(s.SessionSerializer(session).data)

    @extend_schema(responses={204: None}, summary="Delete a session and all its history")
    def destroy(self, request: Request, pk: str) -> Response:
        sessions.session_delete(session=self.get_object(), actor=actor_of(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses=s.ThreadSerializer(many=True))
    @action(detail=True, methods=["get"], serializer_class=s.ThreadSerializer)
    def threads(self, request: Request, pk: str) -> Response:
        session = self.get_object()
        qs = session_threads(session=session).select_related("session")
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(s.ThreadSerializer(page, many=True).data)


# ---------------------------------------------------------------------------- the rest

@extend_schema(tags=["collapses"])
class CollapseViewSet(viewsets.GenericViewSet):
    serializer_class = s.CollapseSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[Collapse]:
        return Collapse.objects.filter(thread__workspace=token_of(self.request).workspace).select_related(
            "thread", "summary_event__run")

    @extend_schema(request=None, responses=s.CollapseSerializer)
    @action(detail=True, methods=["post"])
    def undo(self, request: Request, pk: str) -> Response:
        collapse = collapses.collapse_undo(collapse=self.get_object(), actor=actor_of(request))
        return Response(s.CollapseSerializer(self.get_queryset().get(pk=collapse.pk)).data)


@extend_schema(tags=["runs"])
class RunViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.RunSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[Run]:
        return Run.objects.filter(thread__workspace=token_of(self.request).workspace)

    def _finish(self, request: Request, final: str) -> Response:
        data = parse(s.RunFinishSerializer, request.data if request.data else {})
        run = runs.run_finish(run=self.get_object(), status=final, actor=actor_of(request),
                              error=data["error"])
        return Response(s.RunSerializer(run).data)

    @extend_schema(request=s.RunFinishSerializer, responses=s.RunSerializer)
    @action(detail=True, methods=["post"])
    def complete(self, request: Request, pk: str) -> Response:
        return self._finish(request, Run.Status.COMPLETED)

    @extend_schema(request=s.RunFinishSerializer, responses=s.RunSerializer)
    @action(detail=True, methods=["post"])
    def fail(self, request: Request, pk: str) -> Response:
        return self._finish(request, Run.Status.FAILED)

    @extend_schema(request=s.RunFinishSerializer, responses=s.RunSerializer)
    @action(detail=True, methods=["post"])
    def interrupt(self, request: Request, pk: str) -> Response:
        return self._finish(request, Run.Status.INTERRUPTED)


@extend_schema(tags=["memories"])
class MemoryViewSet(viewsets.GenericViewSet):
    serializer_class = s.MemorySerializer
    pagination_class = SearchResultsPagination

    @extend_schema(parameters=[s.MemoryQuerySerializer], responses=s.MemorySerializer(many=True),
                   summary="Recall memories (newest first; a search, so never more than limit)")
    def list(self, request: Request) -> Response:
        query = parse(s.MemoryQuerySerializer, request.query_params)
        found = self.paginate_queryset(
            memory_recall(workspace=token_of(request).workspace, **query))
        return self.get_paginated_response(s.MemorySerializer(found, many=True).data)

    @extend_schema(request=s.MemoryInSerializer,
                   responses={200: s.MemorySerializer, 201: s.MemorySerializer})
    def create(self, request: Request) -> Response:
        data = parse(s.MemoryInSerializer, body(request))
        memory, created = memories.memory_remember(workspace=token_of(request).workspace,
                                                   actor=actor_of(request), **data)
        return Response(s.MemorySerializer(memory).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


@extend_schema(tags=["jobs"])
class JobViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.JobSerializer
    lookup_value_regex = "[0-9a-fA-F-]{32,36}"  # DRF turns a malformed UUID into a 404

    def get_queryset(self) -> QuerySet[Job]:
        return Job.objects.filter(workspace=token_of(self.request).workspace)
