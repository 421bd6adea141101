"""Every API operation is written once, for the blocking and the asyncio client both.

An operation is a generator that yields the requests it makes (`Call`) and gets back each
answer, or has the API's error raised where it yielded; its return value is the result::

    @op
    def state(self) -> Steps[State]:
        return _state((yield call("GET", self._path + "state/")))

Through a `Blocking` object (ContextStore, ThreadHandle, SyncTracker) `obj.state()` runs those
steps and returns the State; through an `Awaiting` one (AsyncContextStore, AsyncThreadHandle,
AsyncSyncTracker) it returns a coroutine of it. One operation built on another runs the other's
steps: ``yield from Class.state.steps(self)``.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

import httpx

from contextstore_client.errors import ContextStoreError

_fast_loads: Callable[[bytes], Any] | None
try:  # pydantic's JSON parser (Rust), where pydantic is installed (every framework's venv)
    from pydantic_core import from_json as _fast_loads
except ImportError:  # pragma: no cover - the client itself needs only httpx
    _fast_loads = None

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")


@dataclass(frozen=True)
class Call:
    """One request: ContextStore.request's arguments. The operation gets back the JSON body
    (None when empty), or the httpx.Response itself with `response=True`."""

    method: str
    path: str
    options: dict[str, Any] = field(default_factory=dict)
    response: bool = False

    def answer(self, response: httpx.Response) -> Any:
        if self.response:
            return response
        return loads(response.content) if response.content else None


def loads(body: bytes) -> Any:
    """An answer's JSON: parsed by pydantic_core where it is installed (half json.loads' time
    on a 1.5 MB session read), else by json. The two give the same values; the one text
    pydantic_core refuses and json takes (a lone surrogate escape, "\\ud800") goes to json."""
    if _fast_loads is not None:
        try:
            return _fast_loads(body)
        except ValueError:
            pass
    return json.loads(body)


def call(method: str, path: str, *, response: bool = False, **options: Any) -> Call:
    return Call(method, path, options, response)


# An operation's steps: the requests it yields, each sent back its answer, then its result.
Steps = Generator[Call, Any, R]


def pages(path: str, params: dict[str, Any] | None = None) -> Steps[list[dict[str, Any]]]:
    """Every item of a paginated list, following `next` links."""
    page = yield call("GET", path, params=params)
    items: list[dict[str, Any]] = list(page["results"])
    while page.get("next"):
        page = yield call("GET", page["next"])
        items += page["results"]
    return items


class Blocking:
    """Runs operations by sending each request and waiting for its answer."""

    def _send(self, call: Call) -> Any:
        raise NotImplementedError

    def _run(self, steps: Steps[T]) -> T:
        answer: Any = None
        error: ContextStoreError | None = None
        while True:
            try:
                request = steps.send(answer) if error is None else steps.throw(error)
            except StopIteration as done:
                result: T = done.value
                return result
            answer, error = None, None
            try:
                answer = self._send(request)
            except ContextStoreError as exc:
                error = exc


class Awaiting:
    """Runs operations in a coroutine, awaiting each request's answer."""

    async def _send(self, call: Call) -> Any:
        raise NotImplementedError

    async def _run(self, steps: Steps[T]) -> T:
        answer: Any = None
        error: ContextStoreError | None = None
        while True:
            try:
                request = steps.send(answer) if error is None else steps.throw(error)
            except StopIteration as done:
                result: T = done.value
                return result
            answer, error = None, None
            try:
                answer = await self._send(request)
            except ContextStoreError as exc:
                error = exc


class op(Generic[P, T]):  # noqa: N801 - used as a decorator, like property
    """An operation as a method: blocking on a Blocking object, a coroutine on an Awaiting one."""

    def __init__(self, steps: Callable[Concatenate[Any, P], Steps[T]]) -> None:
        self.steps = steps
        self.__doc__ = steps.__doc__
        signature = inspect.signature(steps)
        self._signature = signature.replace(parameters=list(signature.parameters.values())[1:])

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> op[P, T]: ...
    @overload
    def __get__(self, obj: Blocking, owner: type[Any]) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: Awaiting, owner: type[Any]) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, obj: Blocking | Awaiting | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        steps, run = self.steps, obj._run

        @functools.wraps(steps)
        def bound(*args: P.args, **kwargs: P.kwargs) -> Any:
            return run(steps(obj, *args, **kwargs))

        bound.__signature__ = self._signature  # type: ignore[attr-defined]
        return bound
