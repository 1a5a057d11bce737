"""Configuration fields declared once: declared sections -> flags.

Every setting of an experiment is a field of a frozen dataclass declared
with `option` (its default, its `--help` text and its absl bounds); its
name is the binaries' flag name. The experiment config's own sections
(`experiment.config.SECTIONS`: data, model, methods, training, ...) and
every component's own options (a task's, an algorithm's, a variant's, a
server optimizer's) are declared the same way, and
`experiments.flags_lib` generates one absl flag per declared field from
here: there is no hand-written flag. An optional `validate(self)` method
of a section raises `ConfigError` naming the field:

    @dataclasses.dataclass(frozen=True)
    class ToyOptions:
      toy_num_classes: int = config_fields.option(3, "Classes of toy.",
                                                  lower_bound=2)

      def validate(self):
        if self.toy_num_classes > 10: raise bad("toy_num_classes", ...)

`declare(kind, name, cls)` registers a section (`tasks.register_task` does
it for a `Task(options=cls)`, `methods.register` for any method component's
`options`, `experiment.config` for its own sections, of kind "config"). A
config holds component fields as an `Options` of one kind ("task" for
`DataConfig.options`, "method" for the methods', "shorthand" for the
method-selecting --<variant> flags); a field not set has its declared
default. A field's declared bounds (`lower_bound`, `upper_bound`,
`enum_values`) are checked in one place for every way a component's value
arrives (flags, presets, sweeps, library calls): `Options.validate`.

Importing this module imports nothing heavy and changes no global state.
"""

import dataclasses
import math
import typing
from typing import Iterable, Mapping, Optional, Tuple

from federated_vision.errors import ConfigError, bad
from federated_vision.registry import Registry

TASK = "task"
# Method components' own hyper-parameters and the methods' shared ones
# (`federated_vision.methods`).
METHOD = "method"
VARIANT = METHOD  # The name before server optimizers and algorithms had options.
# The shorthand flags selecting methods (--fedir: `ClientWork.shorthand`).
SHORTHAND = "shorthand"
# The experiment config's own sections (`experiment.config.SECTIONS`).
CONFIG = "config"
KINDS = (TASK, METHOD, SHORTHAND, CONFIG)
# Flag kinds of `flag_kind`: absl DEFINE_<kind>.
_SCALARS = {bool: "bool", int: "integer", float: "float", str: "string"}


def option(default, help_text, **bounds) -> dataclasses.Field:
  """A section field: its default, its `--help` text and absl bounds
  (`lower_bound=`, `upper_bound=`; `enum_values=[...]` for a str).
  `help_text` may be a no-argument function returning it, for a text that
  names what is registered when the flags are defined (e.g. the tasks)."""
  if not callable(help_text) and (not help_text or not help_text.strip()):
    raise ValueError("option: the help text is empty")
  return dataclasses.field(default=default,
                           metadata={"help": help_text, "bounds": bounds})


def help_text(f: dataclasses.Field) -> str:
  """A declared field's `--help` text."""
  text = f.metadata["help"]
  return text() if callable(text) else text


@dataclasses.dataclass(frozen=True)
class Section:
  """A declared config section.

  Attributes:
    kind: one of KINDS.
    owners: names of the components reading it (tasks may share one).
    cls: the frozen dataclass.
  """
  kind: str
  owners: Tuple[str, ...]
  cls: type

  @property
  def fields(self) -> Tuple[dataclasses.Field, ...]:
    """Its declared fields (a config section's `Options` fields, which hold
    its components' fields, are not fields of their own)."""
    return tuple(f for f in dataclasses.fields(self.cls)
                 if not isinstance(f.default, Options))

  @property
  def field_names(self) -> Tuple[str, ...]:
    return tuple(f.name for f in self.fields)

  def help(self, name: str) -> str:
    """The flag's --help text of field `name`: '<owners>: <help>' for a
    component's field; a config section's own as declared."""
    f = {f.name: f for f in self.fields}[name]
    if self.kind == CONFIG:
      return help_text(f)
    return f"{'/'.join(self.owners)}: {help_text(f)}"


# Sections by their class's qualified name, in declaration order.
_SECTIONS: Registry[Section] = Registry("config section", "extra_modules")


def _key(cls: type) -> str:
  return f"{cls.__module__}.{cls.__qualname__}"


def flag_kind(cls: type, f: dataclasses.Field) -> str:
  """'bool' | 'integer' | 'float' | 'string' | 'list' for field `f`
  (Optional[...] of those; Tuple[str, ...] is a comma-separated list)."""
  hint = typing.get_type_hints(cls)[f.name]
  args = [a for a in typing.get_args(hint) if a is not type(None)]
  if typing.get_origin(hint) is typing.Union and len(args) == 1:
    hint = args[0]
  if typing.get_origin(hint) is tuple and typing.get_args(hint) == (str, ...):
    return "list"
  if hint in _SCALARS:
    return _SCALARS[hint]
  raise ValueError(f"{cls.__name__}.{f.name}: type {hint} has no flag (bool, "
                   "int, float, str, Optional of those or Tuple[str, ...])")


def check_bounds(cls: type, f: dataclasses.Field, value) -> None:
  """A field value against its declaration: its type (None only for an
  Optional field) and its `lower_bound` / `upper_bound` / `enum_values`, as
  absl checks the flag; the same check for values from presets, sweeps and
  library calls.

  Raises:
    ConfigError: '--<field>=<value>: <reason>'.
  """
  kind = flag_kind(cls, f)
  optional = type(None) in typing.get_args(typing.get_type_hints(cls)[f.name])
  if value is None:
    if optional:
      return
    raise bad(f.name, value, "must be set")
  expected = {"bool": (bool,), "integer": (int,), "float": (int, float),
              "string": (str,), "list": (tuple, list)}[kind]
  if not isinstance(value, expected) or (
      kind in ("integer", "float") and isinstance(value, bool)):
    raise bad(f.name, value, f"must be a{'n' if kind == 'integer' else ''} "
              f"{kind}")
  bounds = f.metadata["bounds"]
  number = "a finite number " if kind == "float" else ""
  finite = kind != "float" or math.isfinite(value)
  show = lambda b: f"{b:g}" if isinstance(b, float) else str(b)
  if "lower_bound" in bounds and not (finite and value >= bounds["lower_bound"]):
    raise bad(f.name, value, f"must be {number}>= {show(bounds['lower_bound'])}")
  if "upper_bound" in bounds and not (finite and value <= bounds["upper_bound"]):
    raise bad(f.name, value, f"must be {number}<= {show(bounds['upper_bound'])}")
  if not finite:
    raise bad(f.name, value, "must be a finite number")
  if "enum_values" in bounds and value not in bounds["enum_values"]:
    raise bad(f.name, value,
              f"must be one of {', '.join(map(str, bounds['enum_values']))}")


def declare(kind: str, owner: str, cls: type) -> Section:
  """Declares `cls` as the config section of component `owner`.

  The same class may be declared by several owners of one kind (e.g. the
  tasks sharing one loader's options). Field names are unique across all
  sections.

  Raises:
    ValueError: not a frozen dataclass, a field without default or help, a
      type without a flag, or a field name already declared elsewhere.
  """
  if kind not in KINDS:
    raise ValueError(f"section kind must be one of {KINDS}, got {kind!r}")
  if not (dataclasses.is_dataclass(cls) and
          cls.__dataclass_params__.frozen):  # pytype: disable=attribute-error
    raise ValueError(f"{owner}: options {cls!r} must be a frozen dataclass")
  if _key(cls) in _SECTIONS:
    old = _SECTIONS[_key(cls)]
    if old.cls is not cls or old.kind != kind:
      raise ValueError(f"{owner}: {cls.__name__} is a {old.kind} section"
                       if old.cls is cls else f"{owner}: another section is "
                       f"named {_key(cls)}")
    if owner not in old.owners:
      _SECTIONS.replace(_key(cls), dataclasses.replace(
          old, owners=old.owners + (owner,)))
    return _SECTIONS[_key(cls)]
  taken = {n for s in _SECTIONS.values() for n in s.field_names}
  for f in Section(kind, (owner,), cls).fields:
    if f.default is dataclasses.MISSING or "help" not in f.metadata:
      raise ValueError(f"{owner}: {cls.__name__}.{f.name} needs a default "
                       "and help: declare it with config_fields.option(...)")
    if f.name in taken:
      raise ValueError(f"{owner}: option {f.name!r} is already declared by "
                       f"{field_section(f.name).owners}")
    flag_kind(cls, f)
  return _SECTIONS.add(_key(cls), Section(kind, (owner,), cls))


def sections(kind: Optional[str] = None) -> Tuple[Section, ...]:
  """Declared sections (of `kind`), in declaration order."""
  return tuple(s for s in _SECTIONS.values() if kind in (None, s.kind))


def field_names(kind: Optional[str] = None) -> Tuple[str, ...]:
  """Every declared field (of `kind`), in declaration order."""
  return tuple(n for s in sections(kind) for n in s.field_names)


def field_section(name: str) -> Optional[Section]:
  """The section declaring field `name`, or None."""
  for s in _SECTIONS.values():
    if name in s.field_names:
      return s
  return None


def sections_of(kind: str, owner: str) -> Tuple[Section, ...]:
  """Component `owner`'s sections (a task may declare several, e.g. a
  loader's options shared with other tasks and its own)."""
  return tuple(s for s in sections(kind) if owner in s.owners)


@dataclasses.dataclass(frozen=True)
class Options:
  """Values of the declared fields of one kind; an unset field has its
  declared default. Frozen and hashable (a sweep point is a value).

  Attributes:
    kind: one of KINDS.
    values: ((field, value), ...) of the fields set away from their
      defaults, sorted by name (so equal settings are equal values).
  """
  kind: str = TASK
  values: Tuple[Tuple[str, object], ...] = ()

  def names(self) -> Tuple[str, ...]:
    """Every declared field of this kind."""
    return field_names(self.kind)

  def get(self, name: str):
    """The value of field `name` (its default when unset).

    Raises:
      AttributeError: `name` is not a declared field of this kind.
    """
    section = field_section(name)
    if section is None or section.kind != self.kind:
      raise AttributeError(f"no {self.kind} option {name!r}")
    given = dict(self.values)
    if name in given:
      return given[name]
    return {f.name: f.default for f in section.fields}[name]

  def items(self) -> Tuple[Tuple[str, object], ...]:
    """((field, value), ...) over every declared field of this kind."""
    return tuple((n, self.get(n)) for n in self.names())

  def replace(self, values: Mapping[str, object]) -> "Options":
    """A copy with `values` set (lists become tuples).

    Raises:
      ConfigError: a name that is not a declared field of this kind.
    """
    out = dict(self.values)
    for name, value in values.items():
      section = field_section(name)
      if section is None or section.kind != self.kind:
        raise ConfigError(f"--{name}: not a declared {self.kind} option",
                          name)
      out[name] = tuple(value) if isinstance(value, list) else value
      if out[name] == {f.name: f.default for f in section.fields}[name]:
        del out[name]
    return Options(self.kind, tuple(sorted(out.items())))

  def section(self, owner: str, cls: Optional[type] = None):
    """Component `owner`'s section dataclass (`cls`, or its only one) with
    these values; None if it declared none.

    Raises:
      ValueError: `owner` declared several sections and `cls` is None.
    """
    found = [s for s in sections_of(self.kind, owner)
             if cls in (None, s.cls)]
    if len(found) > 1:
      raise ValueError(f"{owner} declares {len(found)} sections: name one")
    if not found:
      return None
    return found[0].cls(**{n: self.get(n) for n in found[0].field_names})

  def validate(self, owners: Iterable[str]) -> None:
    """Checks the fields of the sections of `owners`: each field's declared
    bounds (`check_bounds`), then the section's own `validate()` if any.

    Raises:
      ConfigError: naming the field.
    """
    for owner in dict.fromkeys(owners):
      for s in sections_of(self.kind, owner):
        for f in s.fields:
          check_bounds(s.cls, f, self.get(f.name))
        values = self.section(owner, s.cls)
        if hasattr(values, "validate"):
          values.validate()


# Config sections holding `Options` fields (federated_vision.experiment.config).

def options_fields(cls) -> Tuple[dataclasses.Field, ...]:
  """The section's `Options` fields (components' declared fields: tasks' in
  data; the methods' hyper-parameters and shorthands in methods)."""
  return tuple(f for f in dataclasses.fields(cls)
               if isinstance(f.default, Options))


def options_field(cls) -> Optional[dataclasses.Field]:
  """The section's first `Options` field, or None."""
  found = options_fields(cls)
  return found[0] if found else None


def leaf_names(cls) -> Tuple[str, ...]:
  """A section's leaf fields (== flags): its own, then the declared ones."""
  opts = options_fields(cls)
  own = tuple(f.name for f in dataclasses.fields(cls) if f not in opts)
  return own + tuple(n for o in opts for n in field_names(o.default.kind))


def leaves(section) -> Tuple[Tuple[str, object], ...]:
  """((leaf field, value), ...) of a section instance."""
  opts = options_fields(type(section))
  own = tuple((f.name, getattr(section, f.name))
              for f in dataclasses.fields(section) if f not in opts)
  return own + tuple(item for o in opts
                     for item in getattr(section, o.name).items())


def replace_leaves(section, values: Mapping[str, object]):
  """`dataclasses.replace` by leaf name, declared fields into their Options."""
  values = dict(values)
  changes = {}
  for o in options_fields(type(section)):
    declared = set(field_names(o.default.kind))
    mine = {k: values.pop(k) for k in list(values) if k in declared}
    if mine:
      changes[o.name] = getattr(section, o.name).replace(mine)
  return dataclasses.replace(section, **values, **changes)
