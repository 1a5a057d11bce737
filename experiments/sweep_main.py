"""Runs a grid of experiments (Hsu et al. 2019 alpha sweeps, McMahan's grid).

Every point is an ordinary `train_main` run (`runner.run` on the point's
config) writing summary.json, hparams.json, <method>/metrics.csv, the
partition report and plots to <root_output_dir>/<experiment_name>/<point>/.
<experiment_name> defaults to the sweep's name. Points with a summary.json are
skipped: a rerun resumes (a point cut short from its checkpoint). Grids: federated_vision/experiment/sweeps.py.
--seeds=N: each point N times (<point>_seed<s>, `repeat`). Precedence: a
point's axes > command-line flags > the sweep's base > flag defaults; giving
an axis flag (e.g. --alpha for an alpha sweep) on the command line is an error.

  .venv/bin/python -m experiments.sweep_main --sweep=hsu2019_cifar10 --dry_run
  .venv/bin/python -m experiments.sweep_main --sweep=hsu2019_cifar10 \\
      --data_source=archive --archive_path=/data/cifar-10-python.tar.gz
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from experiments import cli
from experiments import flags_lib
from experiments import parallel
from experiments import repeat
from experiments import sweep_lib

flags_lib.define_flags()
cli.define_flags()
repeat.define_flags()
flags.DEFINE_string("sweep", None, sweep_lib.sweep_help())
cli.AFTER_EXTRA_MODULES.append(sweep_lib.update_sweep_help)  # --extra_modules'.
cli.define_dry_run("Print the planned runs and exit.")
flags.DEFINE_list("only", [], "Run only the points whose name matches one of "
                  "these shell patterns (e.g. 'fedavg_*,*_alpha_0').")
flags.DEFINE_integer("parallel_runs", 1, parallel.FLAG_HELP, lower_bound=1)
for _module in flags_lib.key_flag_modules():
  flags.adopt_module_key_flags(_module)
FLAGS = flags.FLAGS


def main(argv):
  def body():
    planned = sweep_lib.plan(FLAGS)
    sweep_lib.print_plan(*planned)
    if not FLAGS.dry_run:
      sweep_lib.run_points(*planned, parallel_runs=FLAGS.parallel_runs,
                           extra_modules=FLAGS.extra_modules)
  cli.main(argv, body, "interrupted; run the same command again to resume "
           "(finished points are skipped)", tff_runtime=not FLAGS.dry_run)


if __name__ == "__main__":
  app.run(main, flags_parser=lambda a: cli.parse_then_import_tf(  # The plan
      a, lambda: sweep_lib.check(FLAGS),  # checked
      needs_tf=lambda: not FLAGS.dry_run))  # before TF (none for a plan).
