"""Secrets redacted from agent text before it is stored: pure, no database.

`redact(rules, value)` walks a JSON value (strings, lists, objects: event content, parts, data,
tool arguments, state) and replaces every well-known secret (provider API keys, AWS access key
ids, GitHub tokens, JWTs, PEM private keys, passwords in URLs, ...) and every match of a
workspace's extra patterns with a typed marker, `[REDACTED:openai_key]`; it returns the new value
and the count of each kind. Object keys are kept, and so are the values of the keys the system
itself reads as ids or hashes (`SKIP_KEYS`).

The built-in patterns are anchored on a literal (`sk-`, `AKIA`, `eyJ`, `-----BEGIN`, `://`) that
is looked for first as a plain substring, so text without one costs a few substring searches;
none has a nested quantifier, so each runs in linear time. A workspace's own patterns are checked
when they are saved (`pattern_problem`) and run with the `regex` package's timeout: all of one
ingest call's user patterns share one deadline (REGEX_TIMEOUT_MS), and passing it refuses the
write (`RedactionTimeout`) rather than store text that was not checked.
"""

import json
import re
import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import regex

from contextstore.errors import DomainError

MARKER = "[REDACTED:{}]"
# Values of these keys are ids and hashes the system and the providers read back (tool-call
# ids, thinking signatures, message hashes): never rewritten.
SKIP_KEYS = frozenset({"id", "call_id", "tool_call_id", "tool_use_id", "signature",
                       "render_id", "message_hashes", "tools_hash", "payload_hash", "item_key"})
MAX_EXTRA_PATTERNS = 20
MAX_PATTERN_LENGTH = 500
NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,39}")


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of secret: its marker name, the literals one of which every match contains
    (empty: always run), and the pattern. A group named `secret` is the only part replaced (the
    password of a URL, the value after `Authorization: Bearer`)."""

    name: str
    triggers: tuple[str, ...]
    pattern: Any  # re.Pattern or regex.Pattern
    user: bool = False
    needs: str = ""  # a literal every match also holds (the "@" of a URL's password)


# Hand-written, each anchored on a literal and linear: one character class per run, no
# quantified group holding a quantifier.
_ID = r"[A-Za-z0-9_\-]"
BUILTIN: tuple[Rule, ...] = (
    Rule("anthropic_key", ("sk-ant-",), re.compile(rf"\bsk-ant-{_ID}{{20,}}")),
    # sk-..., sk-proj-..., sk-svcacct-...: at least 20 characters, one a digit (prose such as
    # "sk-learn-style-configuration" has none).
    Rule("openai_key", ("sk-",),
         re.compile(rf"\bsk-(?!ant-)(?=[A-Za-z_\-]{{0,200}}[0-9]){_ID}{{20,}}")),
    Rule("stripe_key", ("_live_", "_test_"),
         re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    Rule("aws_access_key_id", ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
         re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b")),
    Rule("aws_secret_access_key", ("ecret", "ECRET"),
         re.compile(r"(?i:aws_?secret_?(?:access_?)?key)[\"']?\s{0,5}[:=]\s{0,5}[\"']?"
                    r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])")),
    Rule("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
         re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b")),
    Rule("gitlab_token", ("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    Rule("slack_token", ("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    Rule("google_api_key", ("AIza",), re.compile(r"\bAIza[A-Za-z0-9_\-]{35}(?![A-Za-z0-9_\-])")),
    Rule("private_key", ("PRIVATE KEY",),
         re.compile(r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY-----[\s\S]*?"
                    r"(?:-----END (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY-----|\Z)")),
    # header.payload.signature, both JSON objects ("eyJ" is base64url of '{"').
    Rule("jwt", ("eyJ",),
         re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{10,}")),
    Rule("bearer_token", ("Bearer", "bearer", "BEARER"),
         re.compile(r"(?i:authorization)[\"']?\s{0,5}[:=]\s{0,5}[\"']?(?i:bearer)\s{1,5}"
                    r"(?P<secret>[A-Za-z0-9._~+/\-]{20,}=*)")),
    # scheme://user:password@host: only the password goes.
    Rule("url_password", ("://",), needs="@",
         pattern=re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]{0,20}://[^\s:/?#@\"'<>]{0,256}:"
                            r"(?P<secret>[^\s/?#@\"'<>]{1,256})@")),
)


class RedactionTimeout(DomainError):
    """A workspace's own pattern took longer than REGEX_TIMEOUT_MS: nothing is stored."""

    code = "redaction_timeout"
    status = 422


class Rules:
    """The compiled rules of one setting. The built-in rules' literals are looked for first, each
    a plain substring search (str's, several times faster than one regex alternation of them
    all, which tries every literal at every position), and only the rules whose literal the
    text holds run."""

    __slots__ = ("rules", "timeout_ms", "literals", "by_trigger", "always")

    def __init__(self, rules: tuple[Rule, ...], timeout_ms: int) -> None:
        self.rules = rules
        self.timeout_ms = timeout_ms
        self.literals = tuple(sorted({t for r in rules for t in r.triggers}))
        self.by_trigger = {t: [r for r in rules if t in r.triggers] for t in self.literals}
        self.always = [r for r in rules if not r.triggers]  # a workspace's own patterns

    def candidates(self, text: str) -> list[Rule]:
        """The rules that may match `text`, in their order."""
        hits = [t for t in self.literals if t in text]
        if not hits:
            return self.always
        chosen = {id(r) for t in hits for r in self.by_trigger[t]
                  if not r.needs or r.needs in text}
        return [r for r in self.rules if id(r) in chosen] + self.always

    def may_match(self, text: str) -> bool:
        """Whether any rule may match `text` (a workspace's own patterns always may)."""
        if self.always:
            return True
        for literal in self.literals:
            if literal in text:
                return any(not r.needs or r.needs in text
                           for t in self.literals if t in text for r in self.by_trigger[t])
        return False


def pattern_problem(pattern: Any) -> str | None:
    """Why a workspace's pattern is refused, or None: it must compile (with the `regex`
    package), match no empty string, hold no backreference and no quantified group that holds a
    quantifier itself (`(a+)+`, the shapes that backtrack exponentially)."""
    if not isinstance(pattern, str) or not pattern:
        return "a non-empty string"
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"at most {MAX_PATTERN_LENGTH} characters"
    try:
        compiled = regex.compile(pattern)
    except regex.error as exc:
        return f"not a valid regular expression ({exc})"
    if re.search(r"\\[1-9]|\(\?P=|\\g<|\\k<", pattern):
        return "backreferences are not allowed"
    if _nested_quantifier(pattern):
        return ("a repeated group holding a repetition or an alternative (such as (a+)+ or "
                "(a|ab)*) is not allowed; a character class ([ab]+) does the same in linear time")
    try:
        if compiled.fullmatch("", timeout=0.1) is not None:
            return "it matches empty text"
    except TimeoutError:
        return "it takes too long"
    return None


def _nested_quantifier(pattern: str) -> bool:
    """A group followed by a quantifier (*, +, {n,}, {n,m} with m > 1) that itself holds a
    quantifier or an alternation, found by scanning the pattern with a stack of groups."""
    stack: list[bool] = []  # per open group: holds a quantifier or "|"
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "]":
                i += 1
        elif c == "(":
            stack.append(False)
        elif c == ")" and stack:
            inner = stack.pop()
            repeated = _repeats(pattern, i + 1)
            if inner and repeated:
                return True
            if stack and (inner or repeated):
                stack[-1] = True
        elif c in "*+?{|" and stack:
            if c != "?" or i == 0 or pattern[i - 1] not in "(*+?}":
                stack[-1] = True
        i += 1
    return False


def _repeats(pattern: str, at: int) -> bool:
    if pattern[at:at + 1] in ("*", "+"):
        return True
    m = re.match(r"\{(\d*)(,?)(\d*)\}", pattern[at:])
    return bool(m and (m.group(2) and (not m.group(3) or int(m.group(3)) > 1)
                       or (m.group(1) and int(m.group(1)) > 1)))


def setting_problems(value: Any) -> dict[str, str]:
    """A workspace's redaction setting checked: {"enabled": bool, "extra_patterns": [{"name",
    "pattern"}]}; returns {place: problem} (empty when it is valid)."""
    if not isinstance(value, dict):
        return {"redaction": "must be an object with enabled and extra_patterns"}
    problems: dict[str, str] = {}
    unknown = set(value) - {"enabled", "extra_patterns"}
    if unknown:
        problems[f"redaction.{sorted(unknown)[0]}"] = "unknown field"
    if not isinstance(value.get("enabled", True), bool):
        problems["redaction.enabled"] = "true or false"
    extra = value.get("extra_patterns", [])
    if not isinstance(extra, list):
        return {**problems, "redaction.extra_patterns": "must be a list"}
    if len(extra) > MAX_EXTRA_PATTERNS:
        problems["redaction.extra_patterns"] = f"at most {MAX_EXTRA_PATTERNS}"
    for i, item in enumerate(extra):
        place = f"redaction.extra_patterns[{i}]"
        if not isinstance(item, dict) or set(item) != {"name", "pattern"}:
            problems[place] = 'an object {"name": ..., "pattern": ...}'
            continue
        if not isinstance(item["name"], str) or not NAME_RE.fullmatch(item["name"]):
            problems[f"{place}.name"] = "lower-case letters, digits and _, at most 40, a letter first"
        problem = pattern_problem(item["pattern"])
        if problem:
            problems[f"{place}.pattern"] = problem
    return problems


@lru_cache(maxsize=256)
def _compiled(enabled: bool, extra: tuple[tuple[str, str], ...], timeout_ms: int) -> Rules | None:
    if not enabled:
        return None
    user = tuple(Rule(name, (), regex.compile(pattern), user=True) for name, pattern in extra)
    return Rules(BUILTIN + user, timeout_ms)


def rules_of(setting: Any, *, default_on: bool, timeout_ms: int) -> Rules | None:
    """The compiled rules of a workspace's setting (None: redaction off). The server's default
    (REDACT_SECRETS) switches it off everywhere; a workspace can switch it off for itself. A
    setting that is not valid (edited outside the admin) keeps the built-in rules."""
    if not default_on:
        return None
    setting = setting if isinstance(setting, dict) else {}
    enabled = setting.get("enabled", True) is not False
    extra = setting.get("extra_patterns") or []
    pairs = tuple((p["name"], p["pattern"]) for p in extra if isinstance(p, dict)
                  and isinstance(p.get("name"), str) and not pattern_problem(p.get("pattern")))
    return _compiled(enabled, pairs, timeout_ms)


class _Run:
    """One ingest call's redaction: the counts so far and the user patterns' shared deadline."""

    __slots__ = ("rules", "counts", "deadline", "seen")

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.counts: dict[str, int] = {}
        self.deadline = time.monotonic() + rules.timeout_ms / 1000
        # Each text once a call, with what it found (None: nothing, the text is kept as it is):
        # an OTLP pass carries every message of a conversation again in each of its LLM calls.
        self.seen: dict[str, tuple[str | None, dict[str, int]]] = {}

    def text(self, s: str) -> str:
        known = self.seen.get(s)
        if known is None:
            counts, self.counts = self.counts, {}
            try:
                redacted = self._text(s)
                known = self.seen[s] = (None if redacted is s else redacted, self.counts)
            finally:
                self.counts = counts
            if len(redacted) >= _REMEMBER_FROM:
                _remember(redacted, self.rules)
        for name, n in known[1].items():
            self.counts[name] = self.counts.get(name, 0) + n
        # The caller's own object when nothing was found: callers tell a change by identity.
        return s if known[0] is None else known[0]

    def _text(self, s: str) -> str:
        for rule in self.rules.candidates(s):
            if rule.user:
                left = self.deadline - time.monotonic()
                if left <= 0:
                    raise _timeout(rule)
                try:
                    s, n = rule.pattern.subn(self._replace(rule), s, timeout=left)
                except TimeoutError:
                    raise _timeout(rule) from None
            else:
                s, n = rule.pattern.subn(self._replace(rule), s)
            if n:
                self.counts[rule.name] = self.counts.get(rule.name, 0) + n
        return s

    @staticmethod
    def _replace(rule: Rule) -> Callable[[Any], str]:
        marker = MARKER.format(rule.name)
        if "secret" not in rule.pattern.groupindex:
            return lambda m: marker
        def keep_around(m: Any) -> str:
            start, end = m.span("secret")
            whole = m.group(0)
            base = m.start()
            return whole[:start - base] + marker + whole[end - base:]
        return keep_around

    def value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v) if v else v
        if isinstance(v, list):
            new = [self.value(x) for x in v]
            return v if all(a is b for a, b in zip(new, v, strict=True)) else new
        if isinstance(v, dict):
            changed = False
            out = {}
            for k, x in v.items():
                y = x if k in SKIP_KEYS else self.value(x)
                changed |= y is not x
                out[k] = y
            return out if changed else v
        return v


# Texts a redaction just produced, by id (the entry holds the text, so its id is not reused while
# it is here), with the rules that made them: the storage boundary does not scan them again (an
# event's content, redacted by the service for its counter, reaches the field as the same str).
# A str cannot change, so a text found here is clean under those rules; a miss costs one scan.
_REMEMBER_FROM = 64
_REMEMBER_MAX = 4096
_clean: dict[int, tuple[str, "Rules"]] = {}


def _remember(text: str, rules: "Rules") -> None:
    if len(_clean) >= _REMEMBER_MAX:
        _clean.clear()
    _clean[id(text)] = (text, rules)


def _is_clean(text: str, rules: "Rules") -> bool:
    entry = _clean.get(id(text))
    return entry is not None and entry[0] is text and entry[1] is rules


def _timeout(rule: Rule) -> RedactionTimeout:
    return RedactionTimeout(
        f"The workspace's redaction pattern {rule.name!r} took too long; nothing was stored. "
        "Simplify the pattern in the workspace settings.",
        details={"redaction": rule.name})


def redact(rules: Rules | None, value: Any) -> tuple[Any, dict[str, int]]:
    """`value` with every secret replaced by its marker, and the count of each kind; the same
    object when nothing was found (and always when rules is None)."""
    if rules is None:
        return value, {}
    run = _Run(rules)
    return run.value(value), run.counts


EVENT_TEXT_FIELDS = ("content", "parts", "data")


def redact_events(rules: Rules | None, events: Any) -> Any:
    """A batch of incoming events (raw JSON objects, before eventspec validates them) with their
    content, parts and data redacted; an event where something was found counts it in its data
    under "redacted" ({"openai_key": 2}) when its data is an object or absent. Anything that is
    not a list of objects is returned as it is, for the validation to refuse."""
    if rules is None or not isinstance(events, list):
        return events
    run = _Run(rules)
    return [_event(run, e) for e in events]


def _event(run: "_Run", event: Any) -> Any:
    if not isinstance(event, dict):
        return event
    run.counts = {}
    out = None
    for field in EVENT_TEXT_FIELDS:
        if field in event:
            old = event[field]
            new = run.value(old)
            if new is not old:
                out = out if out is not None else dict(event)
                out[field] = new
    if out is None:
        return event
    data = out.get("data")
    if data is None or isinstance(data, dict):
        out["data"] = {**(data or {}), "redacted": dict(run.counts)}
    return out


def redact_each(rules: Rules | None, values: Iterable[Any]) -> list[Any]:
    """Several values redacted under one deadline (their counts are not kept)."""
    values = list(values)
    if rules is None:
        return values
    run = _Run(rules)
    return [run.value(v) for v in values]


def workspace_rules(workspace: Any) -> Rules | None:
    """The rules of a workspace (its `redaction` setting) under the server's REDACT_SECRETS and
    REGEX_TIMEOUT_MS; None when redaction is off."""
    from django.conf import settings  # read per call: tests and deployments override it

    config = settings.CONTEXTSTORE
    return rules_of(workspace.redaction, default_on=bool(config["REDACT_SECRETS"]),
                    timeout_ms=int(config["REGEX_TIMEOUT_MS"]))


# --- the storage boundary ------------------------------------------------------------------------
# Every text and JSON column a service writes is redacted here, by its field (contextstore/fields.py:
# get_db_prep_save, which save(), bulk_create, update(), bulk_update, db.insert_sql,
# db.row_update_sql and the COPY paths of db.py all call), whatever the caller did before. The
# rules are the workspace's the current request or task acts for (use_workspace, called where a
# workspace is resolved: token authentication, the dashboard's access checks, the services that
# write agent text); where none was named, the built-in rules under REDACT_SECRETS. A value the
# services already redacted with the same rules costs one scan for the literals here.

_UNSET: Any = object()
_scope: ContextVar[Any] = ContextVar("redaction_scope", default=_UNSET)


def use_workspace(workspace: Any) -> Rules | None:
    """The rules of `workspace` (workspace_rules), made the storage boundary's rules for the rest
    of the current context (a request, a task; reset by scope_reset). Returns them, for a service
    that also redacts before it stores (the events' counters, a hash of the redacted text)."""
    rules = workspace_rules(workspace)
    _scope.set(rules)
    return rules


def scope_reset() -> None:
    """Forget the workspace named by use_workspace: at the start of every request and task."""
    _scope.set(_UNSET)


def boundary_rules() -> Rules | None:
    """The rules the storage boundary applies now: the workspace's (use_workspace), else the
    built-in ones (None: REDACT_SECRETS is off, or the workspace switched redaction off)."""
    rules = _scope.get()
    if rules is not _UNSET:
        return rules
    from django.conf import settings

    config = settings.CONTEXTSTORE
    return rules_of(None, default_on=bool(config["REDACT_SECRETS"]),
                    timeout_ms=int(config["REGEX_TIMEOUT_MS"]))


def _may_hold_secret(rules: Rules, text: str) -> bool:
    return rules.may_match(text)


def stored_text(text: str) -> str:
    """A text as the storage boundary writes it: every secret replaced by its marker."""
    rules = boundary_rules()
    if rules is None or not text or _is_clean(text, rules) or not _may_hold_secret(rules, text):
        return text
    return _Run(rules).text(text)


def stored_value(value: Any, encoded: str) -> Any:
    """A JSON value as the storage boundary writes it, given its JSON text `encoded` (which holds
    every literal its strings hold: the encoder escapes none of their characters): the same
    object when nothing was found, else a redacted copy (keys and SKIP_KEYS values kept)."""
    rules = boundary_rules()
    if rules is None or not _may_hold_secret(rules, encoded):
        return value
    return _Run(rules).value(value)


def stored_json_text(text: str, dumps: Callable[[Any], str], *, patch: bool = False) -> str:
    """JSON text already serialized by its writer, as the storage boundary writes it: the same
    text when nothing was found, else the redacted value serialized again by `dumps`. `patch`:
    RFC 6902 operations, of which only the values are agent data (a path names keys, which a
    document keeps)."""
    rules = boundary_rules()
    if rules is None or not text or not _may_hold_secret(rules, text):
        return text
    value = json.loads(text)
    run = _Run(rules)
    if patch and isinstance(value, list):
        new: Any = [{**op, "value": run.value(op["value"])} if isinstance(op, dict) and "value" in op
                    else op for op in value]
        changed = any(isinstance(a, dict) and "value" in a and a["value"] is not b["value"]
                      for b, a in zip(value, new, strict=True))
        return dumps(new) if changed else text
    new = run.value(value)
    return text if new is value else dumps(new)


# --- which columns are redacted ------------------------------------------------------------------
# Every CharField, TextField and JSONField (and their subclasses) of every model either redacts
# (its field class has `redacts = True`: contextstore/fields.py) or is named here with the reason
# it holds no text an agent or a person could paste a secret into, or why redacting it would be
# wrong. tests/test_redaction_columns.py fails for a new column that is neither, and checks the
# table of docs/security.md against both.
_ID = "an id or key a client addresses the row by; a marker would make it a different row"
_CHOICE = "one of the model's choices"
_HASH = "a hex digest"
_MODEL = "a model's name, read back as an identifier (prices, provider requests)"
_SYSTEM = "a name the server writes (an audit action, a target's type or id)"
EXEMPT_COLUMNS: dict[str, str] = {
    "Workspace.model": _MODEL,
    "Workspace.slug": "the workspace's slug (a letters, digits and - name)",
    "Workspace.redaction": "the redaction setting itself: pattern names and expressions, "
                           "checked when saved",
    "Membership.role": _CHOICE,
    "ApiToken.prefix": "the first characters of a token, shown to tell tokens apart; the token "
                       "itself is never stored",
    "ApiToken.token_hash": _HASH,
    "ApiToken.scope": _CHOICE,
    "Session.model": _MODEL,
    "Session.key": _ID,
    "Session.user_id": _ID,
    "Session.app": _ID,
    "SessionModel.model": _MODEL,
    "CallFigure.model": _MODEL,
    "Thread.model": _MODEL,
    "Run.run_id": _ID,
    "Run.status": _CHOICE,
    "Collapse.source": _CHOICE,
    "Event.type": "an event type: a printable name without whitespace, at most 64",
    "Event.role": "a message role (user, assistant, tool, ...)",
    "Event.call_id": "a tool call's id, which the provider reads back",
    "Event.step": _ID,
    "Event.anchor": _ID,
    "Event.client_id": _ID,
    "Event.payload_hash": _HASH,
    "Event.item_key": _ID,
    "Event.status": _CHOICE,
    "EventSearch.text": "filled in SQL from the event's content, parts and data, which are "
                        "redacted (services/search.py)",
    "ContextBlock.name": _ID,
    "ContextBlock.placement": _CHOICE,
    "ContextBlockVersion.name": _ID,
    "ContextBlockVersion.placement": _CHOICE,
    "ProviderState.provider": _ID,
    "Memory.user_id": _ID,
    "Memory.key": _ID,
    "StoreItem.path": "the namespace's labels, ids a client addresses items by (as keys)",
    "StoreItem.key": _ID,
    "StoreItem.index_fields": "field paths of the item's value (names, not content)",
    "StoreItemVersion.action": _CHOICE,
    "StoreItemVersion.other_key": "the other key of a move: an id, as StoreItem.key",
    "StoreVector.field": "a field path of the item's value (a name, not content)",
    "Job.kind": _CHOICE,
    "Job.status": _CHOICE,
    "Job.pending_key": "a key the server makes of a thread id and a job kind",
    "AuditLog.actor_type": _CHOICE,
    "AuditLog.action": _SYSTEM,
    "AuditLog.target_type": _SYSTEM,
    "AuditLog.target_id": _SYSTEM,
    "ReadAudit.actor_key": "user:<id>, token:<id> or <type>:<label> (the label is redacted): "
                           "part of the hour's unique key",
    "ReadAudit.actor_type": _CHOICE,
    "ReadAudit.action": _CHOICE,
    "ReadAudit.target_type": _SYSTEM,
    "ReadAudit.target_id": _SYSTEM,
    "StoredText.sha256": _HASH,
    "RenderRecord.format": _CHOICE,
    "RenderRecord.prefix_hash": _HASH,
    "CallReplay.model": _MODEL,
    "CallReplay.request_hash": _HASH,
    "CallReplay.status": _CHOICE,
    "Experiment.model": _MODEL,
    "Experiment.status": _CHOICE,
    "ExperimentResult.model": _MODEL,
    "ExperimentResult.status": _CHOICE,
    "ExperimentScore.target": _CHOICE,
    "ExperimentScore.evaluator": "builtin:<name> or an evaluator's id: the key a result's score is found by",
    "ExperimentScore.data_type": _CHOICE,
    "ScopedState.app": _ID,
    "ScopedState.scope": _CHOICE,
    "ScopedState.user_id": _ID,
    "ThreadBlob.key": _ID,
    "CommitRecord.batch_id": _ID,
    "CommitRecord.request_hash": _HASH,
    "OtelSpan.trace_id": "an OpenTelemetry trace id (hex)",
    "OtelSpan.span_id": "an OpenTelemetry span id (hex)",
    "OtelSpan.parent_span_id": "an OpenTelemetry span id (hex)",
    "OtelLog.trace_id": "an OpenTelemetry trace id (hex)",
    "OtelLog.span_id": "an OpenTelemetry span id (hex)",
    "OtelLog.digest": _HASH,
    "OtelPending.trace_id": "an OpenTelemetry trace id (hex)",
    "CallCacheVerdict.status": _CHOICE,
    "CallCacheVerdict.cause": _CHOICE,
    "OtelTrace.trace_id": "an OpenTelemetry trace id (hex)",
    "OtelTrace.session_key": _ID,
    "Score.data_type": _CHOICE,
    "ShareLink.kind": _CHOICE,
    "ShareLink.prefix": "the first characters of a link's token, to tell links apart",
    "ShareLink.token_hash": _HASH,
    "DatasetItem.kind": _CHOICE,
    "ScoreConfig.data_type": _CHOICE,
    "AnnotationItem.kind": _CHOICE,
    "AnnotationItem.status": _CHOICE,
    "DatasetItem.user_id": _ID,
    "Evaluator.kind": _CHOICE,
    "Evaluator.target": _CHOICE,
    "Evaluator.filter_model": _MODEL,
    "EvaluatorVersion.model": _MODEL,
    "Evaluation.subject": _SYSTEM,
    "Evaluation.status": _CHOICE,
    "WorkerHeartbeat.hostname": "a Celery worker's node name (celery@host), written by the worker itself",
    "SavedView.page": _CHOICE,
    "AlertRule.metric": _CHOICE,
    "AlertRule.comparison": _CHOICE,
    "AlertRule.state": _CHOICE,
    "AlertRule.agent": "an agent's name as sessions hold it (Session.agent), compared as an id",
    "AlertRule.model": _MODEL,
    "AlertRule.webhook_url": "the address alerts are posted to, read back as written (a marker "
                             "would send them elsewhere); shown to people as its host only",
    "AlertRule.secret": "the key the webhook's HMAC signature is made with: random, made by the "
                        "server, read back to sign (a marker would sign with another key); "
                        "never shown after the rule is made",
    "AlertEvent.kind": _CHOICE,
    "AlertEvent.delivery": _CHOICE,
}
# Django's own tables: no service of contextstore writes agent or people's text into them.
EXEMPT_APPS: dict[str, str] = {
    "admin": "Django's admin change log: an object's str() (a redacted title, name or text) "
             "and the names of the fields changed",
    "auth": "Django's accounts, groups and permissions (a password is stored hashed)",
    "contenttypes": "Django's names of the models",
    "sessions": "Django's signed login sessions",
    "axes": "django-axes' login attempts and lockouts: the username typed, the address and the "
            "browser's user agent, never a password (AXES_SENSITIVE_PARAMETERS)",
}
