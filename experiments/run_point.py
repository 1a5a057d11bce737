"""Runs points of `sweep_main` / runs of `reproduce` under --parallel_runs > 1.

  python -m experiments.run_point --status_fd=FD [--extra_modules=...]

A long-lived child of `experiments.parallel`: it reads one job per line from
stdin (`<pickled config path>\\t<stdout path>\\t<stderr path>`), points its
stdout/stderr at the job's files, calls `runner.run` on the pickled
`ExperimentConfig` exactly as the sequential path does (through `cli.main`,
so with `train_main`'s exit statuses: 0 done, 2 configuration error or
directory in use, 3 divergence, 1 other failures, 128+signal when stopped)
and writes the status as one line to FD. One process runs several points in
turn, as the sequential path runs all of them in one process: imports,
TensorFlow's start-up and the package's caches are paid once per child, not
once per point. After a status other than 0 or 3 the child exits with it
(the parent starts a fresh one for the next point), so a point that failed
in an unknown state never shares a process with the next. Not meant to be
run by hand: use train_main with the point's flags.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
# gRPC's fork handlers can deadlock fork() when a later TFF worker is
# spawned in a process that already used gRPC (grpc/grpc#37259; seen
# here in runs done one after another in one process); we always exec
# right after fork, the case gRPC documents for turning them off.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

import pickle  # pylint: disable=g-import-not-at-top,g-bad-import-order
import sys  # pylint: disable=g-import-not-at-top,g-bad-import-order
import traceback  # pylint: disable=g-import-not-at-top,g-bad-import-order

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from experiments import cli
from experiments import parallel
from federated_vision.experiment import runner

cli.define_flags()
flags.DEFINE_integer("status_fd", None, "File descriptor the status of each "
                     "job is written to, one line per job.")
FLAGS = flags.FLAGS


def _redirect(stdout_path: str, stderr_path: str) -> None:
  """Points fds 1 and 2 (and so sys.stdout / sys.stderr) at the job's files."""
  sys.stdout.flush()
  sys.stderr.flush()
  for fd, path in ((1, stdout_path), (2, stderr_path)):
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(target, fd)
    os.close(target)


def run_job(argv, config_path: str) -> int:
  """`runner.run` on the pickled config under `cli.main`; its exit status."""
  def body():
    with open(config_path, "rb") as f:
      config = pickle.load(f)
    runner.run(config)
  try:
    cli.main(argv, body)
  except SystemExit as e:
    return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
  except Exception:  # pylint: disable=broad-except
    traceback.print_exc()  # An unexpected error: its traceback, status 1.
    return 1
  return 0


def main(argv):
  with os.fdopen(FLAGS.status_fd, "w", buffering=1) as status:
    for line in sys.stdin:
      config_path, stdout_path, stderr_path = line.rstrip("\n").split("\t")
      _redirect(stdout_path, stderr_path)
      code = run_job(argv, config_path)
      sys.stdout.flush()
      sys.stderr.flush()
      status.write(f"{code}\n")
      if code not in parallel.CONTINUE:
        sys.exit(code)


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_then_import_tf)
