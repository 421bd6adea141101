"""A workspace's trends: cost, tokens, errors, prompt-cache hit rate and p50/p95 model-call
latency per day, per model or per agent.

Model calls are the LLMComplete events (their usage and cost, as contextstore.usage reads them);
errors are the events with is_error (what Thread.error_count counts). Calls are summed in one
grouped query: a CTE parses each call's JSON text `data` once (jsonb on PostgreSQL), and the
numbers are read from it in SQL; a value that is not a JSON number counts as absent. Latency is
the time from the call's LLMCallStart (paired as selectors/calls pairs them) to its LLMComplete,
else the `latency_ms` the agent reported. Percentiles are PostgreSQL's percentile_cont (linear
interpolation) there, and the same computation in Python on SQLite.
"""

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import (
    CharField,
    Count,
    DateTimeField,
    F,
    FloatField,
    Func,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Cast, Coalesce, TruncDate
from django.utils import timezone

from contextstore.db import without_jit
from contextstore.models import Event, Session, Workspace
from contextstore.selectors.calls import CALL_END, CALL_START
from contextstore.usage import INPUT_DETAILS, USAGE_KEYS, USAGE_OBJECTS

RANGES = (7, 30, 90)  # days a trends page looks back
GROUPS = ("model", "agent")
MAX_SERIES = 6  # the costliest keys get a line of their own; the rest are summed as OTHER
OTHER = "(other)"
NONE = "(none)"
_KEY = re.compile(r"^[a-z_]+$")


class JSONPath(Func):
    """A value inside the JSON text of `data`, at `path` (keys, written here, never input): a
    JSON number as a number, a JSON string as text (`text=True`); anything else is NULL."""

    output_field: Any = FloatField()

    def __init__(self, expression: Any, *path: str, text: bool = False) -> None:
        assert all(_KEY.match(k) for k in path)
        self.path, self.text = path, text
        super().__init__(expression, output_field=CharField() if text else FloatField())

    def as_sql(self, compiler: Any, conn: Any, **extra: Any) -> Any:  # type: ignore[override]
        data, params = compiler.compile(self.source_expressions[0])
        if conn.vendor == "postgresql":
            # json, not jsonb: jsonb refuses the \\u0000 the JSON text may hold (contextstore.fields)
            doc, path = f"(({data})::json)", "'{" + ",".join(self.path) + "}'"
            kind, cast = ("string", "") if self.text else ("number", "::double precision")
            sql = f"CASE WHEN json_typeof({doc} #> {path}) = '{kind}' THEN ({doc} #>> {path}){cast} END"
            return sql, [*params, *params, *params]
        path = "'$." + ".".join(self.path) + "'"
        kinds = "('text')" if self.text else "('integer', 'real')"
        sql = (f"CASE WHEN json_valid({data}) AND json_type({data}, {path}) IN {kinds} "
               f"THEN json_extract({data}, {path}) END")
        return sql, [*params, *params, *params]


def _group_key(group: str) -> Any:
    if group == "agent":
        return F("thread__session__agent")
    return Coalesce(JSONPath(F("data"), "model", text=True), Value(""), output_field=CharField())


def percentile(values: list[float], p: float) -> float | None:
    """PostgreSQL's percentile_cont: linear interpolation between the two nearest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    at = p * (len(ordered) - 1)
    low, high = math.floor(at), math.ceil(at)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


# ------------------------------------------------------------------ the calls' numbers, in SQL

_PATH_KEY = re.compile(r"^[A-Za-z_][A-Za-z_.]*$")


def _number(pg: bool, *path: str, count: bool = False) -> str:
    """A JSON number at `path` in the parsed document `j`, else NULL (paths are written here;
    each key quoted, since OpenTelemetry's hold dots). `count`: a token count, which a negative
    number is not (NULL, as usage.read_usage reads it)."""
    assert all(_PATH_KEY.match(k) for k in path)
    if pg:
        at = "'{" + ",".join(f'"{k}"' for k in path) + "}'"
        sign = f" AND (j #>> {at})::double precision >= 0" if count else ""
        return f"CASE WHEN jsonb_typeof(j #> {at}) = 'number'{sign} THEN (j #>> {at})::double precision END"
    at = "'$" + "".join(f'."{k}"' for k in path) + "'"
    sign = f" AND json_extract(j, {at}) >= 0" if count else ""
    return f"CASE WHEN json_type(j, {at}) IN ('integer', 'real'){sign} THEN json_extract(j, {at}) END"


def _first(pg: bool, *keys: str, within: tuple[str, ...] = (), count: bool = True) -> str:
    """The first of `keys` the call reports, in its data or in a provider's usage object there
    (usage.USAGE_OBJECTS), in the order usage.read_usage looks (optionally inside one of
    `within`, the details objects). `count`: token counts, negative ones not read."""
    places = [(), *((o,) for o in USAGE_OBJECTS)]
    paths = [(*where, d) for where in places for d in within] if within else places
    return "COALESCE(" + ", ".join(_number(pg, *where, k, count=count) for k in keys for where in paths) + ")"


def _call_columns(pg: bool) -> tuple[dict[str, str], dict[str, str]]:
    """Each call's numbers, as contextstore.usage.read_usage reads them (the same keys,
    USAGE_KEYS, in the same order): what its JSON says (read once each), then what follows
    (the convention the usage follows decides what its cache tokens are counted against)."""
    model = ("CASE WHEN jsonb_typeof(j -> 'model') = 'string' THEN j ->> 'model' END" if pg
             else "CASE WHEN json_type(j, '$.model') = 'text' THEN json_extract(j, '$.model') END")
    said = {
        "cost": _first(pg, "cost", count=False), "inp": f"COALESCE({_first(pg, *USAGE_KEYS['input'])}, 0)",
        "out": _first(pg, *USAGE_KEYS["output"]),
        "cand": _first(pg, *USAGE_KEYS["candidates"]), "thought": _first(pg, *USAGE_KEYS["thoughts"]),
        "a_read": _first(pg, *USAGE_KEYS["anthropic_read"]),
        "a_made": _first(pg, *USAGE_KEYS["anthropic_write"]),
        "o_read": f"COALESCE({_first(pg, *USAGE_KEYS['included_read'], within=INPUT_DETAILS)}, "
                  f"{_first(pg, *USAGE_KEYS['included_read'])})",
        "g_read": _first(pg, *USAGE_KEYS["genai_read"]), "g_made": _first(pg, *USAGE_KEYS["genai_write"]),
        "reported_ms": _first(pg, "latency_ms", count=False), "model": f"COALESCE({model}, '')",
    }
    anthropic = "(a_read IS NOT NULL OR a_made IS NOT NULL)"
    genai = "(g_read IS NOT NULL OR g_made IS NOT NULL)"
    millis = ("EXTRACT(EPOCH FROM (occurred_at - started)) * 1000" if pg
              else "(julianday(occurred_at) - julianday(started)) * 86400000.0")
    greatest = "GREATEST" if pg else "MAX"
    cache_input = (f"CASE WHEN {anthropic} THEN inp + COALESCE(a_read, 0) + COALESCE(a_made, 0) "
                   f"WHEN o_read IS NOT NULL THEN inp "
                   f"WHEN {genai} THEN {greatest}(inp, COALESCE(g_read, 0) + COALESCE(g_made, 0)) END")
    derived = {
        # every input token, as read_usage counts them (Anthropic's plus its cache's)
        "cost": "cost", "input": f"COALESCE({cache_input}, inp)", "model": "model",
        # Gemini's output is its answer's tokens plus its thinking's
        "output": "COALESCE(out, CASE WHEN cand IS NOT NULL OR thought IS NOT NULL "
                  "THEN COALESCE(cand, 0) + COALESCE(thought, 0) END, 0)",
        "cache_read": f"CASE WHEN {anthropic} THEN COALESCE(a_read, 0) WHEN o_read IS NOT NULL THEN o_read "
                      f"WHEN {genai} THEN COALESCE(g_read, 0) END",
        "cache_input": cache_input,
        "latency": f"COALESCE({millis}, reported_ms)",
    }
    return said, derived


def _calls_sql_json(calls: QuerySet[Event], select: str, *, latency: bool = True) -> tuple[str, list[Any]]:
    """The JSON way (before CallFigure; kept to check the figures against): `select` over the
    CTE `c` of the calls' rows: day, key (model or agent), cost, input,
    output, cache_read, cache_input, latency. Each row's JSON is parsed once (materialized);
    PostgreSQL's jsonb refuses the escape of a NUL character, so a row holding one reports no
    numbers."""
    pg = connection.vendor == "postgresql"
    start = (Event.objects.filter(thread_id=OuterRef("thread_id"), type=CALL_START, seq__lt=OuterRef("seq"),
                                  call_id=OuterRef("call_id"))
             .annotate(r=Coalesce("run_id", Value(0)))
             .filter(Q(call_id__gt="") | Q(r=Coalesce(OuterRef("run_id"), Value(0))))
             .order_by("-seq").values("occurred_at")[:1])
    started = Subquery(start) if latency else Cast(Value(None), output_field=DateTimeField())
    inner, params = (calls.annotate(day=TruncDate("occurred_at"), started=started)
                     .values("day", "agent", "started", "occurred_at", "data").order_by()
                     .query.sql_with_params())
    parsed = ("CASE WHEN strpos(data, '\\u0000') = 0 THEN data::jsonb END" if pg
              else "CASE WHEN json_valid(data) THEN data END")
    said, derived = _call_columns(pg)
    return (f"WITH r AS MATERIALIZED (SELECT day, agent, started, occurred_at, {parsed} AS j "
            f"FROM ({inner}) q), "
            "b AS MATERIALIZED (SELECT day, agent, started, occurred_at, "
            + ", ".join(f"{v} AS {k}" for k, v in said.items()) + " FROM r), "
            "c AS MATERIALIZED (SELECT day, agent, " + ", ".join(f"{v} AS {k}" for k, v in derived.items())
            + f" FROM b) {select}", list(params))


def _calls_sql(calls: QuerySet[Event], select: str, *, latency: bool = True) -> tuple[str, list[Any]]:
    """`select` over the CTE `c` of the calls' rows (day, agent, model, cost, input, output,
    cache_read, cache_input, latency), read from their CallFigure: no JSON parsed, no start
    looked up (its latency was stored with the call)."""
    names = ("model", "cost", "input", "output", "cache_read", "cache_input", "latency")
    figures = {f"f_{n}": F(f"figure__{n}") for n in names}
    inner, params = (calls.annotate(day=TruncDate("occurred_at"), **figures)
                     .values("day", "agent", *(f"f_{n}" for n in names))
                     .order_by().query.sql_with_params())
    return ("WITH c AS MATERIALIZED (SELECT day, agent, COALESCE(f_model, '') AS model, f_cost AS cost, "
            "COALESCE(f_input, 0) AS input, COALESCE(f_output, 0) AS output, f_cache_read AS cache_read, "
            f"f_cache_input AS cache_input, {'f_latency' if latency else 'NULL'} AS latency "
            f"FROM ({inner}) q) {select}", list(params))


def _query(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _day(value: Any) -> date:
    return value if isinstance(value, date) else date.fromisoformat(str(value)[:10])


@dataclass
class Cell:
    """One day of one key."""

    calls: int = 0
    cost: Decimal = Decimal(0)
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_input: int = 0
    errors: int = 0
    p50: float | None = None
    p95: float | None = None
    latencies: list[float] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.input + self.output

    @property
    def hit_rate(self) -> float | None:
        return round(100 * self.cache_read / self.cache_input, 1) if self.cache_input else None


@dataclass
class Trends:
    days: list[date]
    group: str
    keys: list[str]  # series, costliest first (OTHER last when keys were folded)
    cells: dict[tuple[date, str], Cell]
    totals: dict[str, Cell]  # per key over the whole range

    def cell(self, day: date, key: str) -> Cell:
        return self.cells.get((day, key)) or Cell()


def workspace_trends(*, workspace: Workspace, days: int = 30, group: str = "model",
                     today: date | None = None, from_json: bool = False) -> Trends:
    """The workspace's last `days` days (today included) grouped by day and `group`.

    Two reads, neither JIT-compiled (db.without_jit: on a large workspace PostgreSQL's estimate
    passes jit_above_cost and compiling cost seconds of a sub-second query): the calls' sums
    with each day and key's latencies (its percentiles, and the folded keys' ones, computed
    from them here), and the error rows. Both read the events' CallFigure rows, not their JSON
    (from_json: the JSON parsed, as before those rows; the figures are the same)."""
    if days not in RANGES or group not in GROUPS:
        raise ValueError("days must be one of 7, 30, 90 and group one of model, agent")
    today = today or timezone.localdate()
    first = today - timedelta(days=days - 1)
    span = [first + timedelta(days=i) for i in range(days)]
    since = timezone.make_aware(datetime.combine(first, time.min))
    events = Event.objects.filter(thread__workspace=workspace, occurred_at__gte=since,
                                  occurred_at__lt=since + timedelta(days=days))
    calls = events.filter(type=CALL_END).annotate(agent=F("thread__session__agent"))
    pg = connection.vendor == "postgresql"
    latencies = ("array_agg(latency) FILTER (WHERE latency IS NOT NULL)" if pg
                 else "json_group_array(latency) FILTER (WHERE latency IS NOT NULL)")
    read = _calls_sql_json if from_json else _calls_sql
    sql, params = read(calls, f"SELECT day, {group}, COUNT(*), SUM(cost), SUM(input), SUM(output), "
                                    f"SUM(cache_read), SUM(cache_input), {latencies} "
                                    f"FROM c GROUP BY day, {group}")
    cells: dict[tuple[date, str], Cell] = {}
    with without_jit():
        rows = _query(sql, params)
        if group == "model":
            errors = (_model_errors_json if from_json else _model_errors)(events)
        else:
            errors = {(_day(err["day"]), err["key"]): err["n"] for err in (
                events.filter(is_error=True).annotate(day=TruncDate("occurred_at"), key=_group_key(group))
                .values("day", "key").annotate(n=Count("id")).order_by())}
    for day, key, n, cost, inp, out, read, cached, lat in rows:
        values = [float(v) for v in ((json.loads(lat) if isinstance(lat, str) else lat) or ())]
        cells[(_day(day), key or NONE)] = Cell(
            calls=n, cost=Decimal(str(round(cost or 0, 9))).normalize(), input=round(inp or 0),
            output=round(out or 0), cache_read=round(read or 0), cache_input=round(cached or 0),
            p50=percentile(values, 0.5), p95=percentile(values, 0.95), latencies=values)
    for (day, key), n in errors.items():
        cells.setdefault((day, key or NONE), Cell()).errors = n
    totals: dict[str, Cell] = {}
    for (_, key), c in cells.items():
        _add(totals.setdefault(key, Cell()), c)
    ranked = sorted(totals, key=lambda k: (-totals[k].cost, -totals[k].calls, -totals[k].errors, k))
    if len(ranked) <= MAX_SERIES:
        return Trends(days=span, group=group, keys=ranked, cells=cells, totals=totals)
    return _folded(span, group, ranked[:MAX_SERIES - 1], cells, totals)


FAILED_STATUSES = ("error", "failed", "failure")


def _parsed(pg: bool) -> str:
    """The JSON text `data` parsed (jsonb on PostgreSQL, which refuses a NUL's escape: such a
    row reads as NULL), else NULL."""
    return ("CASE WHEN strpos(data, '\\u0000') = 0 THEN data::jsonb END" if pg
            else "CASE WHEN json_valid(data) THEN data END")


def _text(pg: bool) -> Any:
    if pg:
        def text(path: str) -> str:
            return f"CASE WHEN jsonb_typeof(j #> '{{{path}}}') = 'string' THEN j #>> '{{{path}}}' END"
    else:
        def text(path: str) -> str:
            at = "$." + path.replace(",", ".")
            return f"CASE WHEN json_type(j, '{at}') = 'text' THEN json_extract(j, '{at}') END"
    return text


def _failed(pg: bool) -> str:
    """An LLMComplete that reports its own failure (`error`, or `status` error / failed)."""
    text = _text(pg)
    statuses = ", ".join(f"'{s}'" for s in FAILED_STATUSES)
    return (f"(type = '{CALL_END}' AND COALESCE({text('error')} > '' OR {text('error,message')} > '' "
            f"OR {text('status')} IN ({statuses}), {'false' if pg else '0'}))")


def _model_errors_json(events: QuerySet[Event]) -> dict[tuple[date, str], int]:
    """Errors per day and model. An error row (is_error: an `Error` event, a failed tool
    result) counts against the model it names, else against the LLM call it belongs to: the
    call with its call_id, else the call open in its thread when it was logged (an LLMCallStart
    of its run not yet closed by its LLMComplete). An LLMComplete that reports its own failure
    (`error`, or `status` error / failed) counts once, unless an error row of its call already
    did. Anything else counts against no model.

    One query: the error rows and the calls, each row's JSON parsed once (jsonb on PostgreSQL,
    so a row holding a NUL's escape names no model), of the threads where something failed."""
    pg = connection.vendor == "postgresql"
    inner, params = (events.filter(Q(is_error=True) | Q(type__in=(CALL_START, CALL_END)))
                     .annotate(day=TruncDate("occurred_at"))
                     .values("thread_id", "seq", "type", "call_id", "run_id", "day", "is_error", "data")
                     .order_by().query.sql_with_params())
    parsed = _parsed(pg)
    text, failed = _text(pg), _failed(pg)
    sql = (f"WITH r AS MATERIALIZED (SELECT thread_id, seq, type, call_id, run_id, day, is_error, "
           f"{parsed} AS j FROM ({inner}) q), "
           f"t AS MATERIALIZED (SELECT thread_id, seq, type, call_id, run_id, day, {text('model')} AS model, "
           f"is_error, {failed} AS failed FROM r) "
           "SELECT thread_id, seq, type, call_id, run_id, day, model, is_error, failed FROM t "
           "WHERE thread_id IN (SELECT thread_id FROM t WHERE is_error OR failed) ORDER BY thread_id, seq")
    return _count_errors(iter(_query(sql, list(params))))


def _model_errors(events: QuerySet[Event]) -> dict[tuple[date, str], int]:
    """_model_errors_json's counts, from the error rows' and calls' CallFigure (one query, no
    JSON parsed)."""
    inner, params = (events.filter(Q(is_error=True) | Q(type__in=(CALL_START, CALL_END)))
                     .annotate(day=TruncDate("occurred_at"), f_model=F("figure__model"),
                               f_failed=F("figure__failed"))
                     .values("thread_id", "seq", "type", "call_id", "run_id", "day", "f_model", "is_error",
                             "f_failed")
                     .order_by().query.sql_with_params())
    sql = (f"WITH t AS MATERIALIZED ({inner}) "
           "SELECT thread_id, seq, type, call_id, run_id, day, f_model, is_error, f_failed FROM t "
           "WHERE thread_id IN (SELECT thread_id FROM t WHERE is_error OR f_failed) ORDER BY thread_id, seq")
    return _count_errors(iter(_query(sql, list(params))))


def _count_errors(table: Iterator[tuple[Any, ...]]) -> dict[tuple[date, str], int]:
    counts: dict[tuple[date, str], int] = {}
    open_calls: dict[tuple[int, str, Any], list[Any]] = {}  # (thread, call key) -> [model, erred]
    by_call_id: dict[tuple[int, str], list[Any]] = {}
    call: list[Any] | None
    for thread_id, _, type_, call_id, run_id, when, model, is_error, has_failed in table:
        kind = ("call", call_id) if call_id else ("run", run_id) if run_id else ("thread", None)
        key = (thread_id, *kind)
        day = _day(when)
        if type_ == CALL_START:
            call = open_calls[key] = [model or "", False]
            if call_id:
                by_call_id[(thread_id, call_id)] = call
        elif is_error:
            call = (by_call_id.get((thread_id, call_id)) if call_id else None) or open_calls.get(key)
            if call is not None:
                call[1] = True
            name = model or (call[0] if call is not None else "")
            counts[(day, name)] = counts.get((day, name), 0) + 1
        elif type_ == CALL_END:
            call = open_calls.pop(key, None) or (by_call_id.get((thread_id, call_id)) if call_id else None)
            if has_failed and not (call is not None and call[1]):
                name = model or (call[0] if call is not None else "")
                counts[(day, name)] = counts.get((day, name), 0) + 1
            if call is not None:
                call[1] = True
    return counts


def _folded(span: list[date], group: str, top: list[str], cells: dict[tuple[date, str], Cell],
            totals: dict[str, Cell]) -> Trends:
    """The costliest keys and OTHER: the rest summed, their percentiles computed over their calls."""
    out: dict[tuple[date, str], Cell] = {}
    for (day, key), c in cells.items():
        if key in top:
            out[(day, key)] = c
        else:
            other = out.setdefault((day, OTHER), Cell())
            _add(other, c)
            other.latencies.extend(c.latencies)
    for (_, key), c in out.items():
        if key == OTHER:
            c.p50, c.p95 = percentile(c.latencies, 0.5), percentile(c.latencies, 0.95)
    folded = {k: totals[k] for k in top}
    for k in set(totals) - set(top):
        _add(folded.setdefault(OTHER, Cell()), totals[k])
    return Trends(days=span, group=group, keys=[*top, OTHER], cells=out, totals=folded)


def _add(total: Cell, c: Cell) -> None:
    for name in ("calls", "cost", "input", "output", "cache_read", "cache_input", "errors"):
        setattr(total, name, getattr(total, name) + getattr(c, name))


def cache_totals(*, workspace: Workspace, session: Session | None = None,
                 from_json: bool = False) -> dict[str, Any]:
    """Over every model call of the workspace (or of one session): calls, those whose usage
    reports cache tokens, the tokens read from the cache of their input, and the hit rate; one
    aggregate query (the cache pages' own figures look at the newest calls only)."""
    calls = Event.objects.filter(thread__workspace=workspace, type=CALL_END)
    if session is not None:
        calls = calls.filter(thread__session=session)
    source = _calls_sql_json if from_json else _calls_sql
    sql, params = source(calls.annotate(agent=F("thread__session__agent")),
                         "SELECT COUNT(*), COUNT(cache_input), SUM(cache_read), SUM(cache_input) FROM c",
                         latency=False)
    with without_jit():
        n, reporting, read_sum, input_sum = _query(sql, params)[0]
    read, total = round(read_sum or 0), round(input_sum or 0)
    return {"calls": n, "reporting": reporting, "cache_read": read, "input": total,
            "hit_rate": round(100 * read / total, 1) if total else None}


def explain_trends(*, workspace: Workspace, days: int = 30, group: str = "model") -> list[str]:
    """EXPLAIN ANALYZE of workspace_trends's main query as it runs it (PostgreSQL)."""
    today = timezone.localdate()
    since = timezone.make_aware(datetime.combine(today - timedelta(days=days - 1), time.min))
    calls = (Event.objects.filter(thread__workspace=workspace, type=CALL_END, occurred_at__gte=since,
                                  occurred_at__lt=since + timedelta(days=days))
             .annotate(agent=F("thread__session__agent")))
    sql, params = _calls_sql(calls, f"SELECT day, {group}, COUNT(*), SUM(cost) FROM c GROUP BY day, {group}")
    with without_jit():
        return [row[0] for row in _query(f"EXPLAIN (ANALYZE, FORMAT TEXT) {sql}", params)]


def window_figures(*, workspace: Workspace, since: datetime, until: datetime, agent: str = "",
                   model: str = "", sessions: QuerySet[Session] | None = None, calls: bool = True,
                   errors: bool = True) -> Cell:
    """The workspace's calls in [since, until) summed as one Cell (alert rules,
    services/alerts.py): the same two reads as workspace_trends (the calls' CallFigure rows,
    errors counted per model as its "model" grouping counts them), over a window instead of
    days, optionally of one agent, one model or some sessions; `calls` or `errors` False leaves
    that read out (its figures 0)."""
    events = Event.objects.filter(thread__workspace=workspace, occurred_at__gte=since, occurred_at__lt=until)
    if agent:
        events = events.filter(thread__session__agent=agent)
    if sessions is not None:
        events = events.filter(thread__session__in=sessions.values("pk"))
    rows = events.filter(type=CALL_END).annotate(agent=F("thread__session__agent"))
    if model:
        rows = rows.filter(figure__model=model)
    pg = connection.vendor == "postgresql"
    latencies = ("array_agg(latency) FILTER (WHERE latency IS NOT NULL)" if pg
                 else "json_group_array(latency) FILTER (WHERE latency IS NOT NULL)")
    sql, params = _calls_sql(rows, "SELECT COUNT(*), SUM(cost), SUM(input), SUM(output), SUM(cache_read), "
                                   f"SUM(cache_input), {latencies} FROM c")
    with without_jit():
        row: tuple[Any, ...] = _query(sql, params)[0] if calls else (0, None, None, None, None, None, None)
        counted = _model_errors(events) if errors else {}
    n, cost, inp, out, read, cached, lat = row
    values = [float(v) for v in ((json.loads(lat) if isinstance(lat, str) else lat) or ())]
    return Cell(calls=n, cost=Decimal(str(round(cost or 0, 9))).normalize(), input=round(inp or 0),
                output=round(out or 0), cache_read=round(read or 0), cache_input=round(cached or 0),
                errors=sum(count for (_, name), count in counted.items() if not model or name == model),
                p50=percentile(values, 0.5), p95=percentile(values, 0.95), latencies=values)
