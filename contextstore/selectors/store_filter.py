"""LangGraph's store filter (`search(filter=...)`) as one SQL condition on an item's `value`, on
PostgreSQL (jsonb) and SQLite (JSON1): the search reads only the items that match.

The semantics are InMemoryStore's (langgraph.store.memory's `_compare_values`):
- `{"k": scalar}` is Python's `==` on the value at "k" (a missing key is None, so `None` also
  matches a missing key; `True == 1 == 1.0`, `False == 0`; a string never equals a number);
- `{"k": {...}}` without operators matches when the value at "k" is an object whose keys each
  match (a partial match, recursively); `{"k": [...]}` when it is a list of the same length whose
  elements each match;
- `{"k": {"$op": operand, ...}}`: every operator holds. `$eq`/`$ne` are Python's `==`/`!=` on the
  whole value (containers exactly: the same keys, or length, and equal members); `$gt` `$gte` `$lt`
  `$lte` compare as `float(value)` and `float(operand)` do: numbers, booleans (1 and 0) and
  numeric strings; anything else (None, a list, an object, other text) matches nothing where
  InMemoryStore raises.
Two bounds, where InMemoryStore's Python goes further: a numeric string is a plain numeral
(`NUMERAL`: sign, at most 15 digits each side of the point, an exponent of at most two digits;
"1_000", "inf" and " 3" are text), and numbers compare as doubles (integers beyond 2**53 may tie).
PostgresStore differs (its `$gt` compares text, its equality is jsonb's): see
docs/frameworks/langgraph.md. tests/services/test_store_filter.py checks this against a copy of
InMemoryStore's functions with hypothesis, on both databases.

The column is text (OrderedJSONField keeps key order), not a JSONField, so Django's key
transforms do not apply; and they read a key of digits as a list index ({"0": ...} could not be
filtered). Each step here is known to be a key or an index from the filter's own shape: the path
is a parameter (PostgreSQL's `#>` text[]; SQLite's JSON path, its keys quoted), never spliced.
"""

import math
import re
from typing import Any

from django.db.models import BooleanField, Func

NUMERAL = re.compile(r"[-+]?(\d{1,15}(\.\d{0,15})?|\.\d{1,15})([eE][-+]?\d{1,2})?")
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_COMPARE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
Step = str | int


def number_of(value: Any) -> float | None:
    """`float(value)` where InMemoryStore's comparison operators take it (bounded numerals)."""
    if isinstance(value, bool | int | float):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, str) and NUMERAL.fullmatch(value):
        return float(value)
    return None


class _Dialect:
    """SQL fragments for the value at a path; every condition is true or false, never NULL."""

    def __init__(self, column: str, column_params: list[Any]):
        self.column, self.column_params = column, column_params

    def at(self, path: list[Step]) -> tuple[str, list[Any]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def type_is(self, path: list[Step], *kinds: str) -> tuple[str, list[Any]]:
        raise NotImplementedError

    def missing(self, path: list[Step]) -> tuple[str, list[Any]]:
        raise NotImplementedError

    def text_equals(self, path: list[Step], text: str) -> tuple[str, list[Any]]:
        raise NotImplementedError

    def number(self, path: list[Step], *, strings: bool) -> tuple[str, list[Any]]:
        raise NotImplementedError

    def length_is(self, path: list[Step], kind: str, n: int) -> tuple[str, list[Any]]:
        raise NotImplementedError


class _Postgres(_Dialect):
    # the value parsed once per row: StoreFilter wraps the condition in a subquery naming it
    def doc(self) -> tuple[str, list[Any]]:
        return "store_filter.doc", []

    def at(self, path: list[Step]) -> tuple[str, list[Any]]:
        doc, params = self.doc()
        return f"({doc} #> %s)", [*params, [str(s) for s in path]]

    def _text(self, path: list[Step]) -> tuple[str, list[Any]]:
        doc, params = self.doc()
        return f"({doc} #>> %s)", [*params, [str(s) for s in path]]

    def _typeof(self, path: list[Step]) -> tuple[str, list[Any]]:
        sql, params = self.at(path)
        return f"jsonb_typeof({sql})", params

    def type_is(self, path: list[Step], *kinds: str) -> tuple[str, list[Any]]:
        names = {"bool": "boolean", "number": "number", "string": "string", "null": "null",
                 "object": "object", "array": "array"}
        sql, params = self._typeof(path)
        return f"COALESCE({sql} IN ({', '.join(['%s'] * len(kinds))}), false)", [
            *params, *(names[k] for k in kinds)]

    def missing(self, path: list[Step]) -> tuple[str, list[Any]]:
        sql, params = self._typeof(path)
        return f"({sql} IS NULL)", params

    def text_equals(self, path: list[Step], text: str) -> tuple[str, list[Any]]:
        kind, kparams = self._typeof(path)
        value, vparams = self._text(path)
        return f"COALESCE({kind} = 'string' AND {value} = %s, false)", [*kparams, *vparams, text]

    def number(self, path: list[Step], *, strings: bool) -> tuple[str, list[Any]]:
        kind, kparams = self._typeof(path)
        value, vparams = self._text(path)
        # a JSON number beyond a double's range (which Python's float() refuses too) is no number
        sql = (f"(CASE {kind} WHEN 'number' THEN (CASE WHEN abs(({value})::numeric) < 1e308 "
               f"AND (({value})::numeric = 0 OR abs(({value})::numeric) > 1e-307) "
               f"THEN ({value})::float8 END) "
               f"WHEN 'boolean' THEN (CASE WHEN {value} = 'true' THEN 1.0 ELSE 0.0 END)::float8")
        params = [*kparams, *vparams, *vparams, *vparams, *vparams, *vparams]
        if strings:
            sql += f" WHEN 'string' THEN (CASE WHEN {value} ~ %s THEN ({value})::float8 END)"
            params += [*vparams, f"^(?:{NUMERAL.pattern})$", *vparams]
        return sql + " END)", params

    def length_is(self, path: list[Step], kind: str, n: int) -> tuple[str, list[Any]]:
        at, params = self.at(path)
        kind_sql, kparams = self._typeof(path)
        count = f"jsonb_array_length({at})" if kind == "array" else \
            f"(SELECT count(*) FROM jsonb_object_keys({at}))"
        return (f"COALESCE(CASE WHEN {kind_sql} = %s THEN {count} = %s END, false)",
                [*kparams, "array" if kind == "array" else "object", *params, n])


class _SQLite(_Dialect):
    @staticmethod
    def path_of(path: list[Step]) -> str:
        out = "$"
        for step in path:
            out += f"[{step}]" if isinstance(step, int) else '."' + step + '"'
        return out

    def _call(self, function: str, path: list[Step]) -> tuple[str, list[Any]]:
        return f"{function}({self.column}, %s)", [*self.column_params, self.path_of(path)]

    def at(self, path: list[Step]) -> tuple[str, list[Any]]:
        return self._call("json_extract", path)

    def type_is(self, path: list[Step], *kinds: str) -> tuple[str, list[Any]]:
        names = {"bool": ["true", "false"], "number": ["integer", "real"], "string": ["text"],
                 "null": ["null"], "object": ["object"], "array": ["array"]}
        wanted = [name for k in kinds for name in names[k]]
        sql, params = self._call("json_type", path)
        return f"COALESCE({sql} IN ({', '.join(['%s'] * len(wanted))}), 0)", [*params, *wanted]

    def missing(self, path: list[Step]) -> tuple[str, list[Any]]:
        sql, params = self._call("json_type", path)
        return f"({sql} IS NULL)", params

    def text_equals(self, path: list[Step], text: str) -> tuple[str, list[Any]]:
        kind, kparams = self._call("json_type", path)
        value, vparams = self.at(path)
        return f"COALESCE({kind} = 'text' AND {value} = %s, 0)", [*kparams, *vparams, text]

    def number(self, path: list[Step], *, strings: bool) -> tuple[str, list[Any]]:
        kind, kparams = self._call("json_type", path)
        value, vparams = self.at(path)
        sql = (f"(CASE WHEN {kind} IN ('integer', 'real', 'true', 'false') "
               f"THEN CAST({value} AS REAL)")
        params = [*kparams, *vparams]
        if strings:
            sql += f" WHEN {kind} = 'text' AND {value} REGEXP %s THEN CAST({value} AS REAL)"
            params += [*kparams, *vparams, f"^(?:{NUMERAL.pattern})\\Z", *vparams]
        return sql + " END)", params

    def length_is(self, path: list[Step], kind: str, n: int) -> tuple[str, list[Any]]:
        typed, tparams = self.type_is(path, kind)
        count, cparams = self._call("(SELECT count(*) FROM json_each", path)
        return f"COALESCE({typed} AND {count}) = %s, 0)", [*tparams, *cparams, n]


def _and(parts: list[tuple[str, list[Any]]], true: str) -> tuple[str, list[Any]]:
    if not parts:
        return true, []
    return "(" + " AND ".join(sql for sql, _ in parts) + ")", [p for _, params in parts for p in params]


class _Build:
    def __init__(self, dialect: _Dialect, true: str, false: str):
        self.d, self.true, self.false = dialect, true, false

    def compare(self, path: list[Step], wanted: Any) -> tuple[str, list[Any]]:
        """InMemoryStore's `_compare_values(value at path, wanted)`."""
        if isinstance(wanted, dict):
            if any(k.startswith("$") for k in wanted):
                return _and([self.operator(path, k, v) for k, v in wanted.items()], self.true)
            return _and([self.d.type_is(path, "object"),
                         *(self.compare([*path, k], v) for k, v in wanted.items())], self.true)
        if isinstance(wanted, list):
            return _and([self.d.length_is(path, "array", len(wanted)),
                         *(self.compare([*path, i], v) for i, v in enumerate(wanted))], self.true)
        return self.equals(path, wanted)

    def equals(self, path: list[Step], wanted: Any, *, present: bool = False) -> tuple[str, list[Any]]:
        """Python's `==` of the value at path (None when missing, unless `present`) and `wanted`."""
        if wanted is None:
            null = self.d.type_is(path, "null")
            if present:
                return null
            missing = self.d.missing(path)
            return f"({null[0]} OR {missing[0]})", [*null[1], *missing[1]]
        if isinstance(wanted, str):
            return self.d.text_equals(path, wanted)
        if isinstance(wanted, bool | int | float):
            number, params = self.d.number(path, strings=False)
            return f"COALESCE({number} = %s, {self.false})", [*params, float(wanted)]
        if isinstance(wanted, list):
            return _and([self.d.length_is(path, "array", len(wanted)),
                         *(self.equals([*path, i], v, present=True) for i, v in enumerate(wanted))],
                        self.true)
        assert isinstance(wanted, dict)
        parts = [self.d.length_is(path, "object", len(wanted))]
        for k, v in wanted.items():
            missing = self.d.missing([*path, k])
            parts += [(f"NOT {missing[0]}", missing[1]), self.equals([*path, k], v, present=True)]
        return _and(parts, self.true)

    def operator(self, path: list[Step], operator: str, operand: Any) -> tuple[str, list[Any]]:
        if operator == "$eq":
            return self.equals(path, operand)
        if operator == "$ne":
            sql, params = self.equals(path, operand)
            return f"(NOT {sql})", params
        bound = number_of(operand)
        if bound is None:
            return self.false, []
        number, params = self.d.number(path, strings=True)
        return f"COALESCE({number} {_COMPARE[operator]} %s, {self.false})", [*params, bound]


class StoreFilter(Func):
    """`queryset.filter(StoreFilter("value", filter=...))`: the items whose value matches."""

    output_field = BooleanField()

    def __init__(self, expression: Any, *, filter: dict[str, Any]) -> None:  # noqa: A002 - LangGraph's name
        super().__init__(expression)
        self.filter = filter

    def _build(self, compiler: Any, connection: Any, dialect: type[_Dialect], true: str,
               false: str) -> tuple[str, list[Any]]:
        column, params = compiler.compile(self.source_expressions[0])
        build = _Build(dialect(column, list(params)), true, false)
        return _and([build.compare([k], v) for k, v in self.filter.items()], true)

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:  # type: ignore[override]
        return self._build(compiler, connection, _SQLite, "1", "0")

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        condition, params = self._build(compiler, connection, _Postgres, "true", "false")
        column, column_params = compiler.compile(self.source_expressions[0])
        return (f"(SELECT {condition} FROM (SELECT ({column})::jsonb AS doc) AS store_filter)",
                [*params, *column_params])
