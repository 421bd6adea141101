"""Experiments through the API (services/experiments.py): a dataset run through a variant by a
worker, each output scored and kept beside its item.

GET/POST /api/v1/experiments/, GET /api/v1/experiments/{id}/, POST /api/v1/experiments/{id}/run/
(202: queued; again: the failed and missing items), GET /api/v1/experiments/{id}/results/ (one
per item, in the order they were sent, with their scores). Reading needs any token, creating and running a
write token; another workspace's experiment or dataset is a 404."""

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api.common import actor_of, body, parse, token_of
from contextstore.experimentspec import experiment_variant
from contextstore.models import Dataset, Experiment, ExperimentResult, ExperimentScore
from contextstore.selectors.experiments import experiment_summary, unknown_evaluators
from contextstore.services.experiments import experiment_create, experiment_start


class ExperimentInSerializer(serializers.Serializer):
    dataset = serializers.IntegerField(min_value=1, help_text="A dataset of the token's workspace.")
    name = serializers.CharField(max_length=200)
    system_prompt = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False,
                                          help_text="Replaces the recorded system prompt; blank keeps it.")
    template = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False,
                                     help_text="The last user message as sent; {input} stands for its "
                                               "recorded text; blank keeps it.")
    model = serializers.CharField(required=False, allow_blank=True, default="", max_length=200,
                                  help_text="Blank: each item's recorded model.")
    params = serializers.DictField(required=False, default=dict,
                                   help_text="temperature, top_p, presence_penalty, frequency_penalty, "
                                             "max_tokens, seed: laid over each item's own.")
    baseline = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1,
                                        help_text="Another experiment of the dataset; null: the "
                                                  "items' expected outputs.")
    evaluators = serializers.ListField(child=serializers.CharField(max_length=60), required=False,
                                       default=list, help_text='Evaluator ids, or "builtin:exact_match", '
                                                               '"builtin:similarity".')


class ExperimentSerializer(serializers.ModelSerializer):
    params = serializers.JSONField(read_only=True)
    evaluators = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Experiment
        fields = ["id", "dataset", "name", "system_prompt", "template", "model", "params", "baseline",
                  "evaluators", "status", "item_count", "done_count", "error_count", "actor",
                  "created_at", "started_at", "finished_at"]
        read_only_fields = fields


class ExperimentScoreSerializer(serializers.ModelSerializer):
    class Meta:
        model = ExperimentScore
        fields = ["target", "evaluator", "version", "name", "data_type", "value", "string_value", "reason",
                  "error", "raw"]
        read_only_fields = fields


class ExperimentResultSerializer(serializers.ModelSerializer):
    scores = ExperimentScoreSerializer(many=True, read_only=True)
    request = serializers.JSONField(read_only=True, help_text="The body sent, as sent.")
    tool_calls = serializers.JSONField(read_only=True)

    class Meta:
        model = ExperimentResult
        fields = ["id", "item", "status", "model", "output", "tool_calls", "finish_reason", "input_tokens",
                  "output_tokens", "cost", "latency_ms", "error", "request", "scores", "started_at",
                  "finished_at"]
        read_only_fields = fields


class ExperimentDetailSerializer(ExperimentSerializer):
    summary = serializers.SerializerMethodField()

    class Meta(ExperimentSerializer.Meta):
        fields = [*ExperimentSerializer.Meta.fields, "summary"]
        read_only_fields = fields

    def get_summary(self, experiment: Experiment) -> dict[str, Any]:
        """Results by status, tokens, cost, mean latency, and each evaluator's average."""
        summary = experiment_summary(experiment=experiment)
        return {**summary, "cost": None if summary["cost"] is None else str(summary["cost"]),
                "scores": list(summary["scores"].values())}


@extend_schema(tags=["experiments"])
class ExperimentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = ExperimentSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[Experiment]:
        return Experiment.objects.filter(workspace=token_of(self.request).workspace)

    def get_serializer_class(self) -> Any:
        if self.action == "retrieve":
            return ExperimentDetailSerializer
        if self.action == "results":
            return ExperimentResultSerializer
        return ExperimentSerializer

    @extend_schema(request=ExperimentInSerializer, responses={201: ExperimentSerializer},
                   summary="Make an experiment of a dataset (a draft; run it with /run/)")
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = parse(ExperimentInSerializer, body(request))
        workspace = token_of(request).workspace
        dataset = Dataset.objects.filter(workspace=workspace, pk=data.pop("dataset")).first()
        if dataset is None:
            raise NotFound("No such dataset in this workspace.")
        baseline_id = data.pop("baseline")
        baseline = None
        if baseline_id is not None:
            baseline = Experiment.objects.filter(dataset=dataset, pk=baseline_id).first()
            if baseline is None:
                raise NotFound("The baseline is no experiment of this dataset.")
        variant = experiment_variant(data)
        unknown = unknown_evaluators(workspace=workspace, keys=variant["evaluators"])
        if unknown:
            raise NotFound(f"No evaluator {unknown[0]} in this workspace.")
        experiment = experiment_create(dataset=dataset, actor=actor_of(request), baseline=baseline, **variant)
        return Response(ExperimentSerializer(experiment).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={202: ExperimentSerializer},
                   summary="Queue the run: every item without a successful result is sent")
    @action(detail=True, methods=["post"])
    def run(self, request: Request, pk: str) -> Response:
        experiment = experiment_start(experiment=self.get_object(), actor=actor_of(request))
        return Response(ExperimentSerializer(experiment).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: ExperimentResultSerializer(many=True)},
                   summary="The experiment's results, one per item, with their scores")
    @action(detail=True, methods=["get"])
    def results(self, request: Request, pk: str) -> Response:
        experiment = self.get_object()
        results = ExperimentResult.objects.filter(experiment=experiment).prefetch_related("scores")
        page = self.paginate_queryset(results)
        return self.get_paginated_response(ExperimentResultSerializer(page, many=True).data)
