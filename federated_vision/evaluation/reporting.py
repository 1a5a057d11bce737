"""Tables, plots and summary files written next to results."""

import json
import math
import os
from typing import Dict, List, Mapping, Optional, Sequence

import numpy as np

from federated_vision.evaluation import curves
from federated_vision.training import run_files


def _pyplot():
  # Local: matplotlib is a heavy optional dependency, loaded only to draw.
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  return plt


def loss_curves(rows: Sequence[Mapping[str, object]]):
  """((rounds, train losses), (evaluated rounds, test losses)) of a run."""
  def pick(key):
    pts = [(float(r["round"]), float(r[key])) for r in rows
           if r.get(key) not in (None, "")]
    return [p[0] for p in pts], [p[1] for p in pts]
  return pick("train_loss"), pick("test_loss")


def plot_loss(runs: Mapping[str, Sequence[Mapping[str, object]]], path: str,
              title: Optional[str] = None) -> str:
  """PNG of the mean client training loss (solid, every round) and the
  centralized test loss (dashed, evaluated rounds) vs round, all methods."""
  plt = _pyplot()
  fig, ax = plt.subplots(figsize=(6.4, 4.2))
  for name, rows in runs.items():
    (rx, train), (ex, test) = loss_curves(rows)
    line, = ax.plot(rx, train, label=f"{name} train")
    ax.plot(ex, test, ls="--", marker=".", color=line.get_color(),
            label=f"{name} test")
  ax.set_xlabel("communication round")
  ax.set_ylabel("loss (sparse softmax cross-entropy)")
  if title:
    ax.set_title(title, fontsize=8)
  ax.grid(alpha=0.3)
  ax.legend(fontsize=8)
  fig.tight_layout()
  try:
    save_figure(fig, path, dpi=110)
  finally:
    plt.close(fig)
  return path


def plot_accuracy(runs: Mapping[str, Sequence[Mapping[str, object]]],
                  path: str, x_key: str = "round",
                  centralized: Optional[float] = None,
                  title: Optional[str] = None) -> str:
  """PNG of test accuracy vs `x_key` ('round' or 'cumulative_batch_budget');
  `title`: the run's configuration (`train_main` passes it)."""
  plt = _pyplot()
  fig, ax = plt.subplots(figsize=(6.4, 4.2))
  for name, rows in runs.items():
    xs, ys = curves.curve(rows, x_key)
    ax.plot(xs, ys, marker=".", label=name)
  if centralized is not None and not math.isnan(centralized):
    ax.axhline(centralized, color="k", ls="--", lw=1, label="centralized")
  ax.set_xlabel("communication round" if x_key == "round"
                else "cumulative batch budget (largest client's local batches)")
  ax.set_ylabel("test accuracy")
  if title:
    ax.set_title(title, fontsize=8)
  ax.grid(alpha=0.3)
  ax.legend()
  fig.tight_layout()
  try:
    save_figure(fig, path, dpi=110)
  finally:
    plt.close(fig)
  return path


def acc_at_round_and_batch(runs: Mapping[str, Sequence[Mapping[str, object]]],
                           round_ref: int, batch_ref: int) -> Dict[str, dict]:
  """Acc@Round and Acc@Batch (Hsu, Qi & Brown 2020, Table 2) per method."""
  out = {}
  for name, rows in runs.items():
    rx, ry = curves.curve(rows, "round")
    bx, by = curves.curve(rows, "cumulative_batch_budget")
    out[name] = {"acc_at_round": curves.accuracy_at(rx, ry, round_ref),
                 "acc_at_batch": curves.accuracy_at(bx, by, batch_ref)}
  return out


def table_cell(v) -> str:
  """A table cell: '-' for a value not measured (None or NaN), never 'nan'."""
  if v is None:
    return "-"
  if isinstance(v, (float, np.floating)):
    return "-" if math.isnan(v) else f"{float(v):.4f}"
  return str(v)


def results_table_notes(central_reason: Optional[str], round_ref: int,
                        batch_ref: int) -> Dict[str, str]:
  """Why a cell of `train_main`'s results table is '-' (footnotes).

  Acc@Round / Acc@Batch are the accuracy of the last evaluation at or before
  round `round_ref` / `batch_ref` cumulative batches (Hsu, Qi & Brown 2020,
  Table 2: methods compared at equal rounds and at equal cost); `batch_ref`
  is the smallest final budget over the methods (ours: the largest budget
  every method reached).
  """
  notes = {
      "relative_acc": "final_acc / central_acc only for a completed method "
                      "with a completed centralized baseline",
      f"acc@round{round_ref}": f"no evaluation at or before round {round_ref}",
      f"acc@batch{batch_ref}": (
          f"the method's first evaluation came after {batch_ref} cumulative "
          "batches (the smallest final batch budget over the methods; "
          "evaluations every --rounds_per_eval rounds)")}
  if central_reason:
    notes["central_acc"] = central_reason
  return notes


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]],
                 notes: Optional[Mapping[str, str]] = None) -> str:
  """A plain-text table; a '-' (not measured) cell in a column named in
  `notes` gets a footnote line below the table saying why."""
  cells = [[table_cell(v) for v in r] for r in rows]
  widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
            for i, h in enumerate(header)]
  line = lambda vals: "  ".join(v.ljust(w) for v, w in zip(vals, widths))
  footnotes = [f"  - in {h}: {notes[h]}" for i, h in enumerate(header)
               if h in (notes or {}) and any(r[i] == "-" for r in cells)]
  return "\n".join([line(header), line(["-" * w for w in widths])]
                   + [line(r) for r in cells] + footnotes)


def json_safe(value):
  """`value` with numpy scalars/arrays as Python, tuples as lists, NaN as
  None (not measured) and +-inf as "inf"/"-inf": strict JSON has neither."""
  if isinstance(value, Mapping):
    return {str(k): json_safe(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [json_safe(v) for v in value]
  if isinstance(value, np.ndarray):
    return json_safe(value.tolist())
  if isinstance(value, (bool, np.bool_)):
    return bool(value)
  if isinstance(value, np.integer):
    return int(value)
  if isinstance(value, (float, np.floating)):
    value = float(value)
    if math.isnan(value):
      return None
    if math.isinf(value):
      return "inf" if value > 0 else "-inf"
    return value
  if value is None or isinstance(value, (bool, int, str)):
    return value
  return str(value)


def write_json(path: str, value, sealed: bool = False) -> str:
  """Writes `json_safe(value)` as indented, strict JSON, atomically
  (`training.run_files.atomic_path`: a temporary file renamed over `path`,
  removed on any failure; a failure is one `OutputWriteError` line); creates
  the directory. `sealed`: with the sha256 of the rest of the object
  (`run_files.seal`), so a reader notices an edited or damaged file.
  Returns path."""
  value = json_safe(value)
  if sealed:
    value = run_files.seal(value)
  return run_files.write_text(path, json.dumps(
      value, indent=1, sort_keys=True, allow_nan=False) + "\n")


def save_figure(fig, path: str, **kwargs) -> str:
  """`fig.savefig` to `path` atomically (`run_files.atomic_path`); the
  format is `path`'s extension. A PNG carries no metadata that varies
  (matplotlib's version, a time): the same figure gives the same bytes."""
  fmt = os.path.splitext(path)[1][1:] or "png"
  if fmt == "png":
    kwargs.setdefault("metadata", {"Software": None})
  with run_files.atomic_path(path) as tmp:
    fig.savefig(tmp, format=fmt, **kwargs)
  return path
