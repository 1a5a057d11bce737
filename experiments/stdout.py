"""A binary's stdout going away: a closed pipe ends it quietly, a write
error is one line.

`train_main ... | head -1` closes the pipe after one line: the next write
raises `BrokenPipeError` (Python ignores SIGPIPE), and so does Python's own
flush of stdout at exit (Python docs, `signal`, "Note on SIGPIPE"). A full
device (`> /dev/full`) raises `OSError(ENOSPC)`, with no file name to tell
it from the run's own files. `guarded()` wraps `sys.stdout` so that a
failed write raises `StdoutError`, and turns it into the exit: for a closed
pipe, none of the binary's output and status 141 (128 + SIGPIPE, what a
shell shows for a process SIGPIPE killed); for any other error, one line
`cannot write to stdout: <cause>` on stderr and status 1. Either way stdout
is pointed at /dev/null first, so the exit's flush cannot fail again.
"""

import contextlib
import errno
import os
import signal
import sys
from typing import Iterator

BROKEN_PIPE_EXIT = 128 + signal.SIGPIPE


class StdoutError(Exception):
  """A write to stdout failed. Not an `OSError`: the run's own files' write
  errors (`run_files.atomic_path`) never catch it as theirs.

  Attributes:
    errno: the failed write's errno.
  """

  def __init__(self, error: OSError):
    super().__init__(f"cannot write to stdout: "
                     f"{os.strerror(error.errno) if error.errno else error}")
    self.errno = error.errno


class _Stdout:
  """`stream` whose failed `write` / `flush` raise `StdoutError`."""

  def __init__(self, stream):
    self._stream = stream

  def write(self, text):
    try:
      return self._stream.write(text)
    except OSError as e:
      raise StdoutError(e) from None

  def flush(self):
    try:
      return self._stream.flush()
    except OSError as e:
      raise StdoutError(e) from None

  def __getattr__(self, name):
    return getattr(self._stream, name)


def _to_devnull(stream) -> None:
  """Points `stream`'s file descriptor at /dev/null (Python's flush of
  stdout at exit then succeeds); a stream without one (a test's buffer) is
  left alone."""
  try:
    fd = stream.fileno()
  except (OSError, ValueError):  # io.UnsupportedOperation is both.
    return
  devnull = os.open(os.devnull, os.O_WRONLY)
  os.dup2(devnull, fd)
  os.close(devnull)


@contextlib.contextmanager
def guarded() -> Iterator[None]:
  """Runs the block with `sys.stdout` wrapped (see the module docstring);
  a `StdoutError` from it exits the process (141, or 1 with one line)."""
  stream = sys.stdout
  if isinstance(stream, _Stdout):  # An outer block guards it already.
    yield
    return
  sys.stdout = _Stdout(stream)
  try:
    yield
  except StdoutError as e:
    _to_devnull(stream)
    if e.errno == errno.EPIPE:
      sys.exit(BROKEN_PIPE_EXIT)  # Quiet, as a process SIGPIPE killed.
    try:
      print(f"{os.path.basename(sys.argv[0])}: error: {e}", file=sys.stderr)
    except OSError:
      pass  # stderr gone too: the exit status says it.
    sys.exit(1)
  finally:
    if isinstance(sys.stdout, _Stdout):  # (Not a test's redirection.)
      sys.stdout = stream
