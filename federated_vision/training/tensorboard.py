"""TensorBoard scalars of a run, and their purge back to a checkpoint."""

import glob
import os
import time
from typing import Dict, Mapping, Tuple

import tensorflow as tf

from federated_vision.training import run_files
from federated_vision.training.run_errors import OutputWriteError
from federated_vision.training.run_errors import describe_error

TENSORBOARD_TAGS = ("train_loss", "train_accuracy", "test_loss",
                    "test_accuracy", "cumulative_batch_budget",
                    run_files.DROPPED_NON_FINITE, run_files.FULL_TRAIN_LOSS)

# Sorts before the names TF gives event files (events.out.tfevents.<time>...),
# so TensorBoard reads the kept steps before those written after a resume.
KEPT_EVENTS_FILE = "events.out.tfevents.0000000000.kept.v2"


def purge_tensorboard(log_dir: str, last_step: int) -> int:
  """Drops every TensorBoard event with step > `last_step` from `log_dir`.

  TF2's `create_file_writer` has no `purge_step`. If any event file holds a
  step beyond `last_step`, a duplicate (tag, step) or a truncated record, the
  kept summaries (step <= last_step, one per tag and step, the latest file's
  value, original wall times) are rewritten into `KEPT_EVENTS_FILE` (via a
  temporary file and a rename), then the other event files are deleted. A
  crash in between leaves duplicates that the next call removes.

  Args:
    log_dir: a TensorBoard log directory (may not exist).
    last_step: the last step to keep (0 keeps nothing).

  Returns:
    The number of summary values dropped.
  """
  files = sorted(glob.glob(os.path.join(log_dir, "*tfevents*")))
  kept: Dict[Tuple[str, int], Tuple[float, object]] = {}
  dropped, dirty = 0, False
  for path in files:
    try:
      for event in tf.compat.v1.train.summary_iterator(path):
        if not event.HasField("summary"):
          continue
        for value in event.summary.value:
          key = (value.tag, event.step)
          if event.step > last_step or key in kept:
            dropped += 1
            dirty = True
          if event.step <= last_step:
            kept[key] = (event.wall_time, value)
    except tf.errors.DataLossError:  # A record cut short by a killed run.
      dirty = True
  if not dirty:
    return 0
  target = os.path.join(log_dir, KEPT_EVENTS_FILE)
  tmp = os.path.join(log_dir, ".kept_events.tmp")
  events = sorted(((step, wall, tag, value) for (tag, step), (wall, value)
                   in kept.items()), key=lambda e: (e[0], e[1], e[2]))
  with tf.io.TFRecordWriter(tmp) as writer:
    first = events[0][1] if events else time.time()
    writer.write(tf.compat.v1.Event(
        wall_time=first, file_version="brain.Event:2").SerializeToString())
    for step, wall, _, value in events:
      event = tf.compat.v1.Event(wall_time=wall, step=step)
      event.summary.value.add().CopyFrom(value)
      writer.write(event.SerializeToString())
  os.replace(tmp, target)
  for path in files:
    if os.path.basename(path) != KEPT_EVENTS_FILE:
      os.remove(path)
  return dropped



def write_scalars(writer, row: Mapping[str, object], tb_dir: str,
                  extra: Tuple[str, ...] = ()) -> None:
  """Writes `row`'s `TENSORBOARD_TAGS` and `extra` tags (an algorithm's own
  metrics) at step `row['round']`."""
  try:
    with writer.as_default(step=int(row["round"])):
      for key in TENSORBOARD_TAGS + tuple(extra):
        if row.get(key) not in (None, ""):
          tf.summary.scalar(key, float(row[key]))
    writer.flush()
  except (OSError, tf.errors.OpError) as e:
    raise OutputWriteError(tb_dir, f"cannot write TensorBoard events to "
                           f"{tb_dir}: {describe_error(e)}") from None
