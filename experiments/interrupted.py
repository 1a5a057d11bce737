"""The line a binary stopped by a signal prints, and its start-up handling.

`python -m experiments.<binary>` imports the `experiments` package before
the binary's own module: its `__init__` calls `install_at_start()` for such
a start (Python sets `sys.argv[0]` to "-m" while it locates the module), so
SIGTERM / SIGHUP are handled from the binary's first import on -- before
anything is written, through its imports and TensorFlow's -- and a signal
that stops it before `cli` catches it still ends with the line (printed at
exit). Importing the package otherwise (a test, your script) changes
nothing; `cli.parse_flags` installs the same handlers when it starts.
"""

import atexit
import sys

LINE = ("interrupted; run the same command again to resume from the last "
        "checkpoint")
_SAID = []  # Non-empty once a line said why the process stops.


def say(line: str = LINE) -> None:
  """Prints `line` to stderr (once it is said, exit does not say it again)."""
  _SAID.append(line)
  try:
    print(line, file=sys.stderr)
  except OSError:
    pass  # stderr gone: the exit status says it.


def _say_at_exit() -> None:
  signals = sys.modules.get("federated_vision.runtime.signals")
  if signals is not None and signals.TERMINATING_SIGNAL is not None and (
      not _SAID):
    say()


def install_at_start() -> None:
  """SIGTERM / SIGHUP -> exit 128 + signal (`signals.install_signal_handlers`)
  and the line at exit if nothing said it. Main thread only."""
  from federated_vision.runtime import signals  # pylint: disable=g-import-not-at-top
  signals.install_signal_handlers()
  atexit.register(_say_at_exit)
