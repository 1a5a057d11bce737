"""A curve series' raw points read from one run's files, per x axis.

`read(x, y, run, method, ctx)` returns the (x, y) of one CURVE series as
the run recorded them (accuracies as fractions; `figures` makes them
monotone, percent or relative), or why there are none:

  ROUND, BATCHES  the method's metrics.csv, its evaluated rounds.
  GRADIENTS       McMahan et al. 2017 Figure 9's minibatch gradient
                  computations. A federated method: the running sum over
                  rounds of clients x batch budget (`curves.
                  minibatch_gradients`), exact only when every client holds
                  as many examples (hparams.json's partition_stats), since
                  metrics.csv records a round's largest client's batches, not
                  their sum; otherwise not drawn, saying so. A centralized
                  run (method None): its SGD's test accuracy per epoch
                  against its minibatch updates (summary.json).
  THETA           an averaging run's (McMahan 2017 Figure 1) loss of theta w
                  + (1 - theta) w' on the full training set, the curve named
                  by `method` (`figure_spec.AVERAGING_CURVES`).

Plain Python (numpy): reports read finished runs without TensorFlow.
"""

import dataclasses
import math
import os
from typing import Optional, Tuple

from federated_vision.evaluation import curves
from federated_vision.evaluation import model_averaging
from federated_vision.reproduction import figure_spec as fs
from federated_vision.reproduction import results
from federated_vision.training import run_files


@dataclasses.dataclass(frozen=True)
class Curve:
  """A series' raw points, or why it has none.

  Attributes:
    xs, ys: the points in the run's units (empty unless the status is
      FINISHED).
    status: `results.FINISHED` or why not (a `results` status).
    detail: one line naming the file or run, when not FINISHED.
  """
  xs: Tuple[float, ...] = ()
  ys: Tuple[float, ...] = ()
  status: str = results.FINISHED
  detail: str = ""


def _none(status: str, detail: str) -> Curve:
  return Curve((), (), status, detail)


def _balanced(run: results.RunDir) -> Optional[str]:
  """None when every client of the run holds as many examples, else why
  its minibatch gradients cannot be counted from metrics.csv."""
  stats = (run.hparams or {}).get("partition_stats")
  low, high = ((stats.get("examples_per_client_min"),
                stats.get("examples_per_client_max"))
               if isinstance(stats, dict) else (None, None))
  if isinstance(low, int) and low == high:
    return None
  where = f"{run.path}/hparams.json"
  if not (isinstance(low, int) and isinstance(high, int)):
    return (f"{where}: no partition_stats examples_per_client_min/max, so "
            "the clients' minibatch gradients cannot be counted")
  return (f"{where}: clients of {low}-{high} examples; metrics.csv records "
          "a round's largest client's batches, not their sum, so minibatch "
          "gradients are counted for clients of one size only")


def _metrics_curve(x: str, y: str, run: str, method: str, ctx) -> Curve:
  state = ctx.method(run, method)
  if state.status != results.FINISHED:
    return _none(state.status, state.detail)
  column = fs.TEST_ACCURACY if y == fs.RELATIVE_ACCURACY else y
  try:
    rows = ctx.rows(run, method)
  except run_files.RunFileError as e:
    return _none(results.INVALID, str(e).splitlines()[0])
  if not rows or column not in rows[0]:
    return _none(results.UNAVAILABLE,
                 f"{ctx.runs[run].path}/{method}/metrics.csv has no "
                 f"{column} column" + (" (trained without --full_train_loss)"
                                       if column == fs.FULL_TRAIN_LOSS
                                       else ""))
  if x == fs.GRADIENTS:
    why = _balanced(ctx.runs[run])
    if why is not None:
      return _none(results.UNAVAILABLE, why)
    try:
      x_of = dict(zip((r["round"] for r in rows),
                      curves.minibatch_gradients(rows)))
    except ValueError as e:
      return _none(results.INVALID, f"{ctx.runs[run].path}/{method}/"
                   f"metrics.csv: {e}")
  else:
    x_of = {r["round"]: r[x] for r in rows}
  evaluated = [r for r in rows if r.get(column) is not None]
  return Curve(tuple(float(x_of[r["round"]]) for r in evaluated),
               tuple(float(r[column]) for r in evaluated))


def _sgd_curve(run: results.RunDir) -> Curve:
  updates, history, status, detail = results.sgd_curve(run)
  if status != results.FINISHED:
    return _none(status, detail)
  return Curve(tuple(float(u) for u in updates),
               tuple(float(h) for h in history))


def _averaging_curve(run: results.RunDir, which: str) -> Curve:
  if run.status != results.FINISHED:
    return _none(run.status, run.detail)
  recorded = run.summary.get(model_averaging.SUMMARY_KEY)
  where = f"{run.path}/summary.json"
  thetas = recorded.get("thetas") if isinstance(recorded, dict) else None
  losses = recorded.get(which) if isinstance(recorded, dict) else None
  if not (isinstance(thetas, list) and isinstance(losses, list) and thetas
          and len(thetas) == len(losses) and all(
              isinstance(v, (int, float)) and not isinstance(v, bool)
              and math.isfinite(v) for v in thetas)):
    return _none(results.INVALID, f"{where}: no {model_averaging.SUMMARY_KEY}"
                 f" thetas and {which} losses of one length")
  return Curve(tuple(float(t) for t in thetas),
               tuple(math.nan if v is None else float(v) for v in losses))


def read(x: str, y: str, run: str, method: Optional[str], ctx) -> Curve:
  """One CURVE series' raw points against `x` (a panel's x) of `y` (its y;
  RELATIVE_ACCURACY reads the test accuracy), see the module docstring;
  `ctx` is the report's reader of run directories (`runs`, `method`,
  `rows`)."""
  if x == fs.THETA:
    return _averaging_curve(ctx.runs[run], method)
  if method is None:  # A centralized run's SGD (figure_spec checked it).
    return _sgd_curve(ctx.runs[run])
  return _metrics_curve(x, y, run, method, ctx)


def recorded_number(run: results.RunDir, path: str) -> Tuple[
    Optional[float], str, str]:
  """(value, status, detail) of the number at the dotted `path` of a
  finished run's summary.json (a reference line's `recorded`)."""
  if run.status != results.FINISHED:
    return None, run.status, run.detail
  value = run.summary
  for part in path.split("."):
    value = value.get(part) if isinstance(value, dict) else None
  if isinstance(value, bool) or not isinstance(value, (int, float)) or \
      not math.isfinite(value):
    return None, results.UNAVAILABLE, (
        f"{os.path.join(run.path, 'summary.json')}: {path} is {value!r}")
  return float(value), results.FINISHED, ""
