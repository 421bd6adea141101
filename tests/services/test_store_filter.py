"""The store's search filter runs in the database (selectors/store_filter.py) and matches what
LangGraph's InMemoryStore's own functions say, on this test run's database (PostgreSQL or SQLite).

`reference_matches` is langgraph.store.memory's `_compare_values` and `_apply_operator`
(langgraph-checkpoint 4.3.2) as written there, but for the two bounds the module documents: a
numeric string is a bounded numeral, and where InMemoryStore raises (float() of None, a list,
other text) the item does not match.
"""

import re
import uuid
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from contextstore.services.common import Actor
from contextstore.services.store import store_batch
from contextstore.storespec import check_ops

NUMERAL = re.compile(r"[-+]?(\d{1,15}(\.\d{0,15})?|\.\d{1,15})([eE][-+]?\d{1,2})?")


def _float(value: Any) -> float:
    if isinstance(value, str) and not NUMERAL.fullmatch(value):
        raise ValueError(value)
    return float(value)


def _compare_values(item_value: Any, filter_value: Any) -> bool:
    if isinstance(filter_value, dict):
        if any(k.startswith("$") for k in filter_value):
            return all(_apply_operator(item_value, op_key, op_value)
                       for op_key, op_value in filter_value.items())
        if not isinstance(item_value, dict):
            return False
        return all(_compare_values(item_value.get(k), v) for k, v in filter_value.items())
    elif isinstance(filter_value, (list, tuple)):
        return (isinstance(item_value, (list, tuple)) and len(item_value) == len(filter_value)
                and all(_compare_values(iv, fv) for iv, fv in zip(item_value, filter_value, strict=False)))
    else:
        return item_value == filter_value


def _apply_operator(value: Any, operator: str, op_value: Any) -> bool:
    try:
        if operator == "$eq":
            return value == op_value
        elif operator == "$gt":
            return _float(value) > _float(op_value)
        elif operator == "$gte":
            return _float(value) >= _float(op_value)
        elif operator == "$lt":
            return _float(value) < _float(op_value)
        elif operator == "$lte":
            return _float(value) <= _float(op_value)
        elif operator == "$ne":
            return value != op_value
    except (TypeError, ValueError):
        return False
    raise AssertionError(operator)


def reference_matches(value: dict, flt: dict) -> bool:
    return all(_compare_values(value.get(k), v) for k, v in flt.items())


KEYS = st.sampled_from(["a", "b", "0", "x y"])
TEXT = st.text(alphabet="01.e-+ aé", max_size=5)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53),
    st.floats(min_value=-1e300, max_value=1e300, allow_nan=False),
    TEXT, st.sampled_from([0, 1, 1.0, -1.5, "1", "2.5", "1e2", " 3", "", "a", True, False]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)), max_leaves=6)
OPERAND = st.one_of(SCALARS, VALUES)
OPERATORS = st.dictionaries(st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), OPERAND,
                            min_size=1, max_size=2)
FILTER_VALUES = st.recursive(st.one_of(SCALARS, OPERATORS), lambda inner: st.one_of(
    st.lists(inner, max_size=2), st.dictionaries(KEYS, inner, max_size=2)), max_leaves=4)
FILTERS = st.dictionaries(KEYS, FILTER_VALUES, min_size=1, max_size=2)
ITEMS = st.lists(st.dictionaries(KEYS, VALUES, max_size=3), min_size=1, max_size=8)


def search_keys(workspace, ns: str, flt: dict) -> set[str]:
    [found] = store_batch(workspace=workspace, actor=Actor.system("test"), ops=check_ops([
        {"op": "search", "namespace_prefix": [ns], "filter": flt, "limit": 100}]))
    return {item["key"] for item in found}


def put_all(workspace, values: list[dict]) -> str:
    """The values as items k0, k1, ... of a namespace of their own (examples share the database)."""
    ns = uuid.uuid4().hex
    store_batch(workspace=workspace, actor=Actor.system("test"), ops=check_ops([
        {"op": "put", "namespace": [ns], "key": f"k{i}", "value": v} for i, v in enumerate(values)]))
    return ns


@given(values=ITEMS, flt=FILTERS)
@example(values=[{"a": True}, {"a": 1}, {"a": 1.0}, {"a": "1"}, {}], flt={"a": 1})
@example(values=[{"a": None}, {}, {"a": 0}], flt={"a": None})
@example(values=[{"a": None}, {}, {"a": 0}], flt={"a": {"$ne": None}})
@example(values=[{"a": {"b": 1, "0": 2}}, {"a": {"b": 1}}, {"a": [1]}], flt={"a": {"b": 1}})
@example(values=[{"a": {"b": 1, "0": 2}}, {"a": {"b": 1}}], flt={"a": {"$eq": {"b": 1}}})
@example(values=[{"a": [1, {"b": 2, "0": 0}]}, {"a": [1, {"b": 3}]}, {"a": [1]}], flt={"a": [1, {"b": 2}]})
@example(values=[{"a": "10"}, {"a": "9"}, {"a": 9.5}, {"a": True}, {"a": "x"}, {"a": None}, {"a": [1]}],
         flt={"a": {"$gt": "9.2"}})
@example(values=[{"a": " 3"}, {"a": "1_0"}, {"a": "1e400"}, {"a": 2}], flt={"a": {"$lte": 10}})
@example(values=[{"0": 1}, {"a": [5]}], flt={"0": 1})
def test_the_sql_filter_matches_in_memory_store(workspace, values, flt):
    ns = put_all(workspace, values)
    expected = {f"k{i}" for i, v in enumerate(values) if reference_matches(v, flt)}
    assert search_keys(workspace, ns, flt) == expected


@pytest.mark.parametrize("flt, field", [
    ({"a": {"$gt": 1, "b": 2}}, "filter"), ({"a": {"$in": [1]}}, "filter"),
    ({'a"b': 1}, "filter"), ({"a": [{"$regex": "x"}]}, "filter")])
def test_a_filter_the_store_cannot_read_is_refused_at_the_door(flt, field):
    from contextstore.errors import InvalidInput
    with pytest.raises(InvalidInput, match=field):
        check_ops([{"op": "search", "filter": flt}])


def test_top_level_keys_are_keys_even_with_a_dollar(workspace):
    ns = put_all(workspace, [{"$eq": 1}, {"a": 1}])
    assert search_keys(workspace, ns, {"$eq": 1}) == {"k0"}
