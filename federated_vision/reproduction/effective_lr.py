"""The effective-learning-rate study (Hsu et al. 2019; Hsu 2020 Appendix A).

With server momentum beta, FedAvgM's update of learning rate eta behaves like
plain SGD with the effective learning rate eta_eff = eta / (1 - beta) (the
geometric sum of the momentum terms). The study sweeps (eta, beta), groups the
runs by (panel, alpha, eta_eff), keeps the best run of each group, and shows
the best relative accuracy over alpha and eta_eff as a table and a contour
plot like the paper's Figure 8 (alpha on one axis, effective learning rate on
the other, relative accuracy as colour). The sensitivity view plots accuracy
against eta_eff with one line per beta.

The grouping, best-of-group and table are plain functions with exact-value
tests; plots use matplotlib's Agg backend.
"""

import csv
import dataclasses
import math
import os
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from federated_vision.evaluation import reporting
from federated_vision.reproduction import results
from federated_vision.reproduction import spec
from federated_vision.training import run_files

OK = "ok"


def effective_learning_rate(lr: float, momentum: float) -> float:
  """eta / (1 - beta).

  Raises:
    ValueError: lr not a finite number > 0, or momentum outside [0, 1).
  """
  if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
    raise ValueError(f"learning rate must be a finite number > 0, got {lr!r}")
  if not 0 <= momentum < 1:
    raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
  return float(lr) / (1.0 - float(momentum))


@dataclasses.dataclass(frozen=True)
class Point:
  """One run of the sweep.

  Attributes:
    run: run name.
    panel: ((flag, value), ...) of the study's panel flags.
    alpha: Dirichlet concentration of the run's partition.
    lr: the learning rate of the study's lr_flag.
    momentum: server momentum beta.
    value: relative accuracy (or accuracy), None unless status is OK.
    status: OK or the run/method status (missing, running, diverged, ...).
  """
  run: str
  panel: Tuple[Tuple[str, object], ...]
  alpha: float
  lr: float
  momentum: float
  value: Optional[float]
  status: str = OK

  @property
  def eta_eff(self) -> float:
    return effective_learning_rate(self.lr, self.momentum)


@dataclasses.dataclass(frozen=True)
class Group:
  """Runs of one (panel, alpha) with the same effective learning rate."""
  panel: Tuple[Tuple[str, object], ...]
  alpha: float
  eta_eff: float
  members: Tuple[Point, ...]

  @property
  def best(self) -> Optional[Point]:
    """The member with the highest value; ties go to the first listed."""
    ok = [p for p in self.members if p.status == OK and p.value is not None
          and math.isfinite(p.value)]
    return max(ok, key=lambda p: p.value) if ok else None

  @property
  def status(self) -> str:
    """OK with a best member, else 'diverged' if any member diverged, else
    the first member's status."""
    if self.best is not None:
      return OK
    statuses = [p.status for p in self.members]
    return results.DIVERGED if results.DIVERGED in statuses else statuses[0]


def group_points(points: Sequence[Point], rel_tol: float = 1e-9) -> List[Group]:
  """Groups by (panel, alpha, eta_eff); rates within rel_tol are one rate.

  Returns:
    Groups sorted by panel, alpha, then eta_eff (the group's smallest rate);
    members keep their input order.
  """
  by_key: Dict[tuple, List[Point]] = {}
  for p in points:
    by_key.setdefault((p.panel, p.alpha), []).append(p)
  groups = []
  for (panel, alpha), pts in sorted(by_key.items(),
                                    key=lambda kv: (repr(kv[0][0]), kv[0][1])):
    rates = sorted({p.eta_eff for p in pts})
    reps: List[float] = []
    for r in rates:  # Cluster rates that differ only by rounding.
      if not reps or not math.isclose(r, reps[-1], rel_tol=rel_tol):
        reps.append(r)
    for rep in reps:
      members = tuple(p for p in pts
                      if math.isclose(p.eta_eff, rep, rel_tol=rel_tol))
      groups.append(Group(panel, alpha, rep, members))
  return groups


def panel_label(panel) -> str:
  return ", ".join(f"{k}={v}" for k, v in panel) or "all runs"


def _rate(x: float) -> str:
  return f"{x:.4g}"


def grouped_table(groups: Sequence[Group]) -> Dict[tuple, Tuple[
    List[str], List[List[str]]]]:
  """Per panel: (header, rows) of best value per alpha x eta_eff.

  A cell is "<value> (eta=<lr>, beta=<momentum>)" for the best member, the
  group's status when no member has a value, or "" where no run exists.
  """
  out = {}
  for panel in _ordered({g.panel for g in groups}):
    gs = [g for g in groups if g.panel == panel]
    rates = sorted({g.eta_eff for g in gs})
    alphas = sorted({g.alpha for g in gs})
    header = ["α \\ η/(1−β)"] + [_rate(r) for r in rates]
    rows = []
    for alpha in alphas:
      row = [f"{alpha:g}"]
      for rate in rates:
        g = next((g for g in gs if g.alpha == alpha and g.eta_eff == rate), None)
        if g is None:
          row.append("")
        elif g.best is None:
          row.append(g.status)
        else:
          b = g.best
          row.append(f"{b.value:.3f} (η={b.lr:g}, β={b.momentum:g})")
      rows.append(row)
    out[panel] = (header, rows)
  return out


def _ordered(panels):
  return sorted(panels, key=repr)


def plot_contour(groups: Sequence[Group], path: str, value_label: str) -> str:
  """Figure-8 style PNG: per panel, alpha (y) x eta_eff (x, log), best value
  as colour; filled contours where the grid allows, values at the points."""
  # Local: matplotlib is a heavy optional dependency, loaded only to draw.
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  panels = _ordered({g.panel for g in groups})
  values = [g.best.value for g in groups if g.best is not None]
  vmin, vmax = (min(values), max(values)) if values else (0.0, 1.0)
  if vmin == vmax:
    vmin, vmax = vmin - 0.01, vmax + 0.01
  fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.4),
                           squeeze=False, layout="constrained")
  mappable = None
  for ax, panel in zip(axes[0], panels):
    gs = [g for g in groups if g.panel == panel]
    rates = sorted({g.eta_eff for g in gs})
    alphas = sorted({g.alpha for g in gs})
    grid = np.full((len(alphas), len(rates)), np.nan)
    for g in gs:
      if g.best is not None:
        grid[alphas.index(g.alpha), rates.index(g.eta_eff)] = g.best.value
    x = np.log10(rates)
    y = np.arange(len(alphas))
    if len(rates) >= 2 and len(alphas) >= 2 and np.isfinite(grid).sum() >= 3:
      mappable = ax.contourf(x, y, np.ma.masked_invalid(grid), levels=12,
                             vmin=vmin, vmax=vmax, cmap="viridis")
    xx, yy = np.meshgrid(x, y)
    ok = np.isfinite(grid)
    sc = ax.scatter(xx[ok], yy[ok], c=grid[ok], vmin=vmin, vmax=vmax,
                    cmap="viridis", edgecolors="k", s=40, zorder=3)
    mappable = mappable or sc
    ax.scatter(xx[~ok], yy[~ok], marker="x", c="r", zorder=3)
    for i, j in zip(*np.nonzero(ok)):
      ax.annotate(f"{grid[i, j]:.2f}", (x[j], y[i]), textcoords="offset points",
                  xytext=(0, 6), ha="center", fontsize=7)
    pad = 0.08 * (x.max() - x.min() or 1.0)
    ax.set_xlim(x.min() - pad, x.max() + pad)
    ax.set_ylim(-0.4, len(alphas) - 0.6)
    ax.set_xticks(x)
    ax.set_xticklabels([_rate(r) for r in rates], rotation=45, fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{a:g}" for a in alphas])
    ax.set_xlabel("effective learning rate η/(1−β)")
    ax.set_ylabel("α (Dirichlet concentration)")
    ax.set_title(panel_label(panel), fontsize=9)
  fig.colorbar(mappable, ax=list(axes[0]), label=value_label)
  try:
    reporting.save_figure(fig, path, dpi=110, bbox_inches="tight")
  finally:
    plt.close(fig)
  return path


def plot_sensitivity(points: Sequence[Point], path: str,
                     value_label: str) -> str:
  """Value vs eta_eff (log x), one line per momentum, one axes per panel."""
  # Local: matplotlib is a heavy optional dependency, loaded only to draw.
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  panels = _ordered({p.panel for p in points})
  fig, axes = plt.subplots(1, len(panels), figsize=(5.6 * len(panels), 4.2),
                           squeeze=False)
  for ax, panel in zip(axes[0], panels):
    pts = [p for p in points if p.panel == panel]
    for beta in sorted({p.momentum for p in pts}):
      line = sorted((p.eta_eff, p.value) for p in pts if p.momentum == beta
                    and p.status == OK and p.value is not None)
      if line:
        ax.plot([a for a, _ in line], [b for _, b in line], marker="o",
                label=f"β = {beta:g}")
    ax.set_xscale("log")
    ax.set_xlabel("effective learning rate η/(1−β)")
    ax.set_ylabel(value_label)
    ax.set_title(panel_label(panel), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
  fig.tight_layout()
  try:
    reporting.save_figure(fig, path, dpi=110)
  finally:
    plt.close(fig)
  return path


@dataclasses.dataclass(frozen=True)
class StudyResult:
  """A study filled from run directories."""
  spec: spec.StudySpec
  points: Tuple[Point, ...]
  groups: Tuple[Group, ...]
  value_label: str
  notes: Tuple[str, ...]


def study_points(study: spec.StudySpec, preset: spec.Preset,
                 runs: Mapping[str, results.RunDir],
                 ) -> Tuple[Tuple[Point, ...], str, Tuple[str, ...]]:
  """(points, value label, notes) of a study's runs.

  The value is relative accuracy when the study's centralized baseline is
  finished; otherwise raw accuracy, said in the label and a note (relative
  accuracy is never computed from a missing or diverged baseline).
  """
  central, notes = None, []
  if study.baseline is not None:
    central, status, detail = results.centralized_accuracy(
        runs[study.baseline])
    if central is None:
      notes.append(f"baseline {study.baseline} is {status} ({detail}): "
                   "values are accuracies, not relative accuracies")
  label = "relative accuracy" if central is not None else "test accuracy"
  points = []
  for name in study.runs:
    flags = preset.run(name).flags
    state = results.method_state(runs[name], study.method)
    value = None
    if state.status == results.FINISHED:
      acc = state.entry["final_accuracy"]
      value = acc / central if central is not None else acc
    points.append(Point(
        name, tuple((f, flags.get(f)) for f in study.panel_flags),
        float(flags["alpha"]), float(flags[study.lr_flag]),
        float(flags.get("server_momentum", 0.0)), value,
        OK if value is not None else state.status))
  return tuple(points), label, tuple(notes)


def run_study(study: spec.StudySpec, preset: spec.Preset,
              runs: Mapping[str, results.RunDir]) -> StudyResult:
  points, label, notes = study_points(study, preset, runs)
  return StudyResult(study, points, tuple(group_points(points)), label, notes)


def format_markdown(result: StudyResult) -> List[str]:
  lines = [f"## {result.spec.title}", "",
           f"Value: {result.value_label} of `{result.spec.method}`, best over "
           f"(η = --{result.spec.lr_flag}, β = --server_momentum) per "
           "effective learning rate.", ""]
  lines += [f"- {n}" for n in result.notes]
  for panel, (header, rows) in grouped_table(result.groups).items():
    lines += ["", f"{panel_label(panel)}:", "",
              "| " + " | ".join(header) + " |",
              "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
  missing = [p for p in result.points if p.status != OK]
  if missing:
    lines += ["", f"{len(missing)} of {len(result.points)} runs have no value: "
              + ", ".join(f"{p.run} ({p.status})" for p in missing[:10])
              + (" ..." if len(missing) > 10 else "")]
  return lines


STUDY_CSV_COLUMNS = ("panel", "alpha", "eta_eff", "status", "best_value",
                     "best_lr", "best_momentum", "best_run", "members",
                     "members_with_value")


def write_study(result: StudyResult, prefix: str) -> Dict[str, str]:
  """<prefix>.csv (one row per group) and <prefix>.png; returns the paths."""
  csv_path, png_path = prefix + ".csv", prefix + ".png"
  with run_files.atomic_path(csv_path) as tmp, \
      open(tmp, "w", newline="") as f:
    writer = csv.DictWriter(f, STUDY_CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for g in result.groups:
      b = g.best
      writer.writerow({
          "panel": panel_label(g.panel), "alpha": g.alpha,
          "eta_eff": g.eta_eff, "status": g.status,
          "best_value": "" if b is None else b.value,
          "best_lr": "" if b is None else b.lr,
          "best_momentum": "" if b is None else b.momentum,
          "best_run": "" if b is None else b.run,
          "members": len(g.members),
          "members_with_value": sum(p.status == OK for p in g.members)})
  if result.spec.kind == spec.CONTOUR:
    plot_contour(result.groups, png_path, result.value_label)
  else:
    plot_sensitivity(result.points, png_path, result.value_label)
  key = result.spec.key
  return {f"{key}_csv": csv_path, f"{key}_png": png_path}
