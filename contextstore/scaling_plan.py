"""Where every table goes when one PostgreSQL primary stops being enough: the Citus plan of
docs/scaling.md ("Beyond one primary"), as data. tests/test_scaling_plan.py holds the schema to
it, so a new table, a new unique constraint or a new foreign key that would block the plan fails
until it is classified here (and in the doc, which mirrors this module).

Distribution column: `workspace_id`. Classes:
- "distributed": hash-distributed by workspace_id, co-located with every other distributed
  table. WORKSPACE[model] says whether the column is there ("has") or must be added, copied
  from the row named ("add via <field>").
- "reference": small, read everywhere, replicated to every node.
- "local": stays on the coordinator only; never joined with a distributed table.

Rules the plan applies to every distributed table (not listed one by one): its primary key
becomes (workspace_id, id) in the database while Django keeps `id` as its pk (ids stay unique:
Citus hands each node its own range of a bigint sequence), and every foreign key from one
distributed table to another becomes (workspace_id, x_id) → (workspace_id, id).
"""

DISTRIBUTED = "distributed"
REFERENCE = "reference"
LOCAL = "local"

PLAN: dict[str, str] = {
    # Django's own tables
    "admin.LogEntry": LOCAL,
    "auth.Permission": REFERENCE,
    "auth.Group_permissions": REFERENCE,
    "auth.Group": REFERENCE,
    "auth.User_groups": REFERENCE,
    "auth.User_user_permissions": REFERENCE,
    "auth.User": REFERENCE,
    "contenttypes.ContentType": REFERENCE,
    "sessions.Session": LOCAL,
    # django-axes: failed password logins, read and written by the login alone
    "axes.AccessAttempt": LOCAL,
    "axes.AccessAttemptExpiration": LOCAL,
    "axes.AccessFailureLog": LOCAL,
    "axes.AccessLog": LOCAL,
    # contextstore
    "contextstore.Workspace": REFERENCE,
    "contextstore.Membership": REFERENCE,
    "contextstore.ApiToken": REFERENCE,
    "contextstore.Session": DISTRIBUTED,
    "contextstore.SessionModel": DISTRIBUTED,
    "contextstore.Thread": DISTRIBUTED,
    "contextstore.Run": DISTRIBUTED,
    "contextstore.Collapse": DISTRIBUTED,
    "contextstore.Clear": DISTRIBUTED,
    "contextstore.Event": DISTRIBUTED,
    "contextstore.EventSearch": DISTRIBUTED,
    "contextstore.CallFigure": DISTRIBUTED,
    "contextstore.EventSearchPending": DISTRIBUTED,
    "contextstore.CallCacheVerdict": DISTRIBUTED,
    "contextstore.ContextBlock": DISTRIBUTED,
    "contextstore.ContextBlockVersion": DISTRIBUTED,
    "contextstore.StateRevision": DISTRIBUTED,
    "contextstore.ProviderState": DISTRIBUTED,
    "contextstore.Memory": DISTRIBUTED,
    "contextstore.Job": DISTRIBUTED,
    "contextstore.AuditLog": DISTRIBUTED,
    "contextstore.ReadAudit": DISTRIBUTED,
    "contextstore.StoredText": DISTRIBUTED,
    "contextstore.RenderRecord": DISTRIBUTED,
    "contextstore.ScopedState": DISTRIBUTED,
    "contextstore.ScopedStateRevision": DISTRIBUTED,
    "contextstore.ThreadBlob": DISTRIBUTED,
    "contextstore.CommitRecord": DISTRIBUTED,
    "contextstore.OtelSpan": DISTRIBUTED,
    "contextstore.OtelLog": DISTRIBUTED,
    "contextstore.OtelPending": DISTRIBUTED,
    "contextstore.OtelTrace": DISTRIBUTED,
    "contextstore.CallReplay": DISTRIBUTED,
    "contextstore.Comment": DISTRIBUTED,
    "contextstore.Score": DISTRIBUTED,
    "contextstore.ShareLink": DISTRIBUTED,
    "contextstore.Dataset": DISTRIBUTED,
    "contextstore.DatasetItem": DISTRIBUTED,
    "contextstore.ScoreConfig": DISTRIBUTED,
    "contextstore.AnnotationQueue": DISTRIBUTED,
    "contextstore.AnnotationQueue_score_configs": DISTRIBUTED,
    "contextstore.AnnotationQueue_assignees": DISTRIBUTED,
    "contextstore.AnnotationItem": DISTRIBUTED,
    "contextstore.Evaluator": DISTRIBUTED,
    "contextstore.EvaluatorVersion": DISTRIBUTED,
    "contextstore.Evaluation": DISTRIBUTED,
    "contextstore.Experiment": DISTRIBUTED,
    "contextstore.ExperimentResult": DISTRIBUTED,
    "contextstore.ExperimentScore": DISTRIBUTED,
    "contextstore.StoreItem": DISTRIBUTED,
    "contextstore.StoreItemVersion": DISTRIBUTED,
    "contextstore.StoreVector": DISTRIBUTED,
    "contextstore.SavedView": DISTRIBUTED,
    "contextstore.AlertRule": DISTRIBUTED,
    "contextstore.AlertEvent": DISTRIBUTED,
    "contextstore.WorkerHeartbeat": LOCAL,  # one row per worker, read by /readyz alone
}

# Distributed tables: where workspace_id comes from.
WORKSPACE: dict[str, str] = {
    "contextstore.Session": "has",
    "contextstore.SessionModel": "add via session",
    "contextstore.Thread": "has",
    "contextstore.Run": "add via thread",
    "contextstore.Collapse": "add via thread",
    "contextstore.Clear": "add via thread",
    "contextstore.Event": "add via thread",
    "contextstore.EventSearch": "add via event",
    "contextstore.CallFigure": "add via event",
    "contextstore.EventSearchPending": "add via the trigger's new rows",
    "contextstore.CallCacheVerdict": "has",
    "contextstore.ContextBlock": "add via thread",
    "contextstore.ContextBlockVersion": "add via thread",
    "contextstore.StateRevision": "add via thread",
    "contextstore.ProviderState": "add via thread",
    "contextstore.Memory": "has",
    "contextstore.Job": "has",
    "contextstore.AuditLog": "has",
    "contextstore.ReadAudit": "has",
    "contextstore.StoredText": "has",
    "contextstore.RenderRecord": "has",
    "contextstore.ScopedState": "has",
    "contextstore.ScopedStateRevision": "add via scoped_state",
    "contextstore.ThreadBlob": "add via thread",
    "contextstore.CommitRecord": "add via thread",
    "contextstore.OtelSpan": "has",
    "contextstore.OtelLog": "has",
    "contextstore.OtelPending": "has",
    "contextstore.OtelTrace": "has",
    "contextstore.CallReplay": "has",
    "contextstore.Comment": "has",
    "contextstore.Score": "has",
    "contextstore.ShareLink": "has",
    "contextstore.Dataset": "has",
    "contextstore.DatasetItem": "has",
    "contextstore.ScoreConfig": "has",
    "contextstore.AnnotationQueue": "has",
    "contextstore.AnnotationQueue_score_configs": "add via annotationqueue",
    "contextstore.AnnotationQueue_assignees": "add via annotationqueue",
    "contextstore.AnnotationItem": "has",
    "contextstore.Evaluator": "has",
    "contextstore.EvaluatorVersion": "has",
    "contextstore.Evaluation": "has",
    "contextstore.Experiment": "has",
    "contextstore.ExperimentResult": "has",
    "contextstore.ExperimentScore": "has",
    "contextstore.StoreItem": "has",
    "contextstore.StoreItemVersion": "add via item",
    "contextstore.StoreVector": "add via item",
    "contextstore.SavedView": "has",
    "contextstore.AlertRule": "has",
    "contextstore.AlertEvent": "has",
}

# Unique keys of distributed tables that do not include workspace today, by (model, fields),
# with the planned change. Citus enforces a unique key only within a shard, so it must hold
# the distribution column.
UNIQUE_EXCEPTIONS: dict[tuple[str, tuple[str, ...]], str] = {
    ("contextstore.SessionModel", ("session", "model")): "(workspace, session, model)",
    ("contextstore.Thread", ("session", "name")): "(workspace, session, name)",
    ("contextstore.Run", ("thread", "run_id")): "(workspace, thread, run_id)",
    ("contextstore.Collapse", ("summary_event",)): "(workspace, summary_event)",
    ("contextstore.Collapse", ("job",)): "(workspace, job)",
    ("contextstore.CallCacheVerdict", ("call",)): "(workspace, call)",
    ("contextstore.Evaluation", ("score",)): "(workspace, score)",
    ("contextstore.Event", ("thread", "seq")): "(workspace, thread, seq)",
    ("contextstore.Event", ("thread", "client_id")): "(workspace, thread, client_id), same condition",
    ("contextstore.Event", ("thread", "item_key")): "(workspace, thread, item_key), same condition",
    ("contextstore.ContextBlock", ("thread", "name")): "(workspace, thread, name)",
    ("contextstore.ContextBlockVersion", ("thread", "name", "version")):
        "(workspace, thread, name, version)",
    ("contextstore.StateRevision", ("thread", "revision")): "(workspace, thread, revision)",
    ("contextstore.ProviderState", ("thread", "provider")): "(workspace, thread, provider)",
    ("contextstore.Job", ("pending_key",)): "(workspace, pending_key)",
    ("contextstore.ReadAudit", ("actor_key", "action", "target_type", "target_id", "hour")):
        "(workspace, actor_key, action, target_type, target_id, hour); workspace-less reads use 0",
    ("contextstore.ScopedStateRevision", ("scoped_state", "revision")):
        "(workspace, scoped_state, revision)",
    ("contextstore.ThreadBlob", ("thread", "key")): "(workspace, thread, key)",
    ("contextstore.CommitRecord", ("thread", "batch_id")): "(workspace, thread, batch_id)",
    ("contextstore.StoreItemVersion", ("item", "version")): "(workspace, item, version)",
    ("contextstore.StoreVector", ("item", "field")): "(workspace, item, field)",
    ("contextstore.AnnotationQueue_score_configs", ("annotationqueue", "scoreconfig")):
        "(workspace, annotationqueue, scoreconfig)",
    ("contextstore.AnnotationQueue_assignees", ("annotationqueue", "user")):
        "(workspace, annotationqueue, user)",
}

# Primary keys other than the automatic `id`, which the blanket rule covers.
PRIMARY_KEY_EXCEPTIONS: dict[str, str] = {
    "contextstore.EventSearch": "(workspace_id, event_id)",
    "contextstore.CallFigure": "(workspace_id, event_id)",
    "contextstore.RenderRecord": "(workspace_id, id), the uuid as today",
    "contextstore.Job": "(workspace_id, id), the uuid as today",
}

# Foreign keys that Citus refuses as they are, by (model, field), with the planned change.
FOREIGN_KEY_EXCEPTIONS: dict[tuple[str, str], str] = {
    # SET_NULL on the distribution column is an UPDATE of it, which Citus refuses.
    ("contextstore.AuditLog", "workspace"):
        "a plain NOT NULL workspace_id without a foreign key (0: no workspace), as "
        "ReadAudit.session_id: the log outlives its workspace",
    ("contextstore.ReadAudit", "workspace"): "as AuditLog.workspace",
}
