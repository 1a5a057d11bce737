"""Federated training experiment: several methods side by side + centralized.

Default (`make run`): digits over 20 Dirichlet(alpha=0.5) clients, FedAvg and
FedAvgM, and a centralized baseline (same model and input pipeline). Writes
metrics CSVs, TensorBoard summaries, plots, hparams.json and summary.json
under --root_output_dir/--experiment_name (docs/experiments.md). --estimate:
the projected cost, --dry_run the resolved plan (neither trains); --seeds=N.

Flags -> `repeat.checked_flags` (validated once) -> `runner.run`. Exit: 0
done; 2 bad flag or directory in use / another experiment's; 3 divergence; 1
unreadable checkpoint or output; 130 Ctrl-C, rerun to resume (failure_modes).
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from experiments import cli
from experiments import estimate
from experiments import flags_lib
from experiments import repeat
from federated_vision.experiment import resolved_run
from federated_vision.experiment import runner

flags_lib.define_flags()
cli.define_flags()
estimate.define_flags()
repeat.define_flags()
cli.define_dry_run("Print the resolved plan (data, clients per round, every "
                   "method with its settings and client groups, output "
                   "directories); train and write nothing.")
for _module in flags_lib.key_flag_modules():
  flags.adopt_module_key_flags(_module)
FLAGS = flags.FLAGS
_CHECKED = []  # (repetitions, resolved run) of the command line, checked once.


def check_config():
  """The config (and its --seeds repetitions), checked once before
  TensorFlow's import; main runs them (--estimate checks in main())."""
  _CHECKED[:] = repeat.checked_for_run(FLAGS)


def main(argv):
  checked = lambda: (_CHECKED or repeat.checked_for_run(FLAGS)).pop()
  if FLAGS.estimate:  # Calibrate in a temporary directory; train nothing.
    cli.main(argv, lambda: estimate.estimate_train_main(FLAGS))
  elif FLAGS.dry_run:
    cli.main(argv, lambda: print("\n".join(resolved_run.describe(
        *checked()))), tff_runtime=False)
  else:
    cli.main(argv, lambda: repeat.run_each(*checked(), runner.run))


if __name__ == "__main__":
  app.run(main, flags_parser=lambda a: cli.parse_then_import_tf(
      a, check_config, needs_tf=lambda: not FLAGS.dry_run))
