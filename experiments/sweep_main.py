"""Runs a grid of experiments (Hsu et al. 2019 alpha sweeps, McMahan's grid).

Every point is an ordinary `train_main` run (`runner.run` with the flags of
the point) writing summary.json, hparams.json, <method>/metrics.csv, the
partition report and plots to <root_output_dir>/<experiment_name>/<point>/.
<experiment_name> defaults to the sweep's name. Points whose summary.json
exists are skipped, so an interrupted sweep resumes when started again (a
point cut short resumes from its last checkpoint). Grids: experiments/sweeps.py.

Flag precedence: a point's grid axes > flags given on the command line > the
sweep's base values > flag defaults. Giving an axis flag (e.g. --alpha for an
alpha sweep) on the command line is an error.

  python -m experiments.sweep_main --sweep=hsu2019_cifar10 --dry_run
  python -m experiments.sweep_main --sweep=hsu2019_cifar10 \
      --data_source=archive --archive_path=/data/cifar-10-python.tar.gz \
      --only='fedavg*'
  python -m experiments.report_main --input_dir=output/hsu2019_cifar10
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

# TensorFlow must be imported before absl.app.run (see train_main.py).
import tensorflow as tf  # pylint: disable=g-import-not-at-top,unused-import
from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from experiments import flags_lib
from experiments import sweeps

flags_lib.define_flags()
flags.DEFINE_string("sweep", None, f"The grid to run: "
                    f"{' | '.join(sweeps.SWEEP_NAMES)}.")
flags.DEFINE_bool("dry_run", False, "Print the planned runs and exit.")
flags.DEFINE_list("only", [], "Run only the points whose name matches one of "
                  "these shell patterns (e.g. 'fedavg_*,*_alpha_0').")
FLAGS = flags.FLAGS


def _fail(message: str) -> None:
  print(f"{os.path.basename(sys.argv[0])}: error: {message}", file=sys.stderr)
  sys.exit(2)


def _show(value) -> str:
  if isinstance(value, (list, tuple)):
    return ",".join(map(str, value))
  if isinstance(value, float):
    return sweeps.format_number(value)
  return "unset" if value is None else str(value)


def plan(f):
  """(sweep, experiment dir, [(point, flag values, output dir, done)]).

  Every point's flags are validated (`flags_lib.validate`) without loading
  data, so bad combinations fail before anything runs.

  Raises:
    flags_lib.FlagError: naming the offending flag.
  """
  if f.sweep not in sweeps.SWEEPS:
    raise flags_lib.FlagError(f"--sweep={f.sweep}: must be one of "
                              f"{', '.join(sweeps.SWEEP_NAMES)}")
  sweep = sweeps.SWEEPS[f.sweep]
  explicit = [name for name in flags_lib._OUR_FLAGS if f[name].present]  # pylint: disable=protected-access
  if "dataset" in explicit and f.dataset not in sweep.datasets:
    raise flags_lib.FlagError(f"--dataset={f.dataset}: --sweep={sweep.name} "
                              f"runs on {' or '.join(sweep.datasets)}")
  try:
    points = sweeps.select(sweep, f.only)
  except ValueError as e:
    raise flags_lib.FlagError(f"--only={','.join(f.only)}: {e}") from None
  conflicts = sweeps.axis_conflicts(points, explicit)
  if conflicts:
    raise flags_lib.FlagError(
        f"--{conflicts[0]}: set by the points of --sweep={sweep.name}; do not "
        "give it on the command line (use --only to pick points)")
  experiment = (f.experiment_name if "experiment_name" in explicit
                else sweep.name)
  if not experiment or os.sep in experiment:
    raise flags_lib.FlagError(f"--experiment_name={experiment!r}: must be a "
                              "non-empty name without '/'")
  exp_dir = os.path.join(f.root_output_dir, experiment)
  rows = []
  saved = _snapshot(f, points, sweep)
  try:
    for pt in points:
      values = sweeps.point_flags(sweep, pt, explicit)
      _apply(f, saved, values)
      flags_lib.validate(f)
      out = os.path.join(exp_dir, pt.name)
      rows.append((pt, values, out,
                   os.path.exists(os.path.join(out, "summary.json"))))
  finally:
    _apply(f, saved, {})
  return sweep, exp_dir, rows


def _snapshot(f, points, sweep) -> dict:
  names = set(sweep.base) | {"root_output_dir", "experiment_name"}
  for pt in points:
    names.update(pt.flags)
  return {n: f[n].value for n in names}


def _apply(f, saved: dict, values: dict) -> None:
  """Resets the flags in `saved`, then sets `values` (absl validators run)."""
  for name, value in dict(saved, **values).items():
    try:
      setattr(f, name, value)
    except flags.IllegalFlagValueError as e:
      raise flags_lib.FlagError(f"--{name}={_show(value)}: {e}") from None


def print_plan(sweep, exp_dir, rows) -> None:
  done = sum(1 for r in rows if r[3])
  print(f"sweep {sweep.name}: {len(rows)} points, {done} done -> {exp_dir}")
  base = {k: v for k, v in (rows[0][1] if rows else {}).items()
          if k in sweep.base and all(k not in r[0].flags for r in rows)}
  print("  base: " + " ".join(f"--{k}={_show(v)}" for k, v in sorted(base.items())))
  for pt, _, _, is_done in rows:
    axes = " ".join(f"--{k}={_show(v)}" for k, v in pt.flags.items())
    print(f"  [{'done' if is_done else 'todo'}] {pt.name}  {axes}")


def main(argv):
  sys.stdout.reconfigure(line_buffering=True)
  if len(argv) > 1:
    _fail(f"unexpected arguments {argv[1:]}; all options are --flags")
  try:
    sweep, exp_dir, rows = plan(FLAGS)
  except flags_lib.FlagError as e:
    _fail(str(e))
  print_plan(sweep, exp_dir, rows)
  if FLAGS.dry_run:
    return
  from absl import logging  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.WARNING)
  tf.get_logger().setLevel("ERROR")
  from experiments import runner  # pylint: disable=g-import-not-at-top
  root = FLAGS.root_output_dir
  saved = _snapshot(FLAGS, [r[0] for r in rows], sweep)
  ran = 0
  try:
    for i, (pt, values, out, done) in enumerate(rows):
      if done:
        print(f"[{i + 1}/{len(rows)}] {pt.name}: summary.json exists, skipped")
        continue
      print(f"\n[{i + 1}/{len(rows)}] {pt.name} -> {out}")
      _apply(FLAGS, saved, dict(values, root_output_dir=exp_dir,
                                experiment_name=pt.name))
      runner.run(FLAGS)
      ran += 1
  except flags_lib.FlagError as e:
    _fail(f"point {pt.name}: {e}")
  except KeyboardInterrupt:
    print("interrupted; run the same command again to resume (finished points "
          "are skipped)", file=sys.stderr)
    sys.exit(130)
  del root
  print(f"\nsweep {sweep.name}: ran {ran}, skipped {len(rows) - ran}; "
        f"results under {exp_dir}")
  print(f"table: python -m experiments.report_main --input_dir={exp_dir}")


if __name__ == "__main__":
  app.run(main)
