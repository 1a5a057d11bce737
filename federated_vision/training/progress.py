"""`Progress`: a tqdm bar on a terminal, else one log line per round."""

import sys
from typing import Callable, Mapping, Optional

import tqdm

from federated_vision.training.metrics_csv import format_value


class Progress:
  """A tqdm bar (rounds/s, ETA) on a terminal, else one line per round."""

  def __init__(self, name: str, total: int, done: int,
               log_fn: Optional[Callable[[str], None]], bar: bool):
    self._name, self._total, self._log = name, total, log_fn
    self._bar = None
    if bar and log_fn is not None:
      self._bar = tqdm.tqdm(
          total=total, initial=done, desc=f"[{name}]", unit=" rounds",
          file=sys.stdout, dynamic_ncols=True, leave=True,
          bar_format=("{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}"
                      ", {rate_noinv_fmt}{postfix}]"))

  def message(self, text: str) -> None:
    if self._bar is not None:
      self._bar.write(text)
    elif self._log is not None:
      self._log(text)

  def round_done(self, row: Mapping[str, object]) -> None:
    acc = format_value(row.get("test_accuracy")) or "-"
    if self._bar is not None:
      self._bar.set_postfix_str(f"train_loss={row['train_loss']:.4f} "
                                f"test_accuracy={acc}", refresh=False)
      self._bar.update(1)
    elif self._log is not None:
      self._log(f"[{self._name}] round {row['round']:4d}/{self._total}  "
                f"train_loss={row['train_loss']:.4f}  "
                f"test_accuracy={acc:>8}  ({row['round_seconds']:.2f} s)")

  def close(self) -> None:
    if self._bar is not None:
      self._bar.close()
