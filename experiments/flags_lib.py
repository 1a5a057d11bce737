"""The experiment flags, generated from the config's declarations;
`config.from_flags` turns them into a config.

Binaries call `define_flags()` at import time, then
`config.from_flags(FLAGS)` in `main`. Every flag is a declared config
field (`federated_vision.config_fields`): the config sections' own fields
(`experiment.config.SECTIONS`: data, model, methods, training, output,
mixing, run, execution) and the fields components declare (a task's, an
algorithm's, a variant's, a server optimizer's options; the variants'
--<name> shorthands), one absl flag per field: type from the annotation,
default, bounds and help from the declaration. There is no hand-written
config flag. `define_flags` is called again after --extra_modules were
imported (`cli.parse_flags`) to define the flags of what they declared.
Nothing here builds library objects.
"""

import importlib
from typing import List

from absl import flags

from federated_vision import config_fields
# Declares the config's sections; it imports the tasks and the methods,
# which declare their components' options.
from federated_vision.experiment import config  # pylint: disable=unused-import

# The module defining the config flags (this one).
FLAG_MODULES = (__name__,)

_DEFINE = {"bool": flags.DEFINE_bool, "integer": flags.DEFINE_integer,
           "float": flags.DEFINE_float, "string": flags.DEFINE_string,
           "list": flags.DEFINE_list}


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """Defines a flag for every declared config field without one
  (idempotent; again, the flags of the fields declared since, e.g. by
  --extra_modules).

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


def key_flag_modules() -> List[object]:
  """The modules whose flags a binary adopts as key flags, so its `--help`
  lists them grouped by config section (absl's own flags stay under
  `--helpfull`):

      for module in flags_lib.key_flag_modules():
        flags.adopt_module_key_flags(module)

  (absl records key flags for the calling module, so the binary itself
  must call `adopt_module_key_flags`.)"""
  return [importlib.import_module(m)
          for m in FLAG_MODULES + ("experiments.cli",)]


def config_flag_names(flag_values=flags.FLAGS) -> List[str]:
  """Names of the flags `define_flags` defined (from absl, not a hand list)."""
  return sorted({f.name for module in FLAG_MODULES
                 for f in flag_values.get_flags_for_module(module)})

