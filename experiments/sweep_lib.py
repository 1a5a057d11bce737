"""Planning and running a sweep of `federated_vision.experiment.sweeps` (for `sweep_main`).

`plan` reads parsed flags (never writes them) and builds each point's
`ExperimentConfig` with `sweeps.point_config`; `run_points` runs them with
`runner.run`. A point's state is its summary.json's status: None (to run),
'completed' or 'diverged' (a summary.json of other methods than the
point's, e.g. a heavy-ball `fedavgm` where the point now trains
`fedavgm@nesterov`, is refused, never skipped as done); or, for a point to
run whose data are not on this machine (`tasks.presence`, e.g. CIFAR not
prepared for tensorflow-datasets),
a `presence.MissingData` naming the flags to give: the dry run marks it, the
real run refuses before its first point. A point that diverges does not stop
the sweep; the others run, and the sweep then exits with status 3 naming
every diverged point (a rerun skips them: the same seed diverges the same
way).
"""

import os
import sys

from absl import flags

from federated_vision.experiment import config as config_lib
from experiments import flags_lib
from experiments import parallel
from experiments import repeat
from federated_vision.experiment import runner
from federated_vision.experiment import sweeps
from federated_vision.errors import ConfigError, show
from federated_vision.methods import names as method_names
from federated_vision.tasks import presence
from federated_vision.training import run_files



def sweep_help() -> str:
  """--sweep's help: every registered sweep (also --extra_modules')."""
  return (f"The grid to run: {' | '.join(sweeps.SWEEPS)} (and any "
          "registered by --extra_modules: sweeps.register_sweep).")


def update_sweep_help() -> None:
  flags.FLAGS["sweep"].help = sweep_help()

def _show(value) -> str:
  if isinstance(value, float):
    return sweeps.format_number(value)
  return "unset" if value is None else show(value)


def plan(f):
  """(sweep, experiment dir, [(point, config, output dir, status)]).

  `status` is `point_status(output dir)`, or the point's
  `presence.MissingData` when it is to run and its data are missing.

  Every point's config is validated without loading data, so bad
  combinations fail before anything runs. Flags are only read.

  Raises:
    ConfigError: naming the offending flag.
  """
  if f.sweep not in sweeps.SWEEPS:
    raise ConfigError(f"--sweep={f.sweep}: must be one of "
                      f"{', '.join(sweeps.SWEEPS)}", "sweep")
  sweep = sweeps.SWEEPS[f.sweep]
  names = flags_lib.config_flag_names(f)
  explicit = [n for n in names if f[n].present]
  if "dataset" in explicit and f.dataset not in sweep.datasets:
    raise ConfigError(f"--dataset={f.dataset}: --sweep={sweep.name} runs on "
                      f"{' or '.join(sweep.datasets)}", "dataset")
  try:
    points = sweeps.select(sweep, f.only)
  except ValueError as e:
    raise ConfigError(f"--only={','.join(f.only)}: {e}", "only") from None
  conflicts = sweeps.axis_conflicts(points, explicit)
  if conflicts:
    raise ConfigError(
        f"--{conflicts[0]}: set by the points of --sweep={sweep.name}; do not "
        "give it on the command line (use --only to pick points)", conflicts[0])
  experiment = (f.experiment_name if "experiment_name" in explicit
                else sweep.name)
  config_lib.check_output(config_lib.OutputConfig(
      root_output_dir=f.root_output_dir, experiment_name=experiment))
  exp_dir = os.path.join(f.root_output_dir, experiment)
  command_line = config_lib.replace_fields(config_lib.ExperimentConfig(),
                                           {n: f[n].value for n in names})
  rows = []
  n = f["seeds"].value if "seeds" in f else 1
  for pt in points:  # --seeds: each point's repetitions (`repeat`).
    first = sweeps.point_config(command_line, sweep, pt, explicit, exp_dir)
    for k, config in enumerate(repeat.configs(first, n)):
      point = pt if k == 0 else sweeps.Point(
          config.output.experiment_name,
          dict(pt.flags, seed=config.training.seed))
      config_lib.validate(config, explicit)
      out = config.output_dir
      status = point_status(out, method_list(config))
      if status is None:
        status = presence.missing_data(config.data)
      rows.append((point, config, out, status))
  return sweep, exp_dir, rows


def method_list(config):
  """The method names a point's run trains and its summary.json keys: each
  method, once per --mixing strategy ('<method>+<strategy>')."""
  strategies = tuple(config.mixing.mixing) or (None,)
  return tuple(method_names.method_name(m, s)
               for m in config.methods.expand() for s in strategies)


def point_status(out: str, methods=None):
  """None (no summary.json: to run or resume), or summary.json's status
  ('completed', 'diverged').

  Raises:
    RunFileError: summary.json is damaged (`run_files.read_json`), has no
      status, or holds other methods than `methods` (when given): another
      experiment's results, never this point's.
  """
  path = os.path.join(out, "summary.json")
  remedy = "delete it to rerun the point (which writes it again)"
  summary = run_files.read_json(path, remedy, missing_ok=True)
  if summary is None:
    return None
  status = summary.get("status")
  run_files.require(status in ("completed", "diverged"), path,
                    f"its status {status!r} is not completed or diverged",
                    remedy)
  trained = summary.get("methods")
  if methods is not None and isinstance(trained, dict):
    run_files.require(
        sorted(trained) == sorted(methods), path,
        f"it holds the methods {', '.join(sorted(trained))}, the point "
        f"trains {', '.join(methods)}", "move the point's directory away (or "
        "use another --root_output_dir) to run it")
  return status


def _missing(rows):
  return [r for r in rows if isinstance(r[3], presence.MissingData)]


def require_data(sweep, rows) -> None:
  """ConfigError naming the flag to give when a point to run misses its data
  (`plan`'s rows: nothing has run yet)."""
  missing = _missing(rows)
  if missing:
    raise ConfigError(f"{missing[0][3].message} ({len(missing)} point(s) of "
                      f"--sweep={sweep.name}; nothing ran)",
                      missing[0][3].flags[0])


def check(f) -> None:
  """`plan`'s errors and, unless --dry_run, a point's missing data: the
  sweep binary's checks before TensorFlow's import (ours: a refusal in under
  a second, not after ~15 s of TensorFlow/TFF start-up); `run_points`
  checks again."""
  sweep, _, rows = plan(f)
  if not f.dry_run:
    require_data(sweep, rows)


def print_plan(sweep, exp_dir, rows) -> None:
  done = sum(1 for r in rows if isinstance(r[3], str))
  print(f"sweep {sweep.name}: {len(rows)} points, {done} done -> {exp_dir}")
  values = config_lib.flat(rows[0][1]) if rows else {}
  base = {k: v for k, v in values.items()
          if k in sweep.base and all(k not in r[0].flags for r in rows)}
  print("  base: " + " ".join(f"--{k}={_show(v)}" for k, v in sorted(base.items())))
  for pt, _, _, status in rows:
    axes = " ".join(f"--{k}={_show(v)}" for k, v in pt.flags.items())
    label = (status.label if isinstance(status, presence.MissingData) else
             {None: "todo", "completed": "done"}.get(status, status))
    print(f"  [{label}] {pt.name}  {axes}")
  missing = _missing(rows)
  if missing:
    print(f"  {len(missing)} point(s) miss data:\n    {missing[0][3].message}")


def run_points(sweep, exp_dir, rows, parallel_runs: int = 1,
               extra_modules=()) -> None:
  """Runs the points without a summary.json (`parallel_runs` > 1: as
  separate processes, `experiments.parallel`; a failed point does not stop
  the others and the exit status is the worst of the points').

  Raises:
    ConfigError: a point to run misses its data (before any point runs,
      naming the flag to give), or a point's config is refused (naming it).
    run_errors.RunError: after every point ran, if any point diverged
      (now or in an earlier invocation); one line, exit status 3 (as a
      diverged train_main run).
  """
  # Local: training_loop imports TFF (seconds): only when needed.
  from federated_vision.training import run_errors  # pylint: disable=g-import-not-at-top
  require_data(sweep, rows)
  ran = 0
  diverged = [pt.name for pt, _, _, status in rows if status == "diverged"]
  if parallel_runs > 1:
    return _run_parallel(sweep, exp_dir, rows, parallel_runs, extra_modules,
                         diverged)
  for i, (pt, config, out, status) in enumerate(rows):
    if status is not None:
      print(f"[{i + 1}/{len(rows)}] {pt.name}: {status} (summary.json), "
            "skipped")
      continue
    print(f"\n[{i + 1}/{len(rows)}] {pt.name} -> {out}")
    try:
      runner.run(config)
    except ConfigError as e:
      raise ConfigError(f"point {pt.name}: {e}", e.field) from None
    except run_errors.DivergenceError as e:
      print(f"[{i + 1}/{len(rows)}] {pt.name}: {e}")
      diverged.append(pt.name)
    ran += 1
  _finish(sweep, exp_dir, rows, ran, diverged)


def _finish(sweep, exp_dir, rows, ran, diverged) -> None:
  """The closing lines; RunError (exit 3) naming the diverged points."""
  # Local: training_loop imports TFF (seconds): only when needed.
  from federated_vision.training import run_errors  # pylint: disable=g-import-not-at-top
  print(f"\nsweep {sweep.name}: ran {ran}, skipped {len(rows) - ran}; "
        f"results under {exp_dir}")
  print(f"table: {python_command()} -m experiments.report_main "
        f"--input_dir={exp_dir}")
  if diverged:
    error = run_errors.RunError(
        f"sweep {sweep.name}: {len(diverged)} point(s) diverged: "
        f"{', '.join(diverged)} (summary.json status 'diverged')")
    error.exit_code = run_errors.DivergenceError.exit_code
    raise error


def _run_parallel(sweep, exp_dir, rows, parallel_runs, extra_modules,
                  diverged) -> None:
  """run_points with `parallel_runs` > 1 (`experiments.parallel`)."""
  for i, (pt, _, _, status) in enumerate(rows):
    if status is not None:
      print(f"[{i + 1}/{len(rows)}] {pt.name}: {status} (summary.json), "
            "skipped")
  todo = [i for i, r in enumerate(rows) if r[3] is None]
  outcomes = parallel.run_jobs(
      [parallel.Job(rows[i][0].name, rows[i][1], rows[i][2]) for i in todo],
      parallel_runs, extra_modules, total=len(rows),
      index=[i + 1 for i in todo])
  if all(o.returncode in (0, 3) for o in outcomes):
    return _finish(sweep, exp_dir, rows, len(todo), diverged + [
        o.name for o in outcomes if o.returncode == 3])
  print(f"\nsweep {sweep.name}: ran {len(todo)}, skipped "
        f"{len(rows) - len(todo)}; results under {exp_dir}")
  raise parallel.failure_error(f"sweep {sweep.name}", outcomes, diverged)


def python_command() -> str:
  """This interpreter as a user would type it: relative when under the
  current directory (`.venv/bin/python`), else absolute, so a printed
  command runs as shown (a bare `python` may lack TensorFlow)."""
  path = os.path.abspath(sys.executable)
  rel = os.path.relpath(path)
  return rel if not rel.startswith("..") else path
