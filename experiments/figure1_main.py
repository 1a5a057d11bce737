"""McMahan et al. 2017 Figure 1: two MNIST 2NNs averaged, loss vs theta.

Trains the figure's two pairs of parents (independent and shared
initialisation; `federated_vision.evaluation.model_averaging`) and writes
<output_dir>/figure1.csv (theta, loss of each mixture on the full training
set, per panel) and figure1.json (every setting, the parents' losses, the
data source). Exit 2: no data flag (or a data set not found), one line.

  .venv/bin/python -m experiments.figure1_main --data_dir=DIR  # or --archive_path
"""

import os

# Before TensorFlow loads: hides its import-time cuDNN/CUDA messages.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app
from absl import flags

from experiments import cli

flags.DEFINE_string("data_dir", None, "Prepared tensorflow-datasets directory "
                    "holding mnist.")
flags.DEFINE_string("archive_path", None, "Directory of MNIST's four IDX files.")
flags.DEFINE_bool("synthetic", False, "Random-image MNIST twin (checks the "
                  "machinery; not the figure).")
flags.DEFINE_string("output_dir", "output/mcmahan2017_figure1", "Where "
                    "figure1.csv and figure1.json go.")
flags.DEFINE_integer("seed", 0, "Samples, batch order and initialisation.")
flags.DEFINE_integer("num_thetas", 50, "Mixing weights over [-0.2, 1.2].")


def check_data_flag():
  """Exactly one data source (before TensorFlow's import)."""
  f = flags.FLAGS
  given = [name for name, value in (
      ("--data_dir", f.data_dir), ("--archive_path", f.archive_path),
      ("--synthetic", f.synthetic)) if value]
  if len(given) != 1:
    cli.fail("give one of --data_dir, --archive_path or --synthetic"
             + (f" (got {', '.join(given)})" if given else ""))


def main(argv):
  f = flags.FLAGS

  def body():
    from federated_vision.evaluation import model_averaging as ma  # pylint: disable=g-import-not-at-top
    try:
      x, y, source = ma.load_mnist_training_set(f.data_dir, f.archive_path,
                                                f.synthetic, f.seed)
    except (FileNotFoundError, ValueError) as e:
      cli.fail(str(e).splitlines()[0])
    curves = ma.figure1(ma.mnist_2nn, x, y, f.seed, f.num_thetas)
    paths = ma.write_curves(curves, source, f.output_dir)
    print(ma.summary_line(curves))
    print(f"results: {', '.join(paths)}")
  cli.main(argv, body, tff_runtime=False)


if __name__ == "__main__":
  app.run(main, flags_parser=lambda a: cli.parse_then_import_tf(
      a, check_data_flag))
