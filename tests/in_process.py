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
import importlib
import io
import logging
import os
import subprocess
import sys

from absl import flags
from absl import logging as absl_logging

from experiments import cli


def run_train_main(*args: str) -> str:
  """`python -m experiments.train_main args`, in this process (see
  `run_main`)."""
  return run_main("experiments.train_main", *args)


def run_sweep_main(*args: str) -> str:
  """`python -m experiments.sweep_main args`, in this process (see
  `run_main`)."""
  return run_main("experiments.sweep_main", *args)


def _import_binary(name: str):
  """Imports a binary's module (defining its flags) without keeping the
  environment defaults it sets for its own process (GRPC_VERBOSITY, ...):
  the test process's subprocesses (e.g. tests/test_library_recipes.py's,
  which checks that a recipe quiets the logs itself) must not inherit them."""
  before = dict(os.environ)
  try:
    return importlib.import_module(name)
  finally:
    for key in set(os.environ) - set(before):
      del os.environ[key]
    os.environ.update(before)


def run(name: str, *args: str, stdout_to=None) -> subprocess.CompletedProcess:
  """`python -m <name> args`, in this process, as `conftest.run_module`
  would run it in a child: the binary's flags parser (`cli.parse_then_import_tf`
  with its pre-import check, `check_config`, if it has one) and its main.

  Args:
    name: the binary's module, e.g. "experiments.train_main".
    *args: its command line.
    stdout_to: a binary stream stdout is written to instead of a buffer
      (e.g. one that fails like a full device); its stdout is then "".

  Returns:
    A `subprocess.CompletedProcess`: returncode 0 when main returned, else
    its SystemExit code (a refused flag: 2 and its one line on stderr);
    stdout and stderr captured.
  """
  prog = name.rsplit(".", 1)[-1]
  f = flags.FLAGS
  f.unparse_flags()
  # cli.main quiets absl and TF's Python logger: restored after the run.
  verbosity = absl_logging.get_verbosity()
  tf_level = logging.getLogger("tensorflow").level
  # cli.main line-buffers sys.stdout (`reconfigure`): a TextIOWrapper has it.
  out, err = (io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
              for raw in (stdout_to or io.BytesIO(), io.BytesIO()))
  code = 0
  try:
    binary = _import_binary(name)
    check = getattr(binary, "check_config", lambda: None)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
      try:
        binary.main(cli.parse_then_import_tf([prog, *args], check))
      except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None
                                                       else 1)
  finally:
    f.unparse_flags()
    absl_logging.set_verbosity(verbosity)
    logging.getLogger("tensorflow").setLevel(tf_level)
  text = [s.buffer.getvalue().decode("utf-8")
          if isinstance(s.buffer, io.BytesIO) else "" for s in (out, err)]
  return subprocess.CompletedProcess([prog, *args], code, *text)


def run_main(name: str, *args: str) -> str:
  """`run(name, *args)`'s stdout; a non-zero exit is re-raised as
  SystemExit (its stderr printed first, so the test's failure shows it)."""
  proc = run(name, *args)
  if proc.returncode != 0:
    sys.stderr.write(proc.stderr)
    raise SystemExit(proc.returncode)
  return proc.stdout


# What a real binary process shows on stderr: `cli.fail` names the program
# by `sys.argv[0]`'s base name, and absl's handler (`app.run` installs it)
# writes its log lines there; in the test process both are pytest's.
class _CurrentStderr:
  """Writes to whatever `sys.stderr` is at the time (`in_process.run`
  redirects it while the binary runs)."""

  def write(self, text):
    return sys.stderr.write(text)

  def flush(self):
    sys.stderr.flush()


def run_as_binary(name: str, *args: str,
                  stdout_to=None) -> subprocess.CompletedProcess:
  """`run(name, *args, stdout_to=...)` with the binary's program name and
  its absl log lines on the captured stderr."""
  handler = absl_logging.get_absl_handler()
  python_handler = handler.python_handler
  root = logging.getLogger()
  saved = sys.argv[0], python_handler.stream
  added = handler not in root.handlers
  sys.argv[0] = name.rsplit(".", 1)[-1] + ".py"
  python_handler.stream = _CurrentStderr()
  if added:
    root.addHandler(handler)
  try:
    return run(name, *args, stdout_to=stdout_to)
  finally:
    if added:
      root.removeHandler(handler)
    sys.argv[0], python_handler.stream = saved
