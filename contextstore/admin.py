"""Django admin: every model listed for audit. Changes go through the services (audited, with
the admin user as actor); the audit log and the events themselves are read-only."""

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_permission_codename
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest

from contextstore.blockspec import check_block
from contextstore.errors import DomainError, InvalidInput
from contextstore.expressions import evaluate_expr
from contextstore.models import (
    AlertEvent,
    AlertRule,
    AnnotationItem,
    AnnotationQueue,
    ApiToken,
    AuditLog,
    Clear,
    Collapse,
    ContextBlock,
    Evaluation,
    Evaluator,
    EvaluatorVersion,
    Event,
    Experiment,
    ExperimentResult,
    Job,
    Membership,
    Memory,
    OtelSpan,
    ProviderState,
    ReadAudit,
    Run,
    SavedView,
    ScopedState,
    ScoreConfig,
    Session,
    StateRevision,
    Thread,
    Workspace,
    redaction_default,
)
from contextstore.redaction import setting_problems
from contextstore.retentionspec import check_days
from contextstore.services import (
    alerts,
    blocks,
    clientai,
    collapses,
    evaluators,
    retention,
    sessions,
    state,
    threads,
    workspaces,
)
from contextstore.services.common import Actor
from contextstore.workspacespec import check_slug


def actor_of(request: HttpRequest) -> Actor:
    user = request.user
    if not user.is_authenticated:  # the admin site lets in signed-in staff only
        raise PermissionDenied
    return Actor.for_user(user, request.META.get("REMOTE_ADDR"))


def counts_only(modeladmin: admin.ModelAdmin, objs, request: HttpRequest) -> tuple:
    """What the delete confirmation lists: one line per object, not every event row (a session
    may hold millions). The services delete collapses before the events they protect, so
    nothing is reported as protected."""
    return [str(obj) for obj in objs], {modeladmin.opts.verbose_name_plural: len(objs)}, set(), []


def run_each(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet, verb: str,
             call) -> None:
    """Apply one service per selected object; report successes and domain errors separately."""
    done = 0
    for obj in queryset:
        try:
            call(obj)
            done += 1
        except DomainError as exc:
            modeladmin.message_user(request, f"{obj}: {exc.message}", messages.ERROR)
    if done:
        modeladmin.message_user(request, f"{verb}: {done}.", messages.SUCCESS)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shown for audit, never edited by hand: the services own these rows."""

    def has_mutate_permission(self, request: HttpRequest) -> bool:
        """Actions that call services need the model's change permission, though the form
        itself stays read-only."""
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.{get_permission_codename('change', opts)}")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    fields = ("user", "role", "created_at")
    readonly_fields = ("user", "role", "created_at")
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class RetentionFields(forms.ModelForm):
    """The retention rules checked as retentionspec words them (API and admin alike)."""

    def _days(self, name: str) -> int | None:
        try:
            return check_days(name, self.cleaned_data[name])
        except InvalidInput as exc:
            raise forms.ValidationError(exc.message) from None

    def clean_retention_event_days(self) -> int | None:
        return self._days("retention_event_days")

    def clean_retention_session_days(self) -> int | None:
        return self._days("retention_session_days")


class WorkspaceForm(RetentionFields):
    class Meta:
        model = Workspace
        fields = ("slug", "name", "retention_event_days", "retention_session_days", "redaction")
        help_texts = {"redaction": 'Secrets redacted before they are stored: {"enabled": true, '
                                   '"extra_patterns": [{"name": "ticket_token", "pattern": '
                                   '"TKT-[0-9]{12}"}]}. See docs/security.md.'}

    def clean_slug(self) -> str:
        try:
            return check_slug(self.cleaned_data["slug"])
        except InvalidInput as exc:
            raise forms.ValidationError(exc.message) from None

    def clean_redaction(self):
        value = self.cleaned_data["redaction"]
        if value in (None, ""):  # left out: kept as it is
            return self.instance.redaction if self.instance.pk else redaction_default()
        problems = setting_problems(value)
        if problems:
            raise forms.ValidationError([f"{place}: {problem}" for place, problem in problems.items()])
        return value


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    form = WorkspaceForm
    list_display = ("slug", "name", "retention_event_days", "retention_session_days", "created_at")
    search_fields = ("slug", "name")
    date_hierarchy = "created_at"
    inlines = [MembershipInline]
    fields = ("slug", "name", "retention_event_days", "retention_session_days", "redaction")

    def get_readonly_fields(self, request, obj=None):
        return ("slug",) if obj is not None else ()

    def save_model(self, request, obj, form, change):
        if change:
            workspaces.workspace_update(workspace=obj, name=obj.name, actor=actor_of(request))
            saved = Workspace.objects.get(pk=obj.pk)
        else:
            saved, _ = workspaces.workspace_ensure(slug=obj.slug, name=obj.name)
            obj.pk = saved.pk
        retention.retention_policy_set(
            target=saved, actor=actor_of(request), event_days=obj.retention_event_days,
            session_days=obj.retention_session_days)
        if obj.redaction != saved.redaction:
            workspaces.workspace_redaction_set(workspace=saved, redaction=obj.redaction,
                                               actor=actor_of(request))

    def get_deleted_objects(self, objs, request):
        return counts_only(self, objs, request)

    def delete_model(self, request, obj):
        workspaces.workspace_delete(workspace=obj, actor=actor_of(request))

    def delete_queryset(self, request, queryset):
        for workspace in queryset:
            workspaces.workspace_delete(workspace=workspace, actor=actor_of(request))


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "workspace", "role", "created_at")
    list_filter = ("role", "workspace")
    search_fields = ("user__username", "workspace__slug")
    list_select_related = ("user", "workspace")
    autocomplete_fields = ("user", "workspace")

    def get_readonly_fields(self, request, obj=None):
        # Moving a membership would add the new access and keep the old: change the role only.
        return ("user", "workspace") if obj is not None else ()

    def save_model(self, request, obj, form, change):
        saved = workspaces.membership_set(workspace=obj.workspace, user=obj.user, role=obj.role,
                                          actor=actor_of(request))
        obj.pk = saved.pk

    def delete_model(self, request, obj):
        workspaces.membership_remove(membership=obj, actor=actor_of(request))

    def delete_queryset(self, request, queryset):
        for membership in queryset.select_related("user", "workspace"):
            workspaces.membership_remove(membership=membership, actor=actor_of(request))


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Created through the service (the raw value is shown once, only its hash is kept)."""

    list_display = ("prefix", "name", "workspace", "scope", "created_at", "last_used_at", "revoked_at")
    list_filter = ("scope", "workspace", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("prefix", "name", "workspace__slug")
    date_hierarchy = "created_at"
    list_select_related = ("workspace",)
    actions = ["revoke"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("workspace", "name", "scope")
        return ("workspace", "name", "scope", "prefix", "created_by", "created_at", "last_used_at",
                "revoked_at")

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.get_fields(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # revoke instead: the audit log keeps pointing at the token

    def save_model(self, request, obj, form, change):
        if change:
            return
        token, raw = workspaces.api_token_create(
            workspace=obj.workspace, name=obj.name, scope=obj.scope, actor=actor_of(request),
            created_by=request.user,
        )
        obj.pk = token.pk
        messages.warning(
            request, f"New API token {token.prefix}…: {raw} — copy it now, it is not shown again.")

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request, queryset):
        run_each(self, request, queryset.select_related("workspace"), "Revoked",
                 lambda t: workspaces.api_token_revoke(token=t, actor=actor_of(request)))


class SessionForm(RetentionFields):
    class Meta:
        model = Session
        fields = ("title", "agent", "metadata", "archived", "legal_hold", "retention_event_days",
                  "retention_session_days")
        help_texts = {"retention_event_days": "Empty: the workspace's policy.",
                      "retention_session_days": "Empty: the workspace's policy."}

    def clean_metadata(self):
        metadata = self.cleaned_data["metadata"]
        if not isinstance(metadata, dict):
            raise forms.ValidationError("Metadata is a JSON object.")
        return metadata


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    form = SessionForm
    list_display = ("key", "title", "app", "user_id", "agent", "workspace", "thread_count", "event_count",
                    "token_total", "cost_total", "error_count", "archived", "legal_hold", "expires",
                    "last_activity_at")
    list_filter = ("archived", "legal_hold", "workspace", "app", "agent")
    search_fields = ("key", "title", "app", "user_id", "agent")
    date_hierarchy = "last_activity_at"
    list_select_related = ("workspace",)
    fields = ("workspace", "app", "key", "user_id", "agent", "title", "metadata", "archived", "created_at",
              "last_activity_at", "thread_count", "event_count", "token_total", "cost_total",
              "error_count", "legal_hold", "retention_event_days", "retention_session_days",
              "retention_policy", "expires")
    readonly_fields = ("workspace", "app", "key", "user_id", "created_at", "last_activity_at",
                       "thread_count", "event_count", "token_total", "cost_total", "error_count",
                       "retention_policy", "expires")
    actions = ["archive", "unarchive"]

    def has_add_permission(self, request) -> bool:
        return False  # agents create sessions through the API

    def save_model(self, request, obj, form, change):
        changes = {f: form.cleaned_data[f] for f in form.changed_data
                   if f in ("title", "agent", "metadata", "archived")}
        fresh = Session.objects.select_related("workspace").get(pk=obj.pk)
        sessions.session_update(session=fresh, actor=actor_of(request), **changes)
        retention.retention_policy_set(
            target=fresh, actor=actor_of(request), legal_hold=form.cleaned_data["legal_hold"],
            event_days=form.cleaned_data["retention_event_days"],
            session_days=form.cleaned_data["retention_session_days"])

    @admin.display(description="Retention in effect")
    def retention_policy(self, obj: Session) -> str:
        policy = retention.policy_of(obj)
        if policy.legal_hold:
            return "legal hold: exempt"
        rules = [f"events after {policy.event_days} days" if policy.event_days else "",
                 f"session after {policy.session_days} days inactive" if policy.session_days else ""]
        return "; ".join(r for r in rules if r) or "none: kept forever"

    @admin.display(description="Expires")
    def expires(self, obj: Session) -> str:
        when = retention.session_expires_at(obj)
        return "never" if when is None else when.strftime("%Y-%m-%d %H:%M %Z")

    def get_deleted_objects(self, objs, request):
        return counts_only(self, objs, request)

    def delete_model(self, request, obj):
        sessions.session_delete(session=obj, actor=actor_of(request))

    def delete_queryset(self, request, queryset):
        for session in queryset.select_related("workspace"):
            sessions.session_delete(session=session, actor=actor_of(request))

    @admin.action(description="Archive selected sessions", permissions=["change"])
    def archive(self, request, queryset):
        run_each(self, request, queryset.select_related("workspace"), "Archived",
                 lambda s: sessions.session_archive(session=s, actor=actor_of(request)))

    @admin.action(description="Unarchive selected sessions", permissions=["change"])
    def unarchive(self, request, queryset):
        run_each(self, request, queryset.select_related("workspace"), "Unarchived",
                 lambda s: sessions.session_archive(session=s, actor=actor_of(request), archived=False))


@admin.register(Thread)
class ThreadAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "workspace", "event_count", "active_event_count", "active_tokens",
                    "error_count", "revision", "parent", "last_event_at")
    list_filter = ("workspace", "name")
    search_fields = ("session__key", "name", "session__user_id")
    date_hierarchy = "created_at"
    list_select_related = ("session", "workspace", "parent__session")
    actions = ["clear_context", "reset", "reset_all"]

    @admin.action(description="Clear context (AgentScope clearContext; nothing deleted)",
                  permissions=["mutate"])
    def clear_context(self, request, queryset):
        run_each(self, request, queryset.select_related("workspace"), "Context cleared",
                 lambda t: threads.thread_clear_context(thread=t, actor=actor_of(request)))

    @admin.action(description="Reset the agent's state", permissions=["mutate"])
    def reset(self, request, queryset):
        run_each(self, request, queryset.select_related("workspace"), "Reset",
                 lambda t: clientai.thread_reset(thread=t, actor=actor_of(request)))

    @admin.action(description="Reset the agent's state and history", permissions=["mutate"])
    def reset_all(self, request, queryset):
        run_each(self, request, queryset.select_related("workspace"), "Reset all",
                 lambda t: clientai.thread_reset_all(thread=t, actor=actor_of(request)))


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("seq", "type", "role", "thread", "status", "token_count", "visible", "is_error",
                    "occurred_at")
    list_filter = ("status", "type", "visible", "is_error")
    search_fields = ("content", "call_id", "client_id", "run__run_id")
    date_hierarchy = "occurred_at"
    list_select_related = ("thread__session",)
    raw_id_fields = ("thread", "run", "collapse", "cleared_by")
    show_full_result_count = False  # no COUNT over the events table on every page


@admin.register(Collapse)
class CollapseAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "thread", "source", "actor", "event_count", "tokens_before",
                    "tokens_after", "created_at", "undone_at")
    list_filter = ("source", ("undone_at", admin.EmptyFieldListFilter))
    search_fields = ("actor", "thread__session__key")
    date_hierarchy = "created_at"
    list_select_related = ("thread__session",)
    actions = ["undo"]

    @admin.action(description="Undo selected collapses", permissions=["mutate"])
    def undo(self, request, queryset):
        run_each(self, request, queryset.select_related("thread"), "Undone",
                 lambda c: collapses.collapse_undo(collapse=c, actor=actor_of(request)))


@admin.register(Clear)
class ClearAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "thread", "actor", "event_count", "tokens", "created_at", "undone_at")
    list_filter = (("undone_at", admin.EmptyFieldListFilter),)
    search_fields = ("actor", "thread__session__key")
    list_select_related = ("thread__session",)
    actions = ["unclear"]

    @admin.action(description="Un-clear selected clears", permissions=["mutate"])
    def unclear(self, request, queryset):
        run_each(self, request, queryset.select_related("thread"), "Un-cleared",
                 lambda c: threads.thread_unclear(clear=c, actor=actor_of(request)))


class ContextBlockForm(forms.ModelForm):
    """The service's rules as form errors: a value or an expression, and one that compiles."""

    class Meta:
        model = ContextBlock
        fields = ("thread", "name", "value", "expr", "placement", "order")

    def clean(self):
        data = super().clean()
        if data.get("value") and data.get("expr"):
            raise forms.ValidationError("Give a fixed value or an expression, not both.")
        if "placement" in data and "order" in data:  # else a field's own error says what is wrong
            name = data.get("name") or getattr(self.instance, "name", "")
            content = {"expr": data["expr"]} if data.get("expr") else {"value": data.get("value")}
            try:
                check_block(name, {**content, "placement": data["placement"], "order": data["order"]})
            except DomainError as exc:
                raise forms.ValidationError(exc.message) from exc
        thread = data.get("thread") or getattr(self.instance, "thread", None)
        if data.get("expr") and thread is not None:
            try:
                evaluate_expr(data["expr"], thread)
            except DomainError as exc:
                raise forms.ValidationError(exc.message) from exc
        return data


@admin.register(ContextBlock)
class ContextBlockAdmin(admin.ModelAdmin):
    form = ContextBlockForm
    list_display = ("name", "thread", "placement", "order", "version", "token_count", "updated_at")
    list_filter = ("placement",)
    search_fields = ("name", "value", "thread__session__key")
    date_hierarchy = "updated_at"
    list_select_related = ("thread__session",)
    fields = ("thread", "name", "value", "expr", "placement", "order", "version", "token_count")
    readonly_fields = ("version", "token_count")
    raw_id_fields = ("thread",)

    def get_readonly_fields(self, request, obj=None):
        return (*self.readonly_fields, "thread", "name") if obj else self.readonly_fields

    def save_model(self, request, obj, form, change):
        block, _ = blocks.block_upsert(
            thread=obj.thread, name=obj.name, actor=actor_of(request),
            **({"expr": obj.expr} if obj.expr else {"value": obj.value}),
            placement=obj.placement, order=obj.order,
        )
        obj.pk = block.pk

    def delete_model(self, request, obj):
        blocks.block_delete(thread=obj.thread, name=obj.name, actor=actor_of(request))

    def delete_queryset(self, request, queryset):
        for block in queryset.select_related("thread__workspace"):
            blocks.block_delete(thread=block.thread, name=block.name, actor=actor_of(request))


@admin.register(StateRevision)
class StateRevisionAdmin(ReadOnlyAdmin):
    list_display = ("revision", "thread", "reason", "actor", "size", "base", "created_at")
    search_fields = ("reason", "actor", "thread__session__key")
    date_hierarchy = "created_at"
    list_select_related = ("thread__session",)
    actions = ["restore"]

    @admin.action(description="Restore the selected revision's whole document (as a new revision)",
                  permissions=["mutate"])
    def restore(self, request, queryset):
        run_each(self, request, queryset.select_related("thread"), "Restored",
                 lambda r: state.state_restore(thread=r.thread, revision=r.revision,
                                               actor=actor_of(request)))


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ("run_id", "thread", "status", "event_count", "input_tokens", "output_tokens",
                    "cost", "started_at", "ended_at")
    list_filter = ("status",)
    search_fields = ("run_id", "thread__session__key")
    date_hierarchy = "started_at"
    list_select_related = ("thread__session",)


@admin.register(OtelSpan)
class OtelSpanAdmin(ReadOnlyAdmin):
    """Spans as OpenTelemetry exporters sent them (raw; their events are derived)."""

    list_display = ("name", "trace_id", "span_id", "parent_span_id", "status_code", "workspace",
                    "received_at")
    list_filter = ("status_code",)
    search_fields = ("=trace_id", "=span_id", "name")
    date_hierarchy = "received_at"
    list_select_related = ("workspace",)


@admin.register(ProviderState)
class ProviderStateAdmin(ReadOnlyAdmin):
    list_display = ("provider", "thread", "version", "updated_at")
    search_fields = ("provider", "thread__session__key")
    date_hierarchy = "updated_at"
    list_select_related = ("thread__session",)


@admin.register(ScopedState)
class ScopedStateAdmin(ReadOnlyAdmin):
    """App- and user-scoped state of framework sessions (ADK app:/user: keys)."""

    list_display = ("__str__", "workspace", "app", "scope", "user_id", "revision", "updated_at")
    list_filter = ("workspace", "scope")
    search_fields = ("app", "user_id")
    list_select_related = ("workspace",)


@admin.register(Memory)
class MemoryAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "workspace", "user_id", "key", "updated_at")
    list_filter = ("workspace",)
    search_fields = ("user_id", "key", "content")
    date_hierarchy = "updated_at"
    list_select_related = ("workspace",)


@admin.register(ScoreConfig)
class ScoreConfigAdmin(ReadOnlyAdmin):
    list_display = ("name", "data_type", "workspace", "archived", "created_at")
    list_filter = ("workspace", "data_type", "archived")
    search_fields = ("name",)
    list_select_related = ("workspace",)


@admin.register(AnnotationQueue)
class AnnotationQueueAdmin(ReadOnlyAdmin):
    list_display = ("name", "workspace", "created_at")
    list_filter = ("workspace",)
    search_fields = ("name",)
    list_select_related = ("workspace",)


@admin.register(AnnotationItem)
class AnnotationItemAdmin(ReadOnlyAdmin):
    list_display = ("id", "queue", "kind", "session", "seq", "status", "completed_label", "completed_at")
    list_filter = ("status", "kind", "workspace")
    search_fields = ("session__key", "completed_label")
    raw_id_fields = ("session", "thread")
    list_select_related = ("queue", "session")


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "status", "thread", "attempts", "created_at", "finished_at")
    list_filter = ("status", "kind")
    search_fields = ("id", "thread__session__key")
    date_hierarchy = "created_at"
    list_select_related = ("thread__session",)


class ExperimentResultInline(admin.TabularInline):
    model = ExperimentResult
    fields = ("item", "status", "model", "input_tokens", "output_tokens", "cost", "latency_ms", "error")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Experiment)
class ExperimentAdmin(ReadOnlyAdmin):
    """Experiments are made and run in the dashboard or the API (services/experiments.py)."""

    list_display = ("id", "name", "dataset", "model", "status", "done_count", "error_count", "item_count",
                    "workspace", "created_at")
    list_filter = ("status", "workspace")
    search_fields = ("name", "model")
    date_hierarchy = "created_at"
    list_select_related = ("dataset", "workspace")
    inlines = [ExperimentResultInline]


@admin.register(AuditLog)
class AuditLogAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "actor_type", "actor_label", "action", "target_type", "target_id",
                    "workspace", "ip")
    list_filter = ("action", "actor_type", "workspace")
    search_fields = ("actor_label", "action", "target_id")
    date_hierarchy = "created_at"
    list_select_related = ("workspace",)
    show_full_result_count = False


@admin.register(ReadAudit)
class ReadAuditAdmin(ReadOnlyAdmin):
    """Who read what (services/access_log): one row per actor, action, object and hour."""

    list_display = ("hour", "first_at", "actor_type", "actor_label", "action", "target_type",
                    "target_id", "session_id", "workspace", "ip")
    list_filter = ("action", "actor_type", "target_type", "workspace")
    search_fields = ("actor_label", "target_id")
    date_hierarchy = "hour"
    list_select_related = ("workspace",)
    show_full_result_count = False


@admin.register(SavedView)
class SavedViewAdmin(ReadOnlyAdmin):
    list_display = ("name", "page", "owner", "workspace", "shared", "is_default", "updated_at")
    list_filter = ("page", "shared", "workspace")
    search_fields = ("name", "owner__username")
    list_select_related = ("workspace", "owner")


@admin.register(AlertRule)
class AlertRuleAdmin(ReadOnlyAdmin):
    """Rules as their workspace made them (the dashboard's alerts page, the API); the webhook
    secret is never shown (it was shown once, when the rule was made)."""

    exclude = ("secret",)
    list_display = ("name", "workspace", "metric", "comparison", "threshold", "window_minutes", "enabled",
                    "state", "last_value", "last_evaluated_at")
    list_filter = ("state", "enabled", "metric", "workspace")
    search_fields = ("name",)
    list_select_related = ("workspace",)
    actions = ["disable", "enable"]

    @admin.action(description="Disable selected rules", permissions=["mutate"])
    def disable(self, request, queryset):
        run_each(self, request, queryset.select_related("workspace"), "Disabled",
                 lambda r: alerts.alert_rule_update(rule=r, actor=actor_of(request), enabled=False))

    @admin.action(description="Enable selected rules", permissions=["mutate"])
    def enable(self, request, queryset):
        run_each(self, request, queryset.select_related("workspace"), "Enabled",
                 lambda r: alerts.alert_rule_update(rule=r, actor=actor_of(request), enabled=True))


@admin.register(AlertEvent)
class AlertEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "rule", "kind", "value", "delivery", "attempts", "response_status",
                    "workspace")
    list_filter = ("kind", "delivery", "workspace")
    date_hierarchy = "created_at"
    list_select_related = ("rule", "workspace")
class EvaluatorVersionInline(admin.TabularInline):
    model = EvaluatorVersion
    fields = ("number", "model", "prompt", "config", "author_label", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Evaluator)
class EvaluatorAdmin(ReadOnlyAdmin):
    """Evaluators (services/evaluators.py): made and edited in the dashboard or the API (an edit
    is a new version); here they are read, and enabled or disabled."""

    list_display = ("name", "workspace", "kind", "target", "enabled", "sample_rate", "updated_at")
    list_filter = ("workspace", "kind", "enabled")
    search_fields = ("name",)
    list_select_related = ("workspace",)
    inlines = [EvaluatorVersionInline]
    actions = ["enable", "disable"]

    def _set(self, request: HttpRequest, queryset: QuerySet, enabled: bool, verb: str) -> None:
        if not self.has_mutate_permission(request):
            raise PermissionDenied
        run_each(self, request, queryset, verb, lambda e: evaluators.evaluator_update(
            evaluator=e, actor=actor_of(request), fields={"enabled": enabled}))

    @admin.action(description="Enable the selected evaluators' online runs")
    def enable(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._set(request, queryset, True, "Enabled")

    @admin.action(description="Disable the selected evaluators' online runs")
    def disable(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._set(request, queryset, False, "Disabled")


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    """Each evaluation of an online run: its status, its score or its error."""

    list_display = ("id", "evaluator", "version", "subject", "status", "score", "attempts",
                    "created_at", "finished_at")
    list_filter = ("status", "evaluator__workspace")
    search_fields = ("=subject", "evaluator__name")
    date_hierarchy = "created_at"
    list_select_related = ("evaluator", "version", "score")
