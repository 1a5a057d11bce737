"""`in_process.run` with what the binary's own process shows on stderr.

A real `python -m experiments.train_main` names itself `train_main.py` in
its error lines (`cli.fail` prints `sys.argv[0]`'s base name) and logs
through absl's handler (`app.run` installs it) onto its stderr. In the test
process `sys.argv[0]` is pytest's and the log records go to pytest's
handlers: `run` sets both up as the binary's process has them for the run,
and restores them after (ours: test-suite time, issue 29).
"""

import logging
import subprocess
import sys

from absl import logging as absl_logging

import in_process


class _CurrentStderr:
  """Writes to whatever `sys.stderr` is at the time (`in_process.run`
  redirects it while the binary runs)."""

  def write(self, text):
    return sys.stderr.write(text)

  def flush(self):
    sys.stderr.flush()


def run(name: str, *args: str) -> subprocess.CompletedProcess:
  """`in_process.run(name, *args)` with the binary's program name and its
  absl log lines on the captured stderr."""
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
    return in_process.run(name, *args)
  finally:
    if added:
      root.removeHandler(handler)
    sys.argv[0], python_handler.stream = saved
