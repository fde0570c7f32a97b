"""A lazily computed attribute, kept on the instance once read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

_T = TypeVar("_T")


class cached_property(Generic[_T]):  # noqa: N801 (used as functools' is)
    """functools.cached_property without its lock (Python 3.11 takes one on every first
    read; a search over 30,000-user batch variants reads two million of them). The value
    goes into the instance's __dict__, where later reads find it before this descriptor."""

    def __init__(self, func: Callable[[Any], _T]) -> None:
        self.func = func
        self.name = func.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> cached_property[_T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> _T | cached_property[_T]:
        if obj is None:
            return self
        value = self.func(obj)
        obj.__dict__[self.name] = value
        return value
