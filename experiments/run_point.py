"""One point of `sweep_main` / one run of `reproduce` under --parallel_runs > 1.

  python -m experiments.run_point --point_config=PATH [--extra_modules=...]

`runner.run` on the pickled `ExperimentConfig` at PATH (written by
`experiments.parallel`), exactly as the sequential path calls it, with
`train_main`'s exit statuses (`cli.main`): 0 done, 2 configuration error or
directory in use, 3 divergence, 1 other failures, 128+signal when stopped.
Not meant to be run by hand: use train_main with the point's flags.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

import pickle  # pylint: disable=g-import-not-at-top,g-bad-import-order
from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from experiments import cli

cli.define_flags()
flags.DEFINE_string("point_config", None, "Pickled ExperimentConfig to run.")
FLAGS = flags.FLAGS


def main(argv):
  from experiments import runner  # pylint: disable=g-import-not-at-top

  def body():
    with open(FLAGS.point_config, "rb") as f:
      config = pickle.load(f)
    runner.run(config)
  cli.main(argv, body)


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_then_import_tf)
