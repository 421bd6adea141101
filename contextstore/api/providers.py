"""A thread's settings and side records under /api/v1/threads/{id}/: the summarizer, runs,
provider states."""

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api import serializers as s
from contextstore.api.common import ThreadSubjectViewSet, actor_of, body, parse
from contextstore.errors import InvalidInput, NotFound
from contextstore.selectors.threads import provider_state, thread_runs
from contextstore.services import (
    memories,
    summaries,
)
from contextstore.summarizers import BACKENDS


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "nullable": True}


# What services/summaries/config.summarizer_config_clean takes.
SUMMARIZER_SETTING = _nullable({"type": "object", "additionalProperties": False, "properties": {
    "token_budget": _nullable({"type": "object", "additionalProperties": False,
                               "x-at-most": {"summary_max_tokens": "max_tokens / 2"}, "properties": {
        "max_tokens": _nullable({"type": "integer", "minimum": 256, "maximum": 10_000_000}),
        "preserve_recent": {"type": "integer", "minimum": 0, "maximum": 10_000},
        "summary_max_tokens": {"type": "integer", "minimum": 64, "maximum": 5_000_000,
                               "description": "At most half of max_tokens."},
    }}),
    "per_run": _nullable({"type": "object", "additionalProperties": False, "properties": {
        "min_events": {"type": "integer", "minimum": 1, "maximum": 1_000_000}}}),
    "backend": _nullable({"type": "string", "enum": list(BACKENDS)}),
    "model": _nullable({"type": "string", "minLength": 1, "maxLength": 200}),
}})


@extend_schema(tags=["threads"])
class ThreadProviderViewSet(ThreadSubjectViewSet):
    # /threads/{id}/summarizer|runs|providers/{name}/.
    # (no docstring: drf-spectacular would copy it into every operation description)

    @extend_schema(request={"application/json": SUMMARIZER_SETTING}, responses=s.ThreadSerializer,
                   summary="Set the thread's automatic summarizer",
                   description='Body: {"token_budget": {...}, "per_run": {...}}; `{}` turns '
                               "summarization off for this thread even under a workspace "
                               "default; `null` removes the setting (the default applies again).")
    @action(detail=True, methods=["put"])
    def summarizer(self, request: Request, pk: str) -> Response:
        thread = self.get_object()
        if request.META.get("CONTENT_LENGTH") in (None, "", "0"):
            raise ValidationError({"non_field_errors": ["Send a JSON object, or null to remove."]})
        config = request.data
        if config is not None and not isinstance(config, dict):
            raise ValidationError({"non_field_errors": ["The body must be a JSON object or null."]})
        thread = summaries.summarizer_configure(thread=thread, config=config, actor=actor_of(request))
        return self.thread_response(thread)

    # -- runs and providers

    @extend_schema(responses=s.RunSerializer(many=True))
    @action(detail=True, methods=["get"], url_path="runs")
    def run_list(self, request: Request, pk: str) -> Response:
        page = self.paginate_queryset(thread_runs(thread=self.get_object()))
        return self.get_paginated_response(s.RunSerializer(page, many=True).data)

    @extend_schema(methods=["GET"], responses=s.ProviderStateSerializer)
    @extend_schema(methods=["PUT"], request=s.ProviderStateInSerializer,
                   responses=s.ProviderStateSerializer)
    @action(detail=True, methods=["get", "put"], url_path=r"providers/(?P<name>[^/]+)")
    def provider(self, request: Request, pk: str, name: str) -> Response:
        thread = self.get_object()
        if request.method == "PUT":
            if len(name) > 200:  # the name is the URL's, so no serializer sees it
                raise InvalidInput("provider name is required (at most 200 characters).")
            data = parse(s.ProviderStateInSerializer, body(request))
            obj = memories.provider_state_put(thread=thread, provider=name, state=data["state"],
                                              actor=actor_of(request))
        else:
            found = provider_state(thread=thread, provider=name)
            if found is None:
                raise NotFound(f"No state for provider {name!r} on this thread.")
            obj = found
        return Response(s.ProviderStateSerializer(obj).data)
