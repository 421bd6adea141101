"""The data model, one module per subject; every model is importable from here."""

from contextstore.models.annotation import AnnotationItem, AnnotationQueue, ScoreConfig
from contextstore.models.audit import AuditLog, ReadAudit
from contextstore.models.evaluators import Evaluation, Evaluator, EvaluatorVersion
from contextstore.models.events import CallCacheVerdict, CallFigure, Event, EventSearch, EventSearchPending
from contextstore.models.experiments import Experiment, ExperimentResult, ExperimentScore
from contextstore.models.jobs import Job, WorkerHeartbeat
from contextstore.models.monitoring import AlertEvent, AlertRule, SavedView
from contextstore.models.otel import OtelLog, OtelPending, OtelSpan, OtelTrace
from contextstore.models.renders import CallReplay, RenderRecord, StoredText
from contextstore.models.reviews import Comment, Dataset, DatasetItem, Score, ShareLink
from contextstore.models.state import (
    CommitRecord,
    ContextBlock,
    ContextBlockVersion,
    Memory,
    ProviderState,
    ScopedState,
    ScopedStateRevision,
    StateRevision,
    ThreadBlob,
)
from contextstore.models.store import StoreItem, StoreItemVersion, StoreVector
from contextstore.models.threads import Clear, Collapse, InDocument, Run, Session, SessionModel, Thread
from contextstore.models.workspaces import (
    ApiToken,
    Membership,
    ModelSettings,
    Retention,
    Workspace,
    redaction_default,
)

__all__ = [
    "AnnotationItem",
    "AnnotationQueue",
    "ScoreConfig",
    "AlertEvent",
    "AlertRule",
    "SavedView",
    "CallCacheVerdict",
    "ApiToken",
    "AuditLog",
    "CallReplay",
    "Clear",
    "Collapse",
    "Comment",
    "CommitRecord",
    "ContextBlock",
    "ContextBlockVersion",
    "Dataset",
    "DatasetItem",
    "CallFigure",
    "Evaluation",
    "Evaluator",
    "EvaluatorVersion",
    "Event",
    "Experiment",
    "ExperimentResult",
    "ExperimentScore",
    "EventSearch",
    "EventSearchPending",
    "InDocument",
    "Job",
    "Membership",
    "Memory",
    "ModelSettings",
    "OtelLog",
    "OtelPending",
    "OtelSpan",
    "OtelTrace",
    "ProviderState",
    "ReadAudit",
    "RenderRecord",
    "Retention",
    "Run",
    "ScopedState",
    "ScopedStateRevision",
    "Score",
    "Session",
    "SessionModel",
    "ShareLink",
    "StateRevision",
    "StoreItem",
    "StoreItemVersion",
    "StoreVector",
    "StoredText",
    "Thread",
    "ThreadBlob",
    "WorkerHeartbeat",
    "Workspace",
    "redaction_default",
]
