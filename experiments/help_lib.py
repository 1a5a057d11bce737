"""`--help` of the experiment binaries, grouped by config section.

absl's `--help` lists a binary's key flags (about 75 for `train_main`) in one
alphabetical list. `cli.parse_flags` prints this instead for `--help`, `-h`,
`-?` and `--helpshort` (exit 0): the binary's docstring, then its flags
grouped by the `federated_vision.experiment.config.SECTIONS` section they set (in that
order), then the binary's own flags. absl's complete list stays under
`--helpfull`.
"""

import sys
from typing import Dict, List, Mapping, Optional, Sequence

from absl import flags

HELP_ARGS = ("--help", "-help", "-h", "-?", "--helpshort", "-helpshort")


def wants_help(argv: Sequence[str]) -> bool:
  """Whether the command line asks for `--help` (not `--helpfull`)."""
  return any(a in HELP_ARGS for a in argv[1:])


def section_title(name: str, cls) -> str:
  """'data: Which federated data set to build', from the section's class."""
  doc = ((cls.__doc__ or "").strip().splitlines() or [""])[0]
  return f"{name}: {doc.split(';')[0].rstrip('.')}" if doc else name


def groups(flag_list: Sequence[flags.Flag], sections: Mapping[str, object],
           field_sections: Mapping[str, str], own: str
           ) -> List[tuple]:
  """[(title, [flags])]: one group per section with flags, in `sections`
  order, then `own` (flags of no section), empty groups left out."""
  by_section: Dict[str, list] = {s: [] for s in sections}
  rest = []
  for flag in flag_list:
    section = field_sections.get(flag.name)
    (by_section[section] if section in by_section else rest).append(flag)
  out = [(section_title(s, sections[s]), fl)
         for s, fl in by_section.items() if fl]
  if rest:
    out.append((own, rest))
  return out


def grouped_help(flag_values: flags.FlagValues, doc: Optional[str],
                 program: str, config_module=None) -> str:
  """The binary's help text (module docstring).

  Args:
    flag_values: the parsed-or-not absl flags.
    doc: the binary's module docstring.
    program: `sys.argv[0]` (absl keys the main module's flags by it).
    config_module: `federated_vision.experiment.config` when the binary defines config
      flags (its `SECTIONS` / `field_sections()` group them), else None.
  """
  key = flag_values.get_key_flags_for_module(program)
  # flags_lib: the flags of what --extra_modules declared, generated after a
  # binary that takes every config flag (--dataset among them) adopted its
  # key flags; estimate: --estimate and its settings (estimate.define_flags);
  # repeat: --seeds.
  adopted_config = config_module and any(f.name == "dataset" for f in key)
  for module in ((["experiments.flags_lib"] if adopted_config else [])
                 + ["experiments.estimate", "experiments.repeat"]):
    key += [f for f in flag_values.get_flags_for_module(module)
            if f not in key]
  sections = getattr(config_module, "SECTIONS", {}) if config_module else {}
  field_sections = config_module.field_sections() if config_module else {}
  name = program.rsplit("/", 1)[-1]
  lines = [(doc or "").strip(), ""]
  for title, flag_list in groups(key, sections, field_sections,
                                 f"{name}: this binary"):
    lines.append(f"== {title} ==")
    body = []
    flag_values._render_flag_list(flag_list, body)  # pylint: disable=protected-access
    lines += body
    lines.append("")
  lines.append("--helpfull lists every flag, absl's own too.")
  return "\n".join(lines)


def print_help_and_exit(flag_values: flags.FlagValues) -> None:
  """Prints `grouped_help` for the running binary and exits 0."""
  main = sys.modules.get("__main__")
  print(grouped_help(flag_values, getattr(main, "__doc__", None), sys.argv[0],
                     sys.modules.get("federated_vision.experiment.config")))
  sys.exit(0)
