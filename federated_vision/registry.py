"""The one name -> item registry: tasks, models, method components,
presets, sweeps and declared config sections use it. Lookups by `get` fail
with a `ConfigError` naming the field (== flag) that chose the name; it is
also a read-only mapping (`registry[name]`, `name in registry`, `dict(...)`)."""

from typing import (Callable, Dict, Generic, Iterable, Iterator, Mapping,
                    Optional, Tuple, TypeVar)

from federated_vision.errors import bad

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
  """Items by name, in registration order.

  Args:
    kind: what is registered, for messages ("task", "model", ...).
    field: the config field (== flag) whose value is a name here.
    builtins: a no-argument function returning the package's own (name,
      item) pairs, called on first use (items that are costly to build,
      e.g. presets); they come first, before anything added.
  """

  def __init__(self, kind: str, field: str,
               builtins: Optional[Callable[[], Iterable[Tuple[str, T]]]] = None):
    self.kind = kind
    self.field = field
    self._builtins = builtins
    self._items: Dict[str, T] = {}

  def _all(self) -> Dict[str, T]:
    if self._builtins is not None:
      load, self._builtins = self._builtins, None
      for name, item in load():
        self.add(name, item)
    return self._items

  def add(self, name: str, item: T) -> T:
    """Registers `item` (ValueError if `name` is empty, has '+' or is taken)."""
    items = self._all()
    if not name or "+" in name or name in items:
      raise ValueError(f"{self.kind} name {name!r} is empty, has '+' or is "
                       "already registered")
    items[name] = item
    return item

  def replace(self, name: str, item: T) -> T:
    """Replaces the item registered as `name` (KeyError if none is)."""
    items = self._all()
    if name not in items:
      raise KeyError(name)
    items[name] = item
    return item

  def get(self, name: str) -> T:  # pylint: disable=arguments-differ
    """The item, or `ConfigError('--<field>=<name>: must be one of ...')`."""
    items = self._all()
    if name not in items:
      raise bad(self.field, name, f"must be one of {', '.join(items)}")
    return items[name]

  def names(self, keep: Callable[[T], bool] = lambda item: True
            ) -> Tuple[str, ...]:
    """Registered names (of the items `keep` accepts), in order."""
    return tuple(n for n, item in self._all().items() if keep(item))

  def __getitem__(self, name: str) -> T:
    return self._all()[name]

  def __contains__(self, name: object) -> bool:
    return name in self._all()

  def __iter__(self) -> Iterator[str]:
    return iter(tuple(self._all()))

  def __len__(self) -> int:
    return len(self._all())
