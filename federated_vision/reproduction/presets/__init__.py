"""The preset registry: every table and figure of the four papers, by name.

  from federated_vision.reproduction import presets
  presets.preset_names()                # ('hsu2020_table1', ...)
  p = presets.get_preset("hsu2020_table3")
  for run in p.runs: run.name, run.flag_dict()

One module per paper; each exposes PRESETS, a tuple of functions returning a
`spec.Preset` (built on first use; they are plain data). A researcher's own
preset is registered from a module passed to --extra_modules
(`register_preset`) and is then a preset like the papers'.
"""

from typing import Dict, Tuple

from federated_vision.registry import Registry
from federated_vision.reproduction import published
from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import augenstein
from federated_vision.reproduction.presets import digits_claims
from federated_vision.reproduction.presets import hsu2019
from federated_vision.reproduction.presets import hsu2020
from federated_vision.reproduction.presets import mcmahan2017
from federated_vision.reproduction.presets import mcmahan2017_cifar
from federated_vision.reproduction.presets import mcmahan2017_figure1
from federated_vision.reproduction.presets import mcmahan2017_shakespeare
from federated_vision.reproduction.presets import mcmahan2017_slides
from federated_vision.reproduction.presets import shakespeare_claims

_MODULES = (hsu2020, hsu2019, mcmahan2017, mcmahan2017_cifar,
            mcmahan2017_slides, mcmahan2017_figure1, mcmahan2017_shakespeare,
            augenstein, digits_claims, shakespeare_claims)


def _builtins():
  """The papers' presets, (name, preset) in module order (built on first
  use: they are plain data)."""
  for module in _MODULES:
    for build in module.PRESETS:
      preset = build()
      yield preset.name, preset


_PRESETS: Registry[spec.Preset] = Registry("preset", "preset", _builtins)


def register_preset(preset: spec.Preset) -> spec.Preset:
  """Adds a preset (e.g. from a module passed to the binaries'
  --extra_modules): `reproduce --preset=<its name>` plans, runs and reports
  it as the papers' presets. Its runs' names must not be taken by another
  preset's run with other settings (one run name = one configuration).

  Raises:
    ValueError: not a `spec.Preset`, its name is taken, or a run name
      clashes.
  """
  if not isinstance(preset, spec.Preset):
    raise ValueError(f"register_preset: {preset!r} is not a spec.Preset")
  _runs_by_name(tuple(_PRESETS.values()) + (preset,))
  return _PRESETS.add(preset.name, preset)


def preset_names() -> Tuple[str, ...]:
  """Every registered preset name, in registry order."""
  return _PRESETS.names()


def get_preset(name: str) -> spec.Preset:
  """The preset called `name`.

  Raises:
    KeyError: no such preset (the message lists the names).
  """
  if name not in _PRESETS:
    raise KeyError(f"no preset {name!r}; presets: "
                   f"{', '.join(preset_names())}")
  return _PRESETS[name]


def all_runs() -> Dict[str, spec.Run]:
  """Every run of every preset by name (one name = one configuration).

  Raises:
    ValueError: two presets define the same run name differently.
  """
  return _runs_by_name(_PRESETS.values())


def _runs_by_name(presets) -> Dict[str, spec.Run]:
  out = {}
  for preset in presets:
    for run in preset.runs:
      if run.name in out and out[run.name] != run:
        raise ValueError(f"run {run.name} differs between presets")
      out.setdefault(run.name, run)
  return out


def _show(value) -> str:
  if isinstance(value, (list, tuple)):
    return ",".join(str(v) for v in value)
  if isinstance(value, float):
    return f"{value:g}"
  return str(value)


def describe(preset: spec.Preset) -> str:
  """The dry-run listing: every run with its full configuration as flags.

  One line per run: `<kind> <name>: --flag=value ...` (sorted), then the data
  flags it takes from the command line ('*' marks required ones).
  """
  lines = [f"preset {preset.name}: {len(preset.runs)} runs "
           f"({published_paper(preset)})"]
  for run in preset.runs:
    flags = " ".join(f"--{k}={_show(v)}" for k, v in sorted(run.flags.items()))
    required = {f for group in run.required_data_flags for f in group}
    data = ",".join(f + ("*" if f in required else "") for f in run.data_flags)
    lines.append(f"  {run.kind} {run.name}: {flags}"
                 + (f"  [data: {data}]" if data else ""))
  return "\n".join(lines)


def published_paper(preset: spec.Preset) -> str:
  """The preset's paper (its key itself for a paper the package does not
  carry, e.g. a researcher's own preset)."""
  return published.PAPERS.get(preset.paper, preset.paper)
