"""Selecting named items (sweep points, preset runs) by shell patterns."""

import fnmatch
from typing import Callable, Sequence, Tuple, TypeVar

T = TypeVar("T")


class NoMatch(ValueError):
  """A pattern matches no item; `pattern` is the pattern."""

  def __init__(self, pattern: str):
    super().__init__(f"{pattern!r} matches nothing")
    self.pattern = pattern


def select(items: Sequence[T], patterns: Sequence[str] = (),
           name: Callable[[T], str] = lambda x: x.name) -> Tuple[T, ...]:
  """The items whose name matches any fnmatch pattern (all if none), in order.

  Raises:
    NoMatch: a pattern matches no item (callers rephrase it with context).
  """
  if not patterns:
    return tuple(items)
  for p in patterns:
    if not any(fnmatch.fnmatchcase(name(x), p) for x in items):
      raise NoMatch(p)
  return tuple(x for x in items
               if any(fnmatch.fnmatchcase(name(x), p) for p in patterns))
