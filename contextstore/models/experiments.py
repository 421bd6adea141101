"""Experiments: a dataset run through a variant (prompt, model, params) by replay, item by item,
each output scored and compared with a baseline (services/experiments.py)."""

from django.conf import settings
from django.db import models

from contextstore.fields import (
    AgentTextField,
    OrderedJSONField,
    RedactedCharField,
    RedactedTextField,
)
from contextstore.models.workspaces import Workspace


class Experiment(models.Model):
    """A dataset's items sent again with a variant: a system prompt that replaces the recorded
    one, a template for the last user message (`{input}` stands for its text), a model and
    request params laid over each item's own. The baseline is the items' expected outputs, or
    another experiment of the same dataset. Run by a worker (`queued` → `running` → `done`);
    each item's outcome is an ExperimentResult."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # experiment_list leads with it
    dataset = models.ForeignKey("contextstore.Dataset", on_delete=models.CASCADE, related_name="experiments",
                                db_index=False)  # experiment_dataset leads with it
    name = RedactedCharField(max_length=200)
    system_prompt = RedactedTextField(blank=True, default="",
                                      help_text="Replaces the recorded system prompt; blank keeps it.")
    template = RedactedTextField(blank=True, default="",
                                 help_text="The last user message as sent; {input} stands for its "
                                           "recorded text. Blank keeps it.")
    model = models.CharField(max_length=200, blank=True, default="",
                             help_text="Blank: each item's recorded model.")
    params = OrderedJSONField(default=dict, help_text="Request params laid over each item's own.")
    baseline = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+",
                                 help_text="Another experiment of the dataset; none: the expected outputs.")
    # The evaluators that score each output: ids of the workspace's evaluators (each run uses
    # their newest version; services/experiments.py, `experiment_evaluators`), and
    # "builtin:<name>" for the built-in ones.
    evaluators = OrderedJSONField(default=list)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.DRAFT)
    item_count = models.PositiveIntegerField(default=0)
    done_count = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    actor = RedactedCharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Moved by each finished item: a run whose worker died shows as stalled after a while.
    touched_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="experiment_list"),
                   models.Index(fields=["dataset", "-created_at"], name="experiment_dataset")]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)


class ExperimentResult(models.Model):
    """One dataset item sent with the experiment's variant: the exact request, the output (or
    the error), usage, cost and latency. One per (experiment, item): a retried or resumed run
    finds it and sends nothing again; `running` while a worker has it."""

    class Status(models.TextChoices):
        RUNNING = "running"
        OK = "ok"
        ERROR = "error"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # experiment_result_item leads with it
    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="results",
                                   db_index=False)  # experiment_result_order leads with it
    item = models.ForeignKey("contextstore.DatasetItem", on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.RUNNING)
    request = OrderedJSONField(null=True, blank=True, help_text="The body sent, as sent.")
    output = AgentTextField(blank=True, default="")
    tool_calls = OrderedJSONField(default=list)
    finish_reason = RedactedCharField(max_length=40, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    error = RedactedCharField(max_length=500, blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "experiment", "item"],
                                               name="experiment_result_item")]
        indexes = [models.Index(fields=["experiment", "item"], name="experiment_result_order")]

    def __str__(self) -> str:
        return f"experiment {self.experiment_id} item {self.item_id} ({self.status})"


class ExperimentScore(models.Model):
    """One evaluator's verdict on one result's output (`target` output) or on the item's
    expected output (`target` expected, when the baseline is the dataset): a value of one data
    type, the evaluator's reason, or the error that kept it from scoring."""

    class Target(models.TextChoices):
        OUTPUT = "output"
        EXPECTED = "expected"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # experiment_score_unique leads with it
    result = models.ForeignKey(ExperimentResult, on_delete=models.CASCADE, related_name="scores",
                               db_index=False)  # experiment_score_result leads with it
    target = models.CharField(max_length=8, choices=Target.choices, default=Target.OUTPUT)
    # "builtin:<name>" or an evaluator's id; `name` is what the page shows.
    evaluator = models.CharField(max_length=100)
    name = RedactedCharField(max_length=100)
    # A workspace evaluator's version that gave the score (None: a built-in one).
    version = models.ForeignKey("contextstore.EvaluatorVersion", null=True, blank=True,
                                on_delete=models.SET_NULL, related_name="+")
    raw = RedactedTextField(blank=True, default="")  # a judge's answer as it came
    data_type = models.CharField(max_length=11, blank=True, default="")
    value = models.FloatField(null=True, blank=True)
    string_value = RedactedCharField(max_length=200, blank=True, default="")
    reason = RedactedTextField(blank=True, default="")
    error = RedactedCharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "result", "target", "evaluator"],
                                               name="experiment_score_unique")]
        indexes = [models.Index(fields=["result", "target"], name="experiment_score_result")]

    def __str__(self) -> str:
        return f"{self.name}={self.display}"

    @property
    def display(self) -> str:
        if self.error:
            return "error"
        if self.value is not None and self.data_type == "numeric":
            return f"{self.value:g}"
        return self.string_value or ("" if self.value is None else f"{self.value:g}")
