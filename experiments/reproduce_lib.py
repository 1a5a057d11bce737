"""The logic of `experiments/reproduce.py`: plan, run, resume and report a preset.

  reproduce(preset_name, results_root, data, only=(), dry_run=False,
            report_only=False)

plans the preset (`reproduction.plan.plan`: a missing data flag or file stops
it before any run starts), runs every run that is not finished through
`config.from_values` + `runner.run` (a run that was interrupted resumes from
its checkpoint; one run name is one configuration, so a centralized baseline
shared by several presets runs once), then writes the report
(`report_text.write_report`), the studies, the sweep's HParams experiment and, for
`digits_claims`, the claim verdicts. Every preset flag is a train_main
setting (tests/reproduction/test_reproduction_presets.py); an unknown one is a
`ConfigError` naming it, before any run starts.
"""

import dataclasses
import os
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Union

from federated_vision.experiment import averaging_runner
from federated_vision.experiment import config as config_lib
from experiments import parallel
from federated_vision.experiment import run_record
from federated_vision.experiment import runner
from federated_vision.errors import ConfigError
from federated_vision.reproduction import claims
from federated_vision.reproduction import speedup_verdicts
from federated_vision.reproduction import extra_methods as extra_methods_lib
from federated_vision.reproduction import hparams
from federated_vision.reproduction import plan as plan_lib
from federated_vision.reproduction import presets
from federated_vision.reproduction import report as report_lib
from federated_vision.reproduction import report_text
from federated_vision.reproduction import results
from federated_vision.reproduction import seeds as seeds_lib
from federated_vision.reproduction import spec
from federated_vision.training import run_errors

Printer = Callable[[str], None]
LISTING_WIDTH = 120  # Dry-run lines (ours: a terminal's width, x1.5).


class ReproduceError(ValueError):
  """The preset cannot run or report as asked; the message is one line."""


def full_config(run: spec.Run, results_root: str = config_lib.OutputConfig(
    ).root_output_dir) -> Dict[str, object]:
  """Every train_main setting of `run`: defaults overridden by the preset.

  Raises:
    ConfigError: the preset names a flag train_main does not have.
  """
  values = dict(run.flag_dict(), root_output_dir=results_root,
                experiment_name=run.name)
  return config_lib.flat(config_lib.replace_fields(
      config_lib.ExperimentConfig(), values))


def _show(value) -> str:
  if isinstance(value, (list, tuple)):
    return ",".join(str(v) for v in value)
  return f"{value:g}" if isinstance(value, float) else str(value)


def wrapped(head: str, items: Sequence[str], indent: str = "      "
             ) -> List[str]:
  """`head` + `items`, wrapped at `LISTING_WIDTH` between items."""
  lines = [head]
  for item in items:
    if len(lines[-1]) + 1 + len(item) > LISTING_WIDTH and lines[-1].strip():
      lines.append(indent + item)
    else:
      lines[-1] += " " + item
  return lines


def describe_runs(preset: spec.Preset, results_root: str = "output",
                  runs: Optional[Sequence[spec.Run]] = None,
                  data: Optional[Mapping[str, object]] = None) -> List[str]:
  """The dry-run listing: the settings every listed run shares (its base,
  defaults included) once, then each run (all, or `runs`) with only the
  settings where it differs from the base, the data flags it takes and, if
  `data` (the data flags given) leaves it without its data, what to give;
  then the runs left out (`Preset.skipped_runs`) with why. An averaging run
  (`spec.AVERAGING`, not a train_main run) lists exactly the settings it
  reads. Lines are wrapped at `LISTING_WIDTH` characters."""
  runs = preset.runs if runs is None else runs
  own = [run.flag_dict() for run in runs if run.kind in spec.TRAIN_MAIN_KINDS]
  common = {k: v for k, v in (own[0] if own else {}).items()
            if all(k in o and o[k] == v for o in own)}
  base = config_lib.flat(config_lib.replace_fields(
      config_lib.ExperimentConfig(),
      dict(common, root_output_dir=results_root)))
  del base["experiment_name"]  # Each run's own: its name.
  lines = [f"preset {preset.name}: {len(runs)} runs -- {preset.description}"]
  if own:
    lines += wrapped("  base (every run; --experiment_name=<run name>):",
                     [f"--{k}={_show(v)}" for k, v in sorted(base.items())])
  for run in runs:
    items = ([f"--{k}={_show(v)}" for k, v in sorted(run.flags.items())]
             + [f"[not train_main: {averaging_runner.PROGRAM}; these "
                "settings only]"] if run.kind == spec.AVERAGING else
             [f"--{k}={_show(v)}" for k, v in sorted(
                 full_config(run, results_root).items())
              if k != "experiment_name" and v != base[k]])
    if run.data_flags:
      items.append(f"[data flags: {','.join(run.data_flags)}]")
    missing = plan_lib.missing_data(run, data or {})
    if missing is not None:
      items.append(f"[{missing.label}]")
    lines += wrapped(f"  {run.kind} {run.name}:", items)
  lines += [f"  skipped {name}: {why}" for name, why in preset.skipped_runs]
  return lines


SOURCES_HEADER = ("sources of the settings (a quote of the paper with its "
                  "section, or \"ours:\" and why):")


def describe_sources(preset: spec.Preset) -> List[str]:
  """The dry run's second part: the preset's notes, then each setting its
  runs make, its values and its source (`spec.Preset.source_lines`),
  wrapped as the runs are; nothing for a preset without sources."""
  if not preset.sources:
    return []
  lines = [SOURCES_HEADER]
  for note in preset.notes:  # Which settings are ours or still missing.
    lines += wrapped("  note:", note.split())
  for line in preset.source_lines():
    words = line[2:].split()
    lines += wrapped(f"  {words[0]}", words[1:])
  return lines


def check_runnable(planned: Sequence[plan_lib.PlannedRun]) -> None:
  """Refuses, up front, to write into a directory made with other flags
  (its hparams.json, or its experiment.json: `run_record.check_before_run`).
  A run whose own files are damaged (`results.INVALID`, e.g. a summary.json
  cut short) is run again, as train_main reruns it: its command re-finishes
  it from its checked metrics and checkpoints.

  Raises:
    ReproduceError: another configuration's directory (hparams.json).
    ConfigError: another experiment's (experiment.json).
    run_errors.RunError: a damaged experiment.json.
  """
  for p in planned:
    if p.status == results.MISMATCH:
      raise ReproduceError(f"run {p.run.name}: {p.status}: {p.detail} "
                           "(move it away or use another --results_root)")
    if p.status in (results.INVALID, results.RUNNING) and \
        p.run.kind in spec.TRAIN_MAIN_KINDS:  # Averaging: its own check.
      run_record.check_before_run(config_lib.from_values(p.flags))


def estimable(runs: Sequence[spec.Run], echo: Printer = print
              ) -> List[spec.Run]:
  """The train_main runs of `runs`, which `--estimate` projects; says which
  it leaves out (an averaging run: not a train_main run, seconds of CPU)."""
  for run in runs:
    if run.kind not in spec.TRAIN_MAIN_KINDS:
      echo(f"{run.name}: not estimated: not a train_main run "
           f"({averaging_runner.PROGRAM}; {averaging_runner.COST})")
  return [r for r in runs if r.kind in spec.TRAIN_MAIN_KINDS]


def check_report_complete(rep: report_lib.Report) -> None:
  """Raises `RunError` (exit 1, one line naming the first file) if a cell
  could not be computed from the runs there (a damaged or missing file of
  a run, or a directory of another configuration: `results.INVALID`,
  `results.MISMATCH`), in any seed's value; call after writing the report,
  whose cells and footnotes say which and why. A run not run yet is not
  such a cell (the report of a partial results root is complete as far as
  it goes)."""
  bad = (results.INVALID, results.MISMATCH)
  cells, found = 0, []
  for r in rep.cells:
    values = [v for v in (r.ours, r.relative, r.speedup, r.ratio)
              if v is not None]
    for s in (r.spread or {}).values():  # Each seed's value.
      values += [report_lib.Value(None, st, d)
                 for st, d in zip(s.statuses, s.details)]
    values = [v for v in values if v.status in bad]
    cells += bool(values)
    found += values
  if found:
    details = list(dict.fromkeys(v.detail for v in found))
    more = (f" (and {len(details) - 1} more: the report's footnotes)"
            if len(details) > 1 else "")
    raise run_errors.RunError(
        f"{cells} cell(s) could not be computed from every run they read "
        f"(marked {'/'.join(sorted({v.status for v in found}))}): "
        f"{details[0]}{more}")


def checked_flags(planned: Sequence[plan_lib.PlannedRun],
                  execution: Optional[Mapping[str, object]] = None
                  ) -> Dict[str, Dict[str, object]]:
  """{run name: its flags + `execution`}, every run's config validated
  before the first run starts (`reproduce`; `reproduce.py` before
  TensorFlow's import).

  Raises:
    ConfigError: naming the flag.
  """
  flags_of = {p.run.name: {**p.flags, **(execution or {})} for p in planned}
  for p in planned:
    if p.run.kind == spec.AVERAGING:  # Its settings, as train_main's.
      averaging_runner.settings(flags_of[p.run.name])
    else:
      config_lib.from_values(flags_of[p.run.name])
  return flags_of


def run_one(flags: Mapping[str, object]) -> None:
  """`runner.run` on the config of `flags`, checked once here (its
  `ResolvedRun` passed on; the plan checked that its data are here).

  Raises:
    ConfigError: naming the flag.
  """
  runner.run(*config_lib.checked(flags))


def write_outputs(preset: spec.Preset, root: str,
                  echo: Printer) -> report_lib.Report:
  """Report, studies, HParams sweep experiment and (digits, Shakespeare)
  claims' verdicts; returns the report."""
  rep = report_lib.build_report(preset, root)
  paths = report_text.write_report(rep, root)
  echo(report_text.format_markdown(rep))
  finished = [r.name for r in preset.runs
              if results.read_run(root, r).status == results.FINISHED]
  if finished:
    hparams.write_sweep(root, finished, write_sessions=False)
  lines = (speedup_verdicts.check(root, preset)  # Every seed's runs.
           if preset.name == "shakespeare_claims" else None)
  if preset.name == "digits_claims":
    lines = [v.line for v in claims.check_digits_claims(root)]
    if seeds_lib.num_seeds(preset) > 1:  # The comparisons cover the seeds.
      lines.insert(0, "Verdicts of the first seed's runs (--seed as the "
                   "preset sets it); every seed: the paired comparisons.")
  if lines is not None:
    path = os.path.join(root, f"{preset.name}_verdicts.txt")
    with open(path, "w") as f:
      f.write("\n".join(lines) + "\n")
    paths["verdicts"] = path
    echo("\n".join(lines))
  echo("written: " + ", ".join(sorted(str(p) for p in paths.values())))
  return rep


def reproduce(preset_name: Union[str, spec.Preset], results_root: str, data: Mapping[str, object],
              only: Sequence[str] = (), dry_run: bool = False,
              report_only: bool = False, echo: Printer = print,
              run_fn: Callable[[Mapping[str, object]], None] = run_one,
              execution: Optional[Mapping[str, object]] = None,
              parallel_runs: int = 1, extra_modules: Sequence[str] = (),
              seeds: int = 1, extra_methods: Sequence[str] = ()
              ) -> Dict[str, str]:
  """Plans, runs and reports one preset (see the module docstring).

  `preset_name` is a registered name or a `spec.Preset` (e.g. a scaled-down
  copy in a test). `execution` ({flag: value}, `execution_settings`) says
  which TFF workers run every run; it changes no result. `parallel_runs`
  > 1 runs the unfinished runs as separate processes, that many at once
  (`experiments.parallel`; `run_fn` is then not used): a failed run does not
  stop the others, and then no report is written and the error's exit
  status is the worst of the runs'. `seeds` > 1 repeats every run over
  that many seeds (`seeds.expand`: `--seeds`); the report aggregates them.
  `extra_methods` adds a researcher's methods to the preset's tables
  (`extra_methods.with_extra_methods`: `--extra_methods`).

  Returns:
    run name -> what happened to it ('finished', 'ran', 'dry run').

  Raises:
    ReproduceError / PlanError / ConfigError: one line naming the preset,
      run, flag or file -- for plan and config errors before any run starts.
  """
  preset = get_preset(preset_name, seeds, extra_methods)
  if dry_run:
    selected = plan_lib.select(preset, only)
    echo("\n".join(describe_runs(preset, results_root, selected, data)))
    sources = describe_sources(preset)
    if sources:
      echo("\n".join(sources))
    return {r.name: "dry run" for r in selected}
  outcome = {}
  if report_only:  # Reads finished runs only: no data flag is needed.
    plan_lib.select(preset, only)
  else:
    planned = plan_lib.plan(preset, results_root, data, only)
    check_runnable(planned)
    flags_of = checked_flags(planned, execution)
    if parallel_runs > 1:
      _run_parallel(preset, planned, flags_of, parallel_runs, extra_modules,
                    echo, outcome)
    for i, p in enumerate(planned if parallel_runs <= 1 else (), 1):
      name = p.run.name
      if p.status == results.FINISHED:
        outcome[name] = "finished"
        echo(f"[{i}/{len(planned)}] {name}: finished, skipped")
      else:
        doing = {results.RUNNING: "resuming",
                 results.INVALID: f"re-finishing ({p.detail})"}
        echo(f"[{i}/{len(planned)}] {name}: "
             f"{doing.get(p.status, 'running')}")
        try:
          if p.run.kind == spec.AVERAGING:  # Not a train_main run.
            averaging_runner.run(flags_of[name], echo)
          else:
            run_fn(flags_of[name])
        except run_errors.DivergenceError as e:
          if name not in _grid_rates(preset):
            raise
          echo(f"[{i}/{len(planned)}] {name}: {GRID_DIVERGED} ({e})")
          outcome[name] = "diverged"
          continue
        outcome[name] = "ran"
  os.makedirs(results_root, exist_ok=True)
  rep = write_outputs(preset, results_root, echo)
  if report_only:  # As report_main: a script never takes it for complete.
    check_report_complete(rep)
  return outcome


def _run_parallel(preset, planned, flags_of, parallel_runs, extra_modules,
                  echo, outcome) -> None:
  """The unfinished runs of `planned` through `parallel.run_jobs` (the
  config `run_one` would build); fills `outcome`.

  Raises:
    run_errors.RunError: some run did not complete (exit status: the
      worst of the runs', `parallel.exit_status`).
  """
  todo = []
  for i, p in enumerate(planned, 1):
    if p.status == results.FINISHED:
      outcome[p.run.name] = "finished"
      echo(f"[{i}/{len(planned)}] {p.run.name}: finished, skipped")
    elif p.run.kind == spec.AVERAGING:  # Not a train_main job: here, first.
      echo(f"[{i}/{len(planned)}] {p.run.name}: running")
      averaging_runner.run(flags_of[p.run.name], echo)
      outcome[p.run.name] = "ran"
    else:
      todo.append(i)
  jobs = []
  for i in todo:
    config = config_lib.from_values(flags_of[planned[i - 1].run.name])
    jobs.append(parallel.Job(planned[i - 1].run.name, config,
                             config.output_dir))
  outcomes = parallel.run_jobs(jobs, parallel_runs, extra_modules, echo,
                               len(planned), todo)
  outcome.update({o.name: "ran" for o in outcomes if o.returncode == 0})
  rates = _grid_rates(preset)
  diverged = [o for o in outcomes
              if o.name in rates and o.returncode == run_errors.DivergenceError.exit_code]
  for o in diverged:
    outcome[o.name] = "diverged"
    echo(f"{o.name}: {GRID_DIVERGED}")
  error = parallel.failure_error(
      f"preset {preset.name}", [o for o in outcomes if o not in diverged])
  if error is not None:
    raise error


# A rate of a learning-rate grid that diverges is one of the protocol's
# outcomes (McMahan 2017 §3: the grid spans rates too large to train), not a
# failure of the preset: its summary.json says "diverged", its cell counts it
# as not reaching the target, and the other runs go on.
GRID_DIVERGED = ("diverged: a rate of its learning-rate grid (not chosen; "
                 "the other runs go on)")


def _grid_rates(preset: spec.Preset) -> frozenset:
  """The run names of the preset's learning-rate grids (`lr_grid`)."""
  return frozenset(n for names in preset.lr_grids.values() for n in names)


def get_preset(preset_name: Union[str, spec.Preset], seeds: int = 1,
               extra_methods: Sequence[str] = ()) -> spec.Preset:
  """A registered preset by name (ReproduceError naming --preset if none),
  or `preset_name` itself when it is a `spec.Preset`; with
  `extra_methods` its tables gain their rows (`extra_methods.
  with_extra_methods`); with `seeds` > 1 its runs repeated over that many
  seeds (`seeds.expand`).

  Raises:
    ReproduceError: no such preset.
    ConfigError: a bad --extra_methods name.
  """
  if isinstance(preset_name, spec.Preset):
    preset = preset_name
  else:
    try:
      preset = presets.get_preset(preset_name)
    except KeyError as e:
      raise ReproduceError(f"--preset={preset_name}: {e.args[0]}") from None
  preset = extra_methods_lib.with_extra_methods(preset, extra_methods)
  try:
    return seeds_lib.expand(preset, seeds)
  except ConfigError:
    raise
  except ValueError as e:
    raise ReproduceError(str(e)) from None


def data_flag_names() -> List[str]:
  """Every data-location flag some preset takes from the command line."""
  return sorted({f for r in presets.all_runs().values() for f in r.data_flags})


def read_flag_names() -> List[str]:
  """The setting flags `reproduce` reads from the command line: where the
  data are (`data_flag_names`), the output root (`output_root`) and the TFF
  workers (`execution_settings`). A preset fixes every other setting."""
  return sorted(set(data_flag_names()) | {"root_output_dir"} | {
      f.name for f in dataclasses.fields(config_lib.ExecutionConfig)})


def execution_settings(flag_values) -> Dict[str, object]:
  """The execution flags (--local_workers, --workers, ...) given on the
  command line (name -> value); every run of the preset uses them."""
  return {f.name: flag_values[f.name].value
          for f in dataclasses.fields(config_lib.ExecutionConfig)
          if flag_values[f.name].present}


def output_root(flag_values) -> str:
  """--results_root, else --root_output_dir (every binary's output root).

  Raises:
    ReproduceError: both given, with different values.
  """
  root = flag_values.root_output_dir
  if not flag_values["results_root"].present:
    return root
  if (flag_values["root_output_dir"].present
      and os.path.normpath(root) != os.path.normpath(flag_values.results_root)):
    raise ReproduceError(
        f"--results_root={flag_values.results_root} and --root_output_dir="
        f"{root}: give one (--results_root defaults to --root_output_dir)")
  return flag_values.results_root


def given_data(flag_values, names: Optional[Sequence[str]] = None
               ) -> Dict[str, object]:
  """The data flags given on the command line (name -> value)."""
  return {n: flag_values[n].value for n in names or data_flag_names()
          if n in flag_values and flag_values[n].present}

