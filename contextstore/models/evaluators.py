"""Evaluators: what scores calls and sessions automatically (an LLM judge, or a rule), their
versions, and each evaluation an online run made (services/evaluators.py)."""

from django.conf import settings
from django.db import models

from contextstore.fields import OrderedJSONField, RedactedCharField, RedactedTextField

# The related models are named, not imported: importing their modules here would register them
# before the models listed ahead of this one in models/__init__ (an order docs/security.md's
# table follows).


class Evaluator(models.Model):
    """One evaluator of a workspace: its kind, what it scores (LLM calls or sessions), and the
    sampling rule of its online run. What it does (the judge's prompt and model, the rule's
    settings) is in its versions: an edit makes a new one, and each score names the version
    that gave it. Its scores are named after it."""

    class Kind(models.TextChoices):
        LLM_JUDGE = "llm_judge", "LLM judge"
        REGEX = "regex", "regular expression"
        JSON_SCHEMA = "json_schema", "JSON schema"
        TOOL_CALL = "tool_call", "tool-call check"
        COST_LIMIT = "cost_limit", "cost limit"
        LATENCY_LIMIT = "latency_limit", "latency limit"

    class Target(models.TextChoices):
        CALL = "call", "LLM calls"
        SESSION = "session", "sessions"

    workspace = models.ForeignKey("contextstore.Workspace", on_delete=models.CASCADE,
                                  related_name="evaluators",
                                  db_index=False)  # evaluator_unique_name leads with it
    name = RedactedCharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    target = models.CharField(max_length=8, choices=Target.choices, default=Target.CALL)
    enabled = models.BooleanField(default=True)
    # The sampling rule: the share of new calls (sessions) scored, chosen by a hash of the
    # evaluator and the call (session), so a run again picks the same ones; and optional filters.
    sample_rate = models.FloatField(default=1.0)
    filter_agent = RedactedCharField(max_length=200, blank=True, default="")
    filter_model = models.CharField(max_length=200, blank=True, default="")
    # The online run's watermark: calls, the newest LLMComplete looked at (its event id);
    # sessions, the newest (last activity, id) looked at among the quiet ones.
    through_event = models.BigIntegerField(default=0)
    through_at = models.DateTimeField(null=True, blank=True)
    through_session = models.BigIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="evaluator_unique_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def latest(self) -> "EvaluatorVersion":
        """The version an online run uses now (the newest)."""
        return self.versions.order_by("-number").first()  # type: ignore[return-value]


class EvaluatorVersion(models.Model):
    """What an evaluator does, as it was at one edit: never changed once written."""

    workspace = models.ForeignKey("contextstore.Workspace", on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # evaluator_version_number leads with it
    evaluator = models.ForeignKey(Evaluator, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    model = models.CharField(max_length=200, blank=True, default="")  # the judge's
    prompt = RedactedTextField(blank=True, default="")  # the judge's, {{input}} and {{output}} filled in
    # The kind's settings (evaluatorspec): the pattern, the schema, the limit, the judge's score type.
    config = OrderedJSONField(default=dict)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    author_label = RedactedCharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["workspace", "evaluator", "number"],
                                               name="evaluator_version_number")]

    def __str__(self) -> str:
        return f"{self.evaluator_id} v{self.number}"


class Evaluation(models.Model):
    """One evaluation of one call or session by an evaluator's online run: the job (queued,
    running, done or failed) and, once done, the provenance of the Score it wrote (which
    version, the judge's raw answer). One per evaluator and subject (the unique key), so no
    run evaluates anything twice; a failure keeps its reason and writes no score."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        ERROR = "error"

    workspace = models.ForeignKey("contextstore.Workspace", on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # evaluation_unique_subject leads with it
    evaluator = models.ForeignKey(Evaluator, on_delete=models.CASCADE, related_name="evaluations",
                                  db_index=False)  # evaluation_recent leads with it
    version = models.ForeignKey(EvaluatorVersion, on_delete=models.CASCADE, related_name="evaluations")
    session = models.ForeignKey("contextstore.Session", on_delete=models.CASCADE, related_name="+")
    # A call: its thread and the seq that names it (its start's, else its end's); a session: NULL.
    thread = models.ForeignKey("contextstore.Thread", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="+")
    seq = models.BigIntegerField(null=True, blank=True)
    subject = models.CharField(max_length=40)  # "call <LLMComplete id>" or "session <id>"
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    score = models.OneToOneField("contextstore.Score", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="evaluation")
    raw = RedactedTextField(blank=True, default="")  # the judge's answer as it came
    error = RedactedTextField(blank=True, default="")
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "evaluator", "subject"],
                                               name="evaluation_unique_subject")]
        indexes = [models.Index(fields=["evaluator", "-id"], name="evaluation_recent"),
                   models.Index(fields=["status", "started_at"], name="evaluation_pending")]

    def __str__(self) -> str:
        return f"{self.subject} by {self.evaluator_id}: {self.status}"
