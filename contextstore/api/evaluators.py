"""Evaluators through the API (services/evaluators.py; docs/api.md "Evaluation").

GET/POST /api/v1/evaluators/, GET/PATCH /api/v1/evaluators/{id}/ (a change of model, prompt or
config adds a version; name, enabled, sample_rate and the filters do not),
GET /api/v1/evaluators/{id}/versions/ and /evaluations/ (the online run's newest, failures with
their error). Reading needs any token, changing a write token; another workspace's evaluator is
a 404."""

from typing import Any

import json_merge_patch
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore import evaluatorspec
from contextstore.api.common import actor_of, body, parse, token_of
from contextstore.api.serializers import NOT_BLANK, NOT_BLANK_NO_NUL, _only
from contextstore.models import Evaluation, Evaluator, EvaluatorVersion
from contextstore.services import evaluators

RECENT = 100  # evaluations listed


class EvaluatorVersionSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author_label", read_only=True)
    config = serializers.JSONField(read_only=True)

    class Meta:
        model = EvaluatorVersion
        fields = ["number", "model", "prompt", "config", "author", "created_at"]
        read_only_fields = fields


class EvaluatorSerializer(serializers.ModelSerializer):
    version = serializers.SerializerMethodField(help_text="The version the online run uses now.")

    class Meta:
        model = Evaluator
        fields = ["id", "name", "kind", "target", "enabled", "sample_rate", "filter_agent",
                  "filter_model", "version", "created_at", "updated_at"]
        read_only_fields = fields

    @extend_schema(responses=EvaluatorVersionSerializer)
    def get_version(self, evaluator: Evaluator) -> dict[str, Any]:
        return dict(EvaluatorVersionSerializer(evaluator.latest).data)


NAME = f"^[^\\u0000:]*[^\\u0000:{NOT_BLANK[2:]}[^\\u0000:]*$"  # no ':', not blank once trimmed
OUTPUT_NAMED = "^[^\\u0000]*[{][{]output[}][}][^\\u0000]*$"  # braces in classes: the fuzzer's parser
NAMES = {"type": "array", "minItems": 1,
         "items": {"type": "string", "maxLength": 200, "pattern": NOT_BLANK_NO_NUL}}
# A JSON Schema's common keywords, typed as Draft 2020-12 takes them (any other is allowed too).
SCHEMA_TYPES = ["null", "boolean", "object", "array", "number", "string", "integer"]
JSON_SCHEMA = {"type": "object", "description": "A JSON Schema (Draft 2020-12).", "properties": {
    "type": {"oneOf": [{"enum": SCHEMA_TYPES},
                       {"type": "array", "items": {"enum": SCHEMA_TYPES}, "uniqueItems": True}]},
    "required": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    "properties": {"type": "object", "additionalProperties": {"type": "object"}},
    "items": {"type": "object"},
    "minimum": {"type": "number"}, "maximum": {"type": "number"},
    "minLength": {"type": "integer", "minimum": 0}, "maxLength": {"type": "integer", "minimum": 0},
    "pattern": {"type": "string", "format": "regex"}}}
# Each kind's settings (evaluatorspec), as `config` takes them.
CONFIGS: dict[str, dict[str, Any]] = {
    "llm_judge": {"type": "object", "properties": {
        "score_type": {"enum": list(evaluatorspec.SCORE_TYPES)}, "categories": NAMES}},
    "regex": {"type": "object", "required": ["pattern"], "properties": {
        "pattern": {"type": "string", "format": "regex", "minLength": 1, "maxLength": 2000},
        "ignore_case": {"type": "boolean"}, "must_match": {"type": "boolean"}}},
    "json_schema": {"type": "object", "required": ["schema"], "properties": {"schema": JSON_SCHEMA}},
    "tool_call": {"type": "object", "properties": {
        "check": {"enum": list(evaluatorspec.TOOL_CHECKS)},
        "tool": {"type": "string", "maxLength": 200, "pattern": NOT_BLANK_NO_NUL},
        "arguments": {"type": "object"}},
        # called (the default) and not_called name the tool
        "anyOf": [{"required": ["check"], "properties": {"check": _only("no_failed")}},
                  {"required": ["tool"]}]},
    "cost_limit": {"type": "object", "required": ["max_cost"],
                   "properties": {"max_cost": {"type": "number", "minimum": 0}}},
    "latency_limit": {"type": "object", "required": ["max_ms"],
                      "properties": {"max_ms": {"type": "number", "exclusiveMinimum": True, "minimum": 0}}},
}
JUDGE_FIELDS = {"model": {"maxLength": 200, "pattern": NOT_BLANK_NO_NUL},
                "prompt": {"pattern": OUTPUT_NAMED}}


class EvaluatorInSerializer(serializers.Serializer):
    schema_rules = {
        "description": "The kind's settings in `config`; a judge's `model` and `prompt` (which names "
                       "{{output}}).",
        "properties": {"name": {"pattern": NAME}},
        "oneOf": [{"required": ["kind", *(("model", "prompt") if kind == "llm_judge" else ("config",))],
                   "properties": {"kind": _only(kind), "config": CONFIGS[kind],
                                  **(JUDGE_FIELDS if kind == "llm_judge" else {})}}
                  for kind in evaluatorspec.KINDS],
    }

    name = serializers.CharField(max_length=100,
                                 help_text="The scores' name: at most 100 characters, no ':'.")
    kind = serializers.ChoiceField(choices=Evaluator.Kind.choices)
    target = serializers.ChoiceField(choices=Evaluator.Target.choices, default="call")
    enabled = serializers.BooleanField(default=True)
    sample_rate = serializers.FloatField(
        default=1.0, min_value=0, max_value=1,
        help_text="The share of new calls (sessions) scored, 0 to 1; which ones is decided by each one's id.")
    filter_agent = serializers.CharField(max_length=200, allow_blank=True, default="",
                                         help_text="Only sessions of this agent (any case).")
    filter_model = serializers.CharField(max_length=200, allow_blank=True, default="",
                                         help_text="Only calls to this model (sessions that used it).")
    model = serializers.CharField(max_length=200, allow_blank=True, default="",
                                  help_text="The judge's model.")
    prompt = serializers.CharField(max_length=evaluatorspec.MAX_PROMPT, allow_blank=True, default="",
                                   trim_whitespace=False,
                                   help_text="The judge's prompt; {{input}} and {{output}} are filled in.")
    config = serializers.JSONField(default=dict, help_text="The kind's settings: see docs/api.md "
                                   "(pattern, schema, check/tool/arguments, max_cost, max_ms, score_type).")


class EvaluatorPatchSerializer(EvaluatorInSerializer):
    # The kind is the stored evaluator's: `config` is merged into its current settings (a JSON
    # merge patch: null removes a key), and each key keeps its kind's rule.
    schema_rules = {
        # (the prompt's rule in a branch: the fuzzer cannot merge it with its maxLength)
        "allOf": [{"properties": {"prompt": JUDGE_FIELDS["prompt"]}}],
        "properties": {"name": {"pattern": NAME}, "model": JUDGE_FIELDS["model"], "config": {
            "type": "object", "description": "Merged into the current settings, key by key.",
            "properties": {key: rule for kind in evaluatorspec.KINDS
                           for key, rule in CONFIGS[kind]["properties"].items()},
            # a check that names a tool comes with it
            "anyOf": [{"not": {"required": ["check"]}},
                      {"required": ["check"], "properties": {"check": _only("no_failed")}},
                      {"required": ["tool"]}]}}}

    kind = None  # type: ignore[assignment]  # an evaluator keeps its kind (its scores' meaning)
    target = None  # type: ignore[assignment]

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        for field in fields.values():
            field.required = False
            field.default = serializers.empty
        return fields


class EvaluationSerializer(serializers.ModelSerializer):
    version = serializers.IntegerField(source="version.number", read_only=True)

    class Meta:
        model = Evaluation
        fields = ["id", "version", "session", "thread", "seq", "status", "score", "error", "raw",
                  "attempts", "created_at", "finished_at"]
        read_only_fields = fields


@extend_schema(tags=["evaluators"])
class EvaluatorViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = EvaluatorSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[Evaluator]:
        return Evaluator.objects.filter(workspace=token_of(self.request).workspace)

    @extend_schema(request=EvaluatorInSerializer, responses={201: EvaluatorSerializer},
                   summary="Create an evaluator (its version 1)")
    def create(self, request: Request) -> Response:
        data = parse(EvaluatorInSerializer, body(request))
        settings = evaluatorspec.evaluator_settings(
            name=data["name"], target=data["target"], sample_rate=data["sample_rate"],
            filter_agent=data["filter_agent"], filter_model=data["filter_model"])
        version = evaluatorspec.evaluator_version(kind=data["kind"], model=data["model"],
                                                  prompt=data["prompt"], config=data["config"])
        evaluator = evaluators.evaluator_create(
            workspace=token_of(request).workspace, actor=actor_of(request), kind=data["kind"],
            enabled=data["enabled"], **settings, **version)
        return Response(EvaluatorSerializer(evaluator).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=EvaluatorPatchSerializer, responses=EvaluatorSerializer,
                   summary="Change an evaluator (a new version when model, prompt or config change)")
    def partial_update(self, request: Request, pk: str) -> Response:
        evaluator = self.get_object()
        data = parse(EvaluatorPatchSerializer, body(request))
        latest = evaluator.latest
        settings = evaluatorspec.evaluator_settings(
            name=data.get("name", evaluator.name), target=evaluator.target,
            sample_rate=data.get("sample_rate", evaluator.sample_rate),
            filter_agent=data.get("filter_agent", evaluator.filter_agent),
            filter_model=data.get("filter_model", evaluator.filter_model))
        settings.pop("target")
        if "enabled" in data:
            settings["enabled"] = data["enabled"]
        version = None
        if {"model", "prompt", "config"} & data.keys():
            version = evaluatorspec.evaluator_version(
                kind=evaluator.kind, model=data.get("model", latest.model),
                prompt=data.get("prompt", latest.prompt),
                config=json_merge_patch.merge(latest.config, data["config"])
                if isinstance(data.get("config"), dict) else data.get("config", latest.config))
        evaluator = evaluators.evaluator_update(evaluator=evaluator, actor=actor_of(request),
                                                fields=settings, version=version)
        return Response(EvaluatorSerializer(evaluator).data)

    @extend_schema(responses=EvaluatorVersionSerializer(many=True),
                   summary="An evaluator's versions, newest first")
    @action(detail=True, methods=["get"], pagination_class=None)
    def versions(self, request: Request, pk: str) -> Response:
        evaluator = self.get_object()
        return Response(EvaluatorVersionSerializer(evaluator.versions.all(), many=True).data)

    @extend_schema(responses=EvaluationSerializer(many=True),
                   summary=f"The online run's newest evaluations (at most {RECENT}), failures included")
    @action(detail=True, methods=["get"], pagination_class=None)
    def evaluations(self, request: Request, pk: str) -> Response:
        evaluator = self.get_object()
        rows = evaluator.evaluations.select_related("version").order_by("-id")[:RECENT]
        return Response(EvaluationSerializer(rows, many=True).data)
