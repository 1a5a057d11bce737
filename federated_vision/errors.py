"""`ConfigError`: a bad setting, named by its configuration field.

Configuration fields are named exactly like the flags of the experiment
binaries (`DataConfig.alpha` is `--alpha`), so library validation writes its
messages as `--field=value: reason` and a binary prints them unchanged; the
library itself never imports absl.
"""

from typing import Optional


class ConfigError(ValueError):
  """An out-of-range or inconsistent setting; the message names the field.

  Attributes:
    field: the offending field (== flag) name, when there is a single one.
  """

  def __init__(self, message: str, field: Optional[str] = None):
    super().__init__(message)
    self.field = field


def show(value) -> str:
  """A field value as written on a command line: lists comma-joined."""
  if isinstance(value, (list, tuple)):
    return ",".join(map(str, value))
  return str(value)


def bad(field: str, value, reason: str) -> ConfigError:
  """`ConfigError('--field=value: reason')`."""
  return ConfigError(f"--{field}={show(value)}: {reason}", field)


def one_line(e: BaseException) -> str:
  """The first line of an exception's message (its type if empty)."""
  text = str(e).strip() or type(e).__name__
  return text.splitlines()[0]
