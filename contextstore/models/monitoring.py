"""Saved views of the dashboard's list pages, and alert rules with the events they recorded
(services/saved_views.py, services/alerts.py; docs/dashboard.md "Saved views", "Alerts")."""

from django.conf import settings
from django.db import models

from contextstore.fields import RedactedCharField, RedactedTextField
from contextstore.models.workspaces import Workspace


class SavedView(models.Model):
    """A person's filters of one list page under a name: the page's query string, normalised
    (contextstore.viewspec), private to its owner or shared with the workspace. At most one
    default per person and page: the page opens with it when asked without a query string."""

    class Page(models.TextChoices):
        SESSIONS = "sessions", "Sessions"
        TRENDS = "trends", "Trends"
        STORE = "store", "Store"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # saved_view_menu leads with it
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    page = models.CharField(max_length=20, choices=Page.choices)
    name = RedactedCharField(max_length=100)
    query = RedactedTextField(blank=True, default="")  # a search's text may hold what a person typed
    shared = models.BooleanField(default=False)
    is_default = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["workspace", "page", "owner"], name="saved_view_menu")]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "owner", "page", "name"],
                                    name="saved_view_unique_name"),
            models.UniqueConstraint(fields=["workspace", "owner", "page"],
                                    condition=models.Q(is_default=True),
                                    name="saved_view_one_default"),
        ]

    def __str__(self) -> str:
        return f"{self.page}: {self.name}"


class AlertRule(models.Model):
    """A threshold on one figure of the workspace's model calls over a rolling window, checked by
    beat (services/alerts.py). It records an AlertEvent when its state changes (ok → firing,
    firing → ok), never on every check, and posts it to its webhook, signed with its secret."""

    class Metric(models.TextChoices):
        COST = "cost", "Cost (USD)"
        ERRORS = "errors", "Errors"
        HIT_RATE = "hit_rate", "Prompt-cache hit rate (%)"
        CACHE_BREAKS = "cache_breaks", "Prompt-cache breaks"
        LATENCY_P95 = "latency_p95", "p95 call latency (ms)"

    class Comparison(models.TextChoices):
        GT = "gt", "above"
        GTE = "gte", "at or above"
        LT = "lt", "below"
        LTE = "lte", "at or below"

    class State(models.TextChoices):
        OK = "ok"
        FIRING = "firing"

    WINDOWS = ((15, "15 minutes"), (60, "1 hour"), (1440, "24 hours"))

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    name = RedactedCharField(max_length=200)
    metric = models.CharField(max_length=20, choices=Metric.choices)
    comparison = models.CharField(max_length=3, choices=Comparison.choices, default=Comparison.GT)
    threshold = models.FloatField()
    window_minutes = models.PositiveIntegerField(choices=WINDOWS, default=60)
    agent = models.CharField(max_length=200, blank=True, default="")  # "" any agent
    model = models.CharField(max_length=200, blank=True, default="")  # "" any model
    # The sessions of a saved view of the session list; a view in use cannot be deleted (nor its
    # owner), but goes with its workspace.
    saved_view = models.ForeignKey(SavedView, null=True, blank=True, on_delete=models.RESTRICT,
                                   related_name="alert_rules")
    webhook_url = models.CharField(max_length=2000, blank=True, default="")
    # The HMAC key the webhook's signature is made with: shown once when the rule is made.
    secret = models.CharField(max_length=64)
    enabled = models.BooleanField(default=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.OK)
    state_since = models.DateTimeField(null=True, blank=True)
    last_value = models.FloatField(null=True, blank=True)  # None: no data in the window
    last_evaluated_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["enabled", "last_evaluated_at"], name="alert_rule_due"),
                   models.Index(fields=["workspace", "state"], name="alert_rule_state")]

    def __str__(self) -> str:
        return self.name

    @property
    def condition(self) -> str:
        return (f"{self.get_metric_display()} {self.get_comparison_display()} {self.threshold:g} "
                f"over {self.get_window_minutes_display()}")


class AlertEvent(models.Model):
    """A rule's change of state, as it was when recorded, and its webhook delivery."""

    class Kind(models.TextChoices):
        FIRING = "firing"
        RESOLVED = "resolved"

    class Delivery(models.TextChoices):
        NONE = "none"  # the rule has no webhook
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"  # every attempt failed

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # alert_event_recent leads with it
    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="events", db_index=False)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    value = models.FloatField(null=True, blank=True)
    threshold = models.FloatField()
    condition = RedactedTextField()  # the rule's condition in words, as it was
    created_at = models.DateTimeField(auto_now_add=True)
    delivery = models.CharField(max_length=10, choices=Delivery.choices, default=Delivery.NONE)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = RedactedTextField(blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="alert_event_recent"),
                   models.Index(fields=["rule", "-created_at"], name="alert_event_rule")]

    def __str__(self) -> str:
        return f"{self.rule_id} {self.kind}"
