"""Federated training experiment: several methods side by side + centralized.

Default (`make run`): scikit-learn's digits over 20 Dirichlet(alpha=0.5)
clients, FedAvg and FedAvgM, and a centralized baseline with the same model
and input pipeline. Prints a line per round and a final table; writes
metrics CSVs, TensorBoard summaries, accuracy PNGs, hparams.json and
summary.json under --root_output_dir/--experiment_name (docs/experiments.md).
--estimate: the projected wall time and CPU-hours; trains nothing.

  .venv/bin/python -m experiments.train_main --total_rounds=5 --fedvc
Flags -> `experiment.config.checked_flags` (once) -> `experiment.runner.run`.
Exit status: 0 done; 2 bad flag, directory in use or holding another
experiment (experiment.json); 3 divergence; 1 unreadable checkpoint or
unwritable output; 130 Ctrl-C: rerun to resume (docs/failure_modes.md).
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from experiments import cli
from experiments import estimate
from experiments import flags_lib
from federated_vision.experiment import config as config_lib
from federated_vision.experiment import run_record
from federated_vision.experiment import runner
from federated_vision.tasks import presence

flags_lib.define_flags()
cli.define_flags()
estimate.define_flags()
for _module in flags_lib.key_flag_modules():
  flags.adopt_module_key_flags(_module)
FLAGS = flags.FLAGS
_CHECKED = []  # (config, resolved) of the command line, validated once.


def check_config():
  """The config, validated once before TensorFlow's import; main runs it."""
  if not FLAGS.estimate:  # --estimate validates its calibrations in main().
    config, resolved = config_lib.checked_flags(FLAGS)
    presence.require(config.data)
    run_record.check_before_run(config)  # Another experiment's directory.
    _CHECKED[:] = [(config, resolved)]


def main(argv):
  if FLAGS.estimate:  # Calibrate in a temporary directory; train nothing.
    cli.main(argv, lambda: estimate.estimate_train_main(FLAGS))
    return
  cli.main(argv, lambda: runner.run(*(_CHECKED.pop() if _CHECKED
                                     else config_lib.checked_flags(FLAGS))))


if __name__ == "__main__":
  app.run(main,
          flags_parser=lambda a: cli.parse_then_import_tf(a, check_config))
