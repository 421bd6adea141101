"""Alert rules' door: one input definition for the API and the dashboard's form
(api/monitoring.py, views/monitoring.py); the webhook URL checked here (contextstore.webhooks,
without a lookup: the worker resolves and checks it before every attempt)."""

import math
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.validators import RegexValidator
from rest_framework import serializers
from rest_framework.exceptions import NotFound

from contextstore import webhooks
from contextstore.models import AlertRule, SavedView, Workspace
from contextstore.selectors.monitoring import saved_views_visible

# The URL's shape, stated in the schema too; webhooks.url_problem then checks its addresses.
PORT = r"([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
WEBHOOK_URL = rf"^https?://[A-Za-z0-9.\-]+(:{PORT})?(/[^\s\x00]*)?$"
FIELDS = ("name", "metric", "comparison", "threshold", "window_minutes", "agent", "model", "saved_view",
          "webhook_url", "enabled")


class AlertRuleInSerializer(serializers.Serializer):
    """An alert rule's input, the API's and the dashboard form's (views/monitoring.py)."""

    name = serializers.CharField(max_length=200)
    metric = serializers.ChoiceField(choices=AlertRule.Metric.choices)
    comparison = serializers.ChoiceField(choices=AlertRule.Comparison.choices, default="gt")
    threshold = serializers.FloatField(min_value=-1e15, max_value=1e15)
    window_minutes = serializers.ChoiceField(choices=AlertRule.WINDOWS, default=60)
    agent = serializers.CharField(max_length=200, allow_blank=True, default="")
    model = serializers.CharField(max_length=200, allow_blank=True, default="")
    saved_view = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1,
                                          max_value=2**63 - 1,
                                          help_text="A saved view of the session list: the rule counts "
                                                    "its sessions.")
    webhook_url = serializers.CharField(max_length=2000, allow_blank=True, default="",
                                        validators=[RegexValidator(WEBHOOK_URL, "Not an http(s) URL.")],
                                        help_text="http(s) only; public addresses only unless the "
                                                  "deployment allows private ones.")
    enabled = serializers.BooleanField(default=True)

    def validate_threshold(self, value: float) -> float:
        if not math.isfinite(value):
            raise serializers.ValidationError("The threshold must be a finite number.")
        return value

    def validate_webhook_url(self, value: str) -> str:
        value = value.strip()
        problem = value and webhooks.url_problem(value, allow_private=settings.ALERT_WEBHOOK_ALLOW_PRIVATE,
                                                 resolve=False)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class AlertRulePatchSerializer(AlertRuleInSerializer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required, field.default = False, serializers.empty


def rule_scope(workspace: Workspace, user: User | None, data: dict[str, Any]) -> dict[str, Any]:
    """`saved_view` as the view it names: one of the session list the person sees."""
    if data.get("saved_view") is not None:
        view = (saved_views_visible(workspace=workspace, user=user, page=SavedView.Page.SESSIONS)
                .filter(pk=data["saved_view"]).first())
        if view is None:
            raise NotFound("No such saved view of the session list.")
        data["saved_view"] = view
    return data


