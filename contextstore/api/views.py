"""Agent API v1: thin views that parse, call one service, and serialize.

Every queryset is scoped to the token's workspace in get_queryset, so another workspace's
object is a 404. Writes need a write-scoped token (permissions.TokenScope).
"""

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api import serializers as s
from contextstore.api.blocks import ThreadBlockActions
from contextstore.api.common import (
    ThreadResponses,
    actor_of,
    body,
    if_match_revision,
    note_read,
    page_url,
    parse,
    token_of,
)
from contextstore.api.history import ThreadHistoryActions
from contextstore.api.pagination import SearchResultsPagination
from contextstore.api.parsers import LimitedJSONParser, MergePatchParser
from contextstore.api.providers import ThreadProviderActions
from contextstore.api.state import ThreadStateActions
from contextstore.errors import DomainError
from contextstore.llm_models import thread_model_settings
from contextstore.models import Collapse, Job, ReadAudit, Run, Session, Thread
from contextstore.selectors import rendering
from contextstore.selectors.events import event_search
from contextstore.selectors.renders import render_tools
from contextstore.selectors.sessions import session_threads, workspace_sessions
from contextstore.selectors.threads import BIGINT_MAX, thread_data_of_workspace, thread_of_workspace
from contextstore.selectors.workspaces import memory_recall
from contextstore.services import (
    collapses,
    events,
    memories,
    renders,
    runs,
    sessions,
    state,
    threads,
)
from contextstore.services.common import THREAD_STATE_FIELDS, UNSET

EVENTS_PAGE_SIZE = 500


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


# ---------------------------------------------------------------------------- threads

@extend_schema(tags=["threads"])
class ThreadViewSet(ThreadHistoryActions, ThreadStateActions, ThreadBlockActions, ThreadProviderActions,
                    ThreadResponses, mixins.RetrieveModelMixin, mixins.DestroyModelMixin,
                    viewsets.GenericViewSet):
    # /threads/: the thread itself, its events (append, query) and its context render here; the
    # other sub-resources' actions come from the mixins (api/history.py, state.py, blocks.py,
    # providers.py), so every URL and operation id stays /threads/{id}/... (a comment, not a
    # docstring: drf-spectacular would copy a docstring into every operation's description).

    serializer_class = s.ThreadSerializer
    lookup_value_regex = "[0-9]+"
    parser_classes = [LimitedJSONParser, MergePatchParser]

    def get_queryset(self) -> QuerySet[Thread]:
        qs = Thread.objects.filter(workspace=token_of(self.request).workspace).select_related("session")
        if self.action == "events":  # reading and appending history never touch the state
            qs = qs.defer(*THREAD_STATE_FIELDS)
        return qs

    def get_object(self, *, with_session: bool = True) -> Thread:
        # get_queryset's thread, read through a query compiled once per process: every agent
        # step reads its thread, and building the queryset cost more than running it.
        thread = thread_of_workspace(
            workspace_id=token_of(self.request).workspace_id, pk=int(self.kwargs["pk"]),
            history_only=self.action == "events", with_session=with_session)
        if thread is None:
            raise Http404
        self.check_object_permissions(self.request, thread)
        return thread

    def retrieve(self, request: Request, pk: str) -> Response:
        # One row, the workspace in its WHERE, printed as ThreadSerializer prints a thread:
        # the read of every agent step, without a model instance or the serializer's machinery.
        # No object permission to check: TokenScope has none, and any token reads.
        row = thread_data_of_workspace(workspace_id=token_of(request).workspace_id, pk=int(pk))
        if row is None:
            raise Http404
        return Response(s.thread_data(row))

    @extend_schema(responses={204: None}, summary="Delete a forked thread (the inverse of fork)",
                   description="Only forks; the parent is untouched and keeps every original. "
                               "What the fork added after forking is deleted with it, for good "
                               "(the audit log records the deletion). Not a fork: 409 not_a_fork.")
    def destroy(self, request: Request, pk: str) -> Response:
        threads.thread_delete_fork(thread=self.get_object(), actor=actor_of(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=s.ThreadEnsureSerializer,
                   responses={200: s.ThreadSerializer, 201: s.ThreadSerializer},
                   summary="Create the session and thread as needed; return the thread")
    @action(detail=False, methods=["post"])
    def ensure(self, request: Request) -> Response:
        data = parse(s.ThreadEnsureSerializer, body(request))
        thread, created = sessions.thread_ensure_by_key(
            workspace=token_of(request).workspace, actor=actor_of(request), **data)
        return self.thread_response(thread, status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    # -- events

    @extend_schema(methods=["GET"], parameters=[s.EventQuerySerializer],
                   responses=s.EventPageSerializer, summary="Query events (oldest first)")
    @extend_schema(methods=["POST"], request=s.EventBatchSerializer,
                   responses={201: s.AppendResultSerializer, 200: s.AppendResultSerializer},
                   summary="Append a batch of events (idempotent per client_id)")
    @action(detail=True, methods=["get", "post"], pagination_class=None)
    def events(self, request: Request, pk: str) -> Response:
        if request.method == "POST":
            return self._append(request, pk)
        thread = self.get_object()
        query = parse(s.EventQuerySerializer, request.query_params)
        page_size = query.pop("page_size", EVENTS_PAGE_SIZE)
        types = query.pop("type", [])
        filters = {k: v for k, v in query.items() if v not in (None, "")}
        if "q" in filters:
            filters["text"] = filters.pop("q")
        found = event_search(thread=thread, types=types or None,
                             first=page_size + 1, **filters)
        more = len(found) > page_size
        found = found[:page_size]
        next_url = page_url(request, after_seq=found[-1].seq) if more else None
        note_read(request, ReadAudit.Action.EVENTS_READ, thread)
        return Response({"results": s.EventSerializer(found, many=True).data, "next": next_url})

    def _append(self, request: Request, pk: str) -> Response:
        # The thread is read once, by the append's row lock (by id and workspace): an append's
        # cost is its round trips. A request refused before that lock still answers 404 for a
        # thread this token can't see, as every other route on a thread does.
        thread_id = int(pk)
        if not 0 < thread_id <= BIGINT_MAX:
            raise Http404
        try:
            data = body(request)
            unknown = set(data) - {"events"}
            if unknown:
                raise ValidationError({sorted(unknown)[0]: "unknown field"})
            result = events.event_append(
                thread=Thread(pk=thread_id, workspace=token_of(request).workspace),
                events=data.get("events"), actor=actor_of(request))
        except Thread.DoesNotExist:
            raise Http404 from None
        except (APIException, DomainError):
            self.get_object()
            raise
        return Response(
            {"events": [{"seq": e.seq, "id": e.pk, "token_count": e.token_count,
                         "client_id": e.client_id} for e in result.events],
             "created": result.created},
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )

    # -- state

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

    # -- render, windows, peteos

    @extend_schema(parameters=[s.ContextQuerySerializer], responses=s.ContextSerializer)
    @action(detail=True, methods=["get"])
    def context(self, request: Request, pk: str) -> Response:
        query = parse(s.ContextQuerySerializer, request.query_params)
        # the session only for its model settings, which an explicit max_tokens overrides
        thread = self.get_object(with_session=not query.get("max_tokens"))
        if query["record"] and not token_of(request).can_write:
            raise PermissionDenied("Recording a render needs a token with write scope.")
        max_tokens = query.get("max_tokens") or thread_model_settings(thread).budget
        options = {"thread": thread, "max_tokens": max_tokens, "strip_thinking": query["strip_thinking"],
                   "fmt": query["format"], "on_oversize": query["on_oversize"],
                   "start_chunk": query.get("start_chunk"),
                   "tools": render_tools(workspace_id=thread.workspace_id,
                                         tools_hash=query.get("tools_hash"))}
        if not query["record"]:
            response = Response(rendering.render(**options).body)
        else:
            rendered, record = renders.context_render_recorded(**options, actor=actor_of(request))
            response = Response({**rendered.body, "render_id": str(record.pk)})
        note_read(request, ReadAudit.Action.CONTEXT_READ, thread)
        return response

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
