"""Gathers every summary.json under a directory into one results table.

One row per (run directory, method): point name (the run directory relative
to --input_dir), dataset, partition, alpha, method, C, clients per round, E,
B, final test accuracy, rounds to the target accuracy, speedup over the
--reference row and the EMD non-identicalness of the partition
(`federated_vision.experiment.report_lib`). Printed, and written as report.csv and report.md
to --output_dir (default: --input_dir). Does not import TensorFlow. Exit
status 1: a cell not computed (`missing` / `damaged` input, footnoted), a
damaged summary.json or an unwritten report (docs/failure_modes.md).

  .venv/bin/python -m experiments.report_main --input_dir=output/mcmahan_mnist_grid \\
      --reference=2nn_iid_C0.1_E1_Binf
"""

from absl import app
from absl import flags

from experiments import cli
from federated_vision.experiment import report_lib


def define_flags():
  """The binary's flags (defined in __main__ only, so importing this module
  next to `flags_lib`, which also has --target_accuracy, is safe)."""
  flags.DEFINE_string("input_dir", None, "Directory searched (recursively) for "
                      "summary.json files, e.g. <root_output_dir>/<sweep>.")
  flags.DEFINE_string("output_dir", None, "Where report.csv and report.md go "
                      "(default: --input_dir).")
  flags.DEFINE_string("reference", None, "Row whose rounds-to-target is the "
                      "speedup reference: a point name, or point/method when the "
                      "point ran several methods.")
  flags.DEFINE_float("target_accuracy", None, "Target accuracy for "
                     "rounds-to-target (default: each run's --target_accuracy; "
                     "none -> empty column).")


def main(argv):
  f = flags.FLAGS

  def body():
    if not f.input_dir:
      cli.fail("--input_dir is required (a directory holding summary.json "
               "files)")
    out = f.output_dir or f.input_dir
    rows = report_lib.gather(f.input_dir, f.target_accuracy, f.reference)
    try:
      paths = report_lib.write_outputs(rows, out)
    except OSError as e:
      cli.fail(f"--output_dir={out}: cannot write ({e.strerror or e})")
    print(report_lib.format_table(rows))
    print(f"\n{len(rows)} rows: {paths[0]}, {paths[1]}")
    report_lib.check_complete(rows)
  cli.main(argv, body, tff_runtime=False)


if __name__ == "__main__":
  define_flags()
  app.run(main, flags_parser=cli.parse_flags)
