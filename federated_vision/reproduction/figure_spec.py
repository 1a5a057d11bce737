"""A paper's figure as data: what a preset's figure draws from its runs.

A `FigureSpec` is part of a preset's declaration, as a `spec.TableSpec` is:
its panels, each with its axes, series (legend labels and the (run, method)
pairs they read), reference lines (a target accuracy, the centralized
accuracy) and the numbers the paper states for points it shows; the
paper's caption or in-text sentence with its section (`source`); and the
table it belongs under in the report. `figures` fills it from run
directories and writes `<results_root>/<preset>_<key>.png` and `.csv`.

Panel kinds:
  CURVE    a metric of one method over its evaluated rounds (metrics.csv):
           x ROUND, BATCHES (Hsu 2020's cumulative batch budget) or
           GRADIENTS (McMahan 2017 Figure 9's minibatch gradient
           computations; a centralized run's SGD: its minibatch updates), y
           one of CURVE_METRICS; one (run, method) per series. x THETA: an
           averaging run's loss on the full training set against the mixing
           weight (McMahan 2017 Figure 1; the series' "method" is the
           initialisation, `AVERAGING_CURVES`).
  PER_RUN  one point per run: y a `spec.Metric` read as a report cell is
           (final accuracy, a method field, a run field, ...), x the run's
           EMD (`EMD_X`) or the value of one of its flags (e.g. "alpha").
  BARS     one bar per (category, series): y a `spec.Metric` per series,
           one (run, method) per category.

Plain Python: importing this module imports neither TensorFlow nor absl.
"""

import dataclasses
import re
from typing import Mapping, Optional, Tuple

from federated_vision.evaluation import model_averaging
from federated_vision.reproduction import spec
from federated_vision.training import run_files

CURVE = "curve"
PER_RUN = "per_run"
BARS = "bars"
PANEL_KINDS = (CURVE, PER_RUN, BARS)

# CURVE x: metrics.csv columns, and two derived axes (`figure_curves`).
ROUND = "round"
BATCHES = "cumulative_batch_budget"
# McMahan 2017 §3: "accuracy as a function of the number of such minibatch
# gradient calculations": the local minibatch gradients summed over the
# clients of every round so far; a centralized run's SGD: its updates.
GRADIENTS = "minibatch_gradients"
# McMahan 2017 Figure 1: the mixing weight of theta w + (1 - theta) w'.
THETA = "theta"
CURVE_X = (ROUND, BATCHES, GRADIENTS, THETA)
# An averaging run's two curves (the caption's left and right plots), read
# as a THETA series' "method".
AVERAGING_CURVES = model_averaging.INITIALISATIONS
# CURVE y, with the unit it is drawn in.
TEST_ACCURACY = "test_accuracy"          # %
RELATIVE_ACCURACY = "relative_accuracy"  # test accuracy / the baseline's
FULL_TRAIN_LOSS = run_files.FULL_TRAIN_LOSS  # the pooled training data's loss
TRAIN_LOSS = "train_loss"                # the clients' mean training loss
CURVE_METRICS = {TEST_ACCURACY: "%", RELATIVE_ACCURACY: "",
                 FULL_TRAIN_LOSS: "", TRAIN_LOSS: ""}
# PER_RUN x: the run's EMD (summary.json), else a flag name.
EMD_X = "emd"

_AXIS_LABELS = {
    ROUND: "communication round",
    BATCHES: "cumulative batch budget (largest client's local batches)",
    GRADIENTS: "minibatch gradient computations (all clients; SGD: updates)",
    THETA: "mixing weight θ of θw + (1 − θ)w′",
    TEST_ACCURACY: "test accuracy (%)",
    RELATIVE_ACCURACY: "relative accuracy (ours / our centralized)",
    FULL_TRAIN_LOSS: "training-set loss (server model, pooled client data)",
    TRAIN_LOSS: "mean client training loss",
    EMD_X: "EMD non-identicalness",
    "alpha": "Dirichlet concentration α (--alpha)",
}
_KEY = re.compile(r"[a-z0-9_]+\Z")


@dataclasses.dataclass(frozen=True)
class Series:
  """One line (or one bar per category) of a panel.

  Attributes:
    label: the legend's text.
    points: (run, method) pairs: a CURVE series reads one; a PER_RUN series
      one point per pair; a BARS series one bar per category, in order.
      method None: a run-level metric (EMD, a run field).
    metric: PER_RUN / BARS: what each point shows (None: final accuracy);
      CURVE: None (the panel's y).
    baseline: CURVE of RELATIVE_ACCURACY: the centralized run its test
      accuracy is divided by (Hsu 2020 Table 5: each row its own).
  """
  label: str
  points: Tuple[Tuple[str, Optional[str]], ...]
  metric: Optional[spec.Metric] = None
  baseline: Optional[str] = None

  def __post_init__(self):
    object.__setattr__(self, "points", tuple(tuple(p) for p in self.points))
    if not self.label or not self.points:
      raise ValueError(f"series {self.label!r}: a label and at least one "
                       "(run, method) point are required")

  @property
  def y_metric(self) -> spec.Metric:
    return self.metric or spec.Metric(spec.FINAL_ACCURACY)


@dataclasses.dataclass(frozen=True)
class ReferenceLine:
  """A horizontal line: a constant `value` (in the panel's y unit, e.g. a
  target accuracy in %), the accuracy of the centralized run `baseline`
  (in %), or a number a run `recorded` in its summary.json: (run, dotted
  path), e.g. Figure 1's best parent loss."""
  label: str
  value: Optional[float] = None
  baseline: Optional[str] = None
  recorded: Optional[Tuple[str, str]] = None

  def __post_init__(self):
    given = [x for x in (self.value, self.baseline, self.recorded)
             if x is not None]
    if len(given) != 1:
      raise ValueError(f"reference line {self.label!r}: give one of a "
                       "value, a baseline run or a recorded (run, path)")

  @property
  def run(self) -> Optional[str]:
    """The run it reads (None: a constant)."""
    return self.baseline or (self.recorded and self.recorded[0])


@dataclasses.dataclass(frozen=True)
class PaperValue:
  """A number the paper states for a point its figure shows, drawn as the
  paper's (a star with its printed text) beside ours.

  Attributes:
    series: the label of the series it belongs to.
    x, y: where (y in the panel's unit, e.g. 30.1 for "30.1 %").
    text: as printed.
    source: where it is stated (section and quote).
  """
  series: str
  x: float
  y: float
  text: str
  source: str


@dataclasses.dataclass(frozen=True)
class Panel:
  """One axes of a figure (see the module docstring for the kinds).

  Attributes:
    title: above the axes.
    kind: CURVE, PER_RUN or BARS.
    series: its series.
    x: CURVE: ROUND (the default) or BATCHES; PER_RUN: EMD_X or a flag
      name (required); BARS: none.
    y: CURVE: one of CURVE_METRICS (default TEST_ACCURACY); otherwise none
      (each series gives its metric).
    categories: BARS: the category labels (one (run, method) per category
      in every series).
    best_so_far: CURVE: each curve made monotone (McMahan 2017 §3: "making
      each curve monotonically improving by taking the best value of
      test-set accuracy achieved over all prior rounds").
    log_x, log_y: logarithmic axes.
    categorical_x: PER_RUN over a flag: evenly spaced points in the order
      of the first series, labelled with the flag's values (alpha = 0 and
      100 on one axis).
    lines: reference lines.
    paper: the paper's stated numbers on this panel.
    x_lines: (label, x) of vertical lines (Figure 1's theta = 0 and 1,
      where the mixture is a parent).
  """
  title: str
  kind: str
  series: Tuple[Series, ...]
  x: Optional[str] = None
  y: Optional[str] = None
  categories: Tuple[str, ...] = ()
  best_so_far: bool = False
  log_x: bool = False
  log_y: bool = False
  categorical_x: bool = False
  lines: Tuple[ReferenceLine, ...] = ()
  paper: Tuple[PaperValue, ...] = ()
  x_lines: Tuple[Tuple[str, float], ...] = ()

  def __post_init__(self):
    where = f"panel {self.title!r}"
    if self.kind not in PANEL_KINDS:
      raise ValueError(f"{where}: kind={self.kind!r} must be one of "
                       f"{PANEL_KINDS}")
    if not self.series:
      raise ValueError(f"{where}: no series")
    labels = [s.label for s in self.series]
    if len(set(labels)) != len(labels):
      raise ValueError(f"{where}: two series share a label")
    if self.kind == CURVE:
      object.__setattr__(self, "x", self.x or ROUND)
      object.__setattr__(self, "y", self.y or TEST_ACCURACY)
      if self.x not in CURVE_X or self.y not in CURVE_METRICS:
        raise ValueError(f"{where}: a curve's x must be one of {CURVE_X} "
                         f"and y one of {tuple(CURVE_METRICS)}")
      if any(len(s.points) != 1 or s.metric for s in self.series):
        raise ValueError(f"{where}: a curve series reads one (run, method) "
                         "and takes the panel's y")
      if self.x == THETA and (self.y != FULL_TRAIN_LOSS or
                              self.best_so_far):
        raise ValueError(f"{where}: a curve against theta is the averaged "
                         f"models' loss (y={FULL_TRAIN_LOSS!r}), not best "
                         "so far")
    else:
      if self.y is not None or self.best_so_far:
        raise ValueError(f"{where}: y and best_so_far are a curve's; a "
                         "per-run or bar series gives its metric")
      if self.kind == BARS and (
          self.x is not None or not self.categories or any(
              len(s.points) != len(self.categories) for s in self.series)):
        raise ValueError(f"{where}: bars need categories and one (run, "
                         "method) per category in every series, no x")
      if self.kind == PER_RUN and not self.x:
        raise ValueError(f"{where}: a per-run panel needs an x (EMD_X or a "
                         "flag name)")
    relative = self.kind == CURVE and self.y == RELATIVE_ACCURACY
    if any((s.baseline is not None) != relative for s in self.series):
      raise ValueError(f"{where}: every series of a relative-accuracy curve "
                       "names its baseline run, and only those")
    if len({s.y_metric.unit for s in self.series}) > 1:
      raise ValueError(f"{where}: its series' metrics have different units")
    if self.categorical_x and self.kind != PER_RUN:
      raise ValueError(f"{where}: categorical_x is a per-run panel's")
    if self.x_lines and self.kind != CURVE:
      raise ValueError(f"{where}: x_lines are a curve panel's")
    for p in self.paper:
      if p.series not in labels:
        raise ValueError(f"{where}: the paper's {p.text!r} names no series "
                         f"{p.series!r}")

  @property
  def x_label(self) -> str:
    if self.x is None:
      return ""
    return _AXIS_LABELS.get(self.x, f"--{self.x}")

  @property
  def y_unit(self) -> str:
    """The unit every y of the panel is drawn in (one per panel)."""
    if self.kind == CURVE:
      return CURVE_METRICS[self.y]
    return self.series[0].y_metric.unit

  @property
  def y_label(self) -> str:
    if self.kind == CURVE and self.x == THETA:
      return "loss on the full training set (the averaged model)"
    if self.kind == CURVE:
      return _AXIS_LABELS[self.y] + (", best so far" if self.best_so_far
                                     else "")
    metrics = {s.y_metric for s in self.series}
    if len(metrics) > 1:  # e.g. overall and per-label accuracies as bars.
      return "test accuracy (%)" if all(
          m.kind in spec.ACCURACY_KINDS for m in metrics) else self.y_unit
    m = self.series[0].y_metric
    name = {spec.FINAL_ACCURACY: "final test accuracy",
            spec.METHOD_FIELD: m.key, spec.RUN_FIELD: m.key,
            spec.EMD: "EMD"}.get(m.kind, m.kind.replace("_", " "))
    return f"{name} ({m.unit})" if m.unit else name


@dataclasses.dataclass(frozen=True)
class FigureSpec:
  """A paper's figure as a preset draws it.

  Attributes:
    key: names the files, `<preset>_<key>.png` / `.csv` ([a-z0-9_]).
    title: printed above it, e.g. "Figure 4: accuracy vs EMD".
    source: the paper's caption or in-text sentence with its section, or
      `spec.OURS` + why (e.g. the caption was lost in the extraction).
    panels: its axes, drawn left to right, top to bottom.
    table: the `TableSpec.key` it is shown under in the report (None: after
      the tables).
    notes: what is ours, not the paper's (panels, series chosen).
    best_rate: the paper draws each curve at the best learning rate of
      its grid (McMahan 2017 §3: "we plot metrics for the best performing
      rate"): in a preset with learning-rate grids (`lr_grid`) each curve
      of a tuned run is drawn at the rate its table's cell chooses
      (`figure_rates`), named in the legend; in a one-rate preset the
      report says "one rate, not optimised". False: each run's own rate.
  """
  key: str
  title: str
  source: str
  panels: Tuple[Panel, ...]
  table: Optional[Tuple[str, str]] = None
  notes: Tuple[str, ...] = ()
  best_rate: bool = False

  def __post_init__(self):
    if not _KEY.match(self.key or ""):
      raise ValueError(f"figure key {self.key!r}: [a-z0-9_]+ (it names "
                       "files)")
    if not self.panels or not self.source.strip():
      raise ValueError(f"figure {self.key}: panels and a source are required")
    object.__setattr__(self, "notes", tuple(self.notes))

  def runs(self) -> Tuple[str, ...]:
    """Every run it reads (series, baselines, reference lines), in order."""
    names = []
    for panel in self.panels:
      for s in panel.series:
        names += [run for run, _ in s.points] + [s.baseline]
      names += [l.run for l in panel.lines]
    return tuple(dict.fromkeys(n for n in names if n))

  def check(self, preset: "spec.Preset", runs: Mapping[str, spec.Run]
            ) -> None:
    """Raises ValueError naming the preset, figure and what is wrong: a run
    it reads is not the preset's (`runs`: by name), a method not the
    run's, a baseline not centralized, its table not the preset's, another
    figure of the preset has its key."""
    where = f"preset {preset.name}: figure {self.key}"
    if [f.key for f in preset.figures].count(self.key) > 1:
      raise ValueError(f"{where}: two figures have this key")
    unknown = [r for r in self.runs() if r not in runs]
    if unknown:
      raise ValueError(f"{where} names unknown runs {unknown}")
    if self.table is not None and self.table not in [t.key for t in
                                                     preset.tables]:
      raise ValueError(f"{where}: table {self.table} is not the preset's")
    for panel in self.panels:
      for name in [s.baseline for s in panel.series] + [
          l.baseline for l in panel.lines]:
        if name and runs[name].kind != spec.CENTRALIZED:
          raise ValueError(f"{where}: baseline {name} is not centralized")
      for s in panel.series:
        run_level = s.y_metric.kind in spec.RUN_LEVEL_KINDS
        if s.y_metric.kind == spec.ROUNDS_TO_RELATIVE:
          raise ValueError(f"{where}: series {s.label!r}: rounds to a "
                           "relative target needs a table cell's baseline")
        for run, method in s.points:
          if panel.kind == CURVE:
            _check_curve_point(where, panel, runs[run], method)
            continue
          if run_level != (method is None):
            raise ValueError(f"{where}: series {s.label!r}: method "
                             f"{'not allowed' if run_level else 'required'}"
                             f" for {s.y_metric.kind}")
          if method is not None and method not in runs[run].methods():
            raise ValueError(f"{where}: run {run} has no method {method!r}")
          if panel.kind == PER_RUN and panel.x not in (EMD_X,) and \
              panel.x not in runs[run].flags:
            raise ValueError(f"{where}: run {run} sets no --{panel.x}")


def _check_curve_point(where: str, panel: Panel, run: spec.Run,
                       method: Optional[str]) -> None:
  """A curve reads a method of a train_main run (or, against GRADIENTS, a
  centralized run's SGD: method None), or against THETA one of an
  averaging run's two curves."""
  if panel.x == THETA or run.kind == spec.AVERAGING:
    if panel.x != THETA or run.kind != spec.AVERAGING or \
        method not in AVERAGING_CURVES:
      raise ValueError(f"{where}: a curve against theta reads one of "
                       f"{AVERAGING_CURVES} of an averaging run, and an "
                       f"averaging run is drawn against theta only "
                       f"({run.name}, {method!r})")
    return
  if method is None:
    if panel.x != GRADIENTS or run.kind != spec.CENTRALIZED or \
        panel.y != TEST_ACCURACY:
      raise ValueError(f"{where}: a curve reads a method of {run.name} (no "
                       "method: a centralized run's SGD test accuracy "
                       "against its minibatch updates, x=GRADIENTS)")
    return
  if method not in run.methods():
    raise ValueError(f"{where}: run {run.name} has no method {method!r}")


def curve(label: str, run: str, method: Optional[str],
          baseline: Optional[str] = None) -> Series:
  """A CURVE series: `method` of `run` over its rounds (`baseline`: the
  centralized run of a relative-accuracy curve; method None: a centralized
  run's SGD against GRADIENTS; an averaging run: its curve
  `AVERAGING_CURVES` against THETA)."""
  return Series(label, ((run, method),), baseline=baseline)
