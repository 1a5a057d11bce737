"""A name -> item registry whose lookups fail with a `ConfigError` naming the
field (== flag) that chose the name; tasks, models and methods use it."""

from typing import Callable, Dict, Generic, Iterator, Tuple, TypeVar

from federated_vision.errors import bad

T = TypeVar("T")


class Registry(Generic[T]):
  """Items by name, in registration order.

  Args:
    kind: what is registered, for messages ("task", "model", ...).
    field: the config field (== flag) whose value is a name here.
  """

  def __init__(self, kind: str, field: str):
    self.kind = kind
    self.field = field
    self._items: Dict[str, T] = {}

  def add(self, name: str, item: T) -> T:
    """Registers `item` (ValueError if `name` is empty, has '+' or is taken)."""
    if not name or "+" in name or name in self._items:
      raise ValueError(f"{self.kind} name {name!r} is empty, has '+' or is "
                       "already registered")
    self._items[name] = item
    return item

  def get(self, name: str) -> T:
    """The item, or `ConfigError('--<field>=<name>: must be one of ...')`."""
    if name not in self._items:
      raise bad(self.field, name, f"must be one of {', '.join(self._items)}")
    return self._items[name]

  def names(self, keep: Callable[[T], bool] = lambda item: True
            ) -> Tuple[str, ...]:
    """Registered names (of the items `keep` accepts), in order."""
    return tuple(n for n, item in self._items.items() if keep(item))

  def __contains__(self, name: str) -> bool:
    return name in self._items

  def __iter__(self) -> Iterator[str]:
    return iter(self._items)
