"""Reruns a paper's table or figure and reports it beside the published numbers.

  .venv/bin/python -m experiments.reproduce --preset=hsu2020_table3 --split_csv=... \\
      [--dry_run] [--only=run_glob,...] [--report_only]
      [--results_root=DIR (default: --root_output_dir, i.e. output)]
      [--local_workers=N] [--workers=host:port,...] [--parallel_runs=N]
      [--estimate] [--seeds=N]

Plans the preset's runs (a missing data flag or file, or data not on this
machine, stops it before any run starts; --report_only reads finished runs
and needs no data flag), runs the unfinished ones (resuming interrupted
runs, skipping finished ones), then writes <results_root>/<preset>.md/.csv,
the studies' tables and contours, TensorBoard HParams for the sweep and, for
--preset=digits_claims / shakespeare_claims, one verdict line per claim. --estimate prints each
run's projected wall time and CPU-hours (calibrated per run shape, on the
synthetic twin where the data are not here) and trains nothing. --seeds=N
repeats every run over N seeds (`reproduction.seeds`; each an ordinary
resumable run) and shows every cell as its mean and 95% t-interval over
them, and each paired comparison's difference (--estimate: x N). A preset
fixes its runs' settings: only the flags below are read (data location,
output root, TFF workers); any other setting flag is refused. Logic:
`experiments.reproduce_lib`; presets: `federated_vision.reproduction`.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from experiments import cli
from experiments import estimate
from experiments import flags_lib
from experiments import parallel
from experiments import repeat
from experiments import reproduce_lib
from federated_vision.reproduction import plan
from federated_vision.reproduction import presets

flags_lib.define_flags()  # The data-location flags, named as in train_main.
cli.define_flags()
estimate.define_flags()
repeat.define_flags()
def _preset_help() -> str:
  return (f"Preset name: {' | '.join(presets.preset_names())} (and any "
          "registered by --extra_modules; --dry_run lists its runs).")


flags.DEFINE_string("preset", None, _preset_help())
cli.AFTER_EXTRA_MODULES.append(  # Presets of --extra_modules in --help.
    lambda: setattr(flags.FLAGS["preset"], "help", _preset_help()))
cli.define_dry_run("List the runs: the preset's base settings once, then per "
                   "run what differs, then the runs skipped; train nothing.")
flags.DEFINE_list("only", [], "Run/report only runs matching these shell "
                  "patterns (e.g. 'digits_claims_alpha_*').")
flags.DEFINE_bool("report_only", False, "Rebuild the report from finished "
                  "runs; train nothing.")
flags.DEFINE_string("results_root", None, "Run directories go to "
                    "<results_root>/<run name>; reports to <results_root>. "
                    "Default: --root_output_dir (the output root of every "
                    "binary; giving both with different values is an error).")
flags.DEFINE_integer("parallel_runs", 1, parallel.FLAG_HELP, lower_bound=1)
flags.DEFINE_list("extra_methods", [], "Your methods beside the paper's: "
                  "each table gains a row per method and compared run, "
                  "trained with that run's settings (<run>+<method>), e.g. "
                  "fedavg+fedvc@adam:server_learning_rate=0.01 "
                  "(docs/extending.md).")
for _name in reproduce_lib.read_flag_names():  # --help lists these.
  flags.declare_key_flag(_name)
flags.adopt_module_key_flags(cli)  # --extra_modules.
flags.declare_key_flag("seeds")
FLAGS = flags.FLAGS


def main(argv):
  def body():
    _require_preset()
    if FLAGS.estimate:
      if FLAGS.dry_run or FLAGS.report_only:
        cli.fail("--estimate: not with --dry_run or --report_only")
      try:
        preset = reproduce_lib.get_preset(FLAGS.preset, FLAGS.seeds,
                                          FLAGS.extra_methods)
        estimate.estimate_preset(
            preset, reproduce_lib.estimable(plan.select(preset, FLAGS.only)),
            reproduce_lib.given_data(FLAGS),
            reproduce_lib.execution_settings(FLAGS),
            estimate.settings_from_flags(FLAGS))
      except (plan.PlanError, reproduce_lib.ReproduceError) as e:
        cli.fail(str(e))
      return
    try:
      reproduce_lib.reproduce(
          FLAGS.preset, reproduce_lib.output_root(FLAGS),
          reproduce_lib.given_data(FLAGS),
          FLAGS.only, FLAGS.dry_run, FLAGS.report_only,
          execution=reproduce_lib.execution_settings(FLAGS),
          parallel_runs=FLAGS.parallel_runs,
          extra_modules=FLAGS.extra_modules, seeds=FLAGS.seeds,
          extra_methods=FLAGS.extra_methods)
    except (plan.PlanError, reproduce_lib.ReproduceError) as e:
      cli.fail(str(e))
  cli.main(argv, body, tff_runtime=_trains())


def _trains() -> bool:
  """False for a plan or a report: they need neither TensorFlow nor TFF."""
  return not (FLAGS.dry_run or FLAGS.report_only)


def _require_preset() -> None:
  """--preset is required: one line listing the presets (exit 2)."""
  if not FLAGS.preset:
    cli.fail("--preset: required; presets: "
             f"{', '.join(presets.preset_names())}")


def _refuse_unread_flags() -> None:
  """A setting flag the preset fixes is one line (exit 2), never ignored."""
  read = set(reproduce_lib.read_flag_names())
  unread = [f"--{n}" for n in flags_lib.config_flag_names(FLAGS)
            if FLAGS[n].present and n not in read]
  if unread:
    cli.fail(f"{', '.join(unread)}: not read: a preset fixes its runs' "
             "settings (reproduce reads only the data-location, output-root "
             "and TFF-worker flags, see --help); vary settings with "
             "train_main or sweep_main")


def _check_plan() -> None:
  """A missing --preset, the plan's errors (a missing data flag or file, a
  directory made with other flags) and every run's config errors
  (`checked_flags`) before TensorFlow's import; `reproduce_lib.reproduce`
  checks them again before its first run."""
  _require_preset()
  _refuse_unread_flags()
  if not (FLAGS.preset and _trains()) or FLAGS.estimate:
    return  # Those paths check in main().
  try:
    planned = plan.plan(
        reproduce_lib.get_preset(FLAGS.preset, FLAGS.seeds,
                                          FLAGS.extra_methods),
        reproduce_lib.output_root(FLAGS), reproduce_lib.given_data(FLAGS),
        FLAGS.only)
    reproduce_lib.check_runnable(planned)
    reproduce_lib.checked_flags(planned, reproduce_lib.execution_settings(FLAGS))
  except (plan.PlanError, reproduce_lib.ReproduceError) as e:
    cli.fail(str(e))


if __name__ == "__main__":
  app.run(main, flags_parser=lambda a: cli.parse_then_import_tf(
      a, _check_plan, needs_tf=_trains))
