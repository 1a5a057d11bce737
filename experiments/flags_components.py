"""Flags generated from the components' declared config sections.

A task's or variant's own fields (`federated_vision.config_fields`, e.g.
--celeba_cache_dir of celeba, --imbalance_sigma of digits) become flags here,
one per field: type from the annotation, default and bounds from the
declaration, help '<component>: <help>'. `define_flags` may be called again
after --extra_modules were imported (`cli.parse_flags` does, before parsing)
to define the flags of the sections they declared.
"""

from absl import flags

from federated_vision import config_fields
from federated_vision import methods  # pylint: disable=unused-import
from federated_vision import tasks  # pylint: disable=unused-import

_DEFINE = {"bool": flags.DEFINE_bool, "integer": flags.DEFINE_integer,
           "float": flags.DEFINE_float, "string": flags.DEFINE_string,
           "list": flags.DEFINE_list}


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """Defines a flag for every declared field without one (idempotent).

  Raises:
    ValueError: a declared field named like a flag defined elsewhere.
  """
  ours = {f.name for f in flag_values.get_flags_for_module(__name__)}
  for section in config_fields.sections():
    for f in section.fields:
      if f.name in ours:
        continue
      if f.name in flag_values:
        raise ValueError(f"option {f.name!r} of {'/'.join(section.owners)}: "
                         f"--{f.name} is already a flag")
      kind = config_fields.flag_kind(section.cls, f)
      bounds = dict(f.metadata["bounds"])
      default = list(f.default) if kind == "list" else f.default
      if kind == "string" and "enum_values" in bounds:
        flags.DEFINE_enum(f.name, default, bounds.pop("enum_values"),
                          section.help(f.name), flag_values=flag_values,
                          **bounds)
      else:
        _DEFINE[kind](f.name, default, section.help(f.name),
                      flag_values=flag_values, **bounds)
