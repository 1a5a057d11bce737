"""Federated training experiment: several methods side by side + centralized.

Default (`make run`): scikit-learn's digits over 20 Dirichlet(alpha=0.5)
clients, FedAvg and FedAvgM, and a centralized baseline with the same model
and input pipeline. Prints a line per round and a final table; writes
metrics CSVs, TensorBoard summaries, accuracy PNGs, hparams.json and
summary.json under --root_output_dir/--experiment_name.

  python -m experiments.train_main --total_rounds=5 --fedvc --imbalance_sigma=1
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

# TensorFlow must be imported before absl.app.run: imported for the first time
# inside main(), Keras cannot build Sequential models ("Output tensors of a
# Sequential model must be the output of a TensorFlow Layer").
import tensorflow as tf  # pylint: disable=g-import-not-at-top,unused-import
from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from experiments import flags_lib

flags_lib.define_flags()
FLAGS = flags.FLAGS


def _fail(message: str) -> None:
  print(f"{os.path.basename(sys.argv[0])}: error: {message}", file=sys.stderr)
  sys.exit(2)


def main(argv):
  sys.stdout.reconfigure(line_buffering=True)  # Progress reaches pipes/logs.
  if len(argv) > 1:
    _fail(f"unexpected arguments {argv[1:]}; all options are --flags")
  from absl import logging  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.WARNING)  # TFF logs every checkpoint at INFO.
  tf.get_logger().setLevel("ERROR")
  from experiments import runner  # pylint: disable=g-import-not-at-top
  try:
    runner.run(FLAGS)
  except flags_lib.FlagError as e:
    _fail(str(e))
  except KeyboardInterrupt:
    print("interrupted; run the same command again to resume from the last "
          "checkpoint", file=sys.stderr)
    sys.exit(130)


if __name__ == "__main__":
  app.run(main)
