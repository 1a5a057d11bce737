"""Runs a binary's `main` in the test process instead of a subprocess.

For tests that read what a finished run wrote (files, printed lines) and
not the process boundary (exit status, stderr, signals, a fresh
interpreter): the run skips the subprocess's `import tensorflow` /
`tensorflow_federated` and TFF worker start, and reuses the test process's
traced functions (ours: test-suite CPU, issue 18). As
tests/test_method_list.py and tests/test_extensibility.py already do, the
command line is parsed into the global absl FLAGS, which are reset after.
"""

import contextlib
import io

from absl import flags

from experiments import sweep_main
from experiments import train_main


def run_train_main(*args: str) -> str:
  """`python -m experiments.train_main args`, in this process (see
  `run_main`)."""
  return run_main(train_main, *args)


def run_sweep_main(*args: str) -> str:
  """`python -m experiments.sweep_main args`, in this process (see
  `run_main`)."""
  return run_main(sweep_main, *args)


def run_main(binary, *args: str) -> str:
  """`python -m <binary> args`, in this process.

  Args:
    binary: the binary's module (its flags are defined at its import).
    *args: its command line.

  Returns:
    What the run printed on stdout.

  Raises:
    SystemExit: the binary refused the command or failed (its exit status).
  """
  f = flags.FLAGS
  f.unparse_flags()
  # cli.main line-buffers sys.stdout (`reconfigure`): a TextIOWrapper has it.
  out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
  try:
    prog = binary.__name__.rsplit(".", 1)[-1]
    f([prog, *args])
    with contextlib.redirect_stdout(out):
      binary.main([prog])
    return out.buffer.getvalue().decode("utf-8")
  finally:
    f.unparse_flags()
