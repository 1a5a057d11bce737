"""Presets as data: named runs (train_main flag values) and the tables they fill.

A `Preset` reproduces one table or figure of a paper. It names its runs; each
`Run` is a full experiment configuration as a mapping from `train_main` FLAG
NAMES to values (the names of `experiments/flags_lib.py`, which the frozen
experiment config keeps as field names), plus which data-location flags the
run takes from the command line (paths are never part of a preset). Its
`TableSpec`s lay out the paper's table: every `CellSpec` says which metric of
which method of which run fills a (row, column), which centralized run gives
its relative accuracy, and which published number sits next to it.

Plain Python: importing this module imports neither TensorFlow nor absl.
"""

import dataclasses
import math
import types
from typing import Dict, List, Mapping, Optional, Tuple


# Kinds of runs. A centralized run trains the same model on the pooled client
# data (`--centralized_epochs` > 0); its summary.json["centralized"]["accuracy"]
# is the denominator of relative accuracy (Hsu, Qi & Brown 2020). An
# averaging run is not a train_main run: McMahan et al. 2017 Figure 1's two
# parent models averaged (`experiment.averaging_runner`); its flags are the
# train_main settings of the same meaning that it reads (`AVERAGING_FLAGS`).
FEDERATED = "federated"
CENTRALIZED = "centralized"
AVERAGING = "averaging"
RUN_KINDS = (FEDERATED, CENTRALIZED, AVERAGING)
TRAIN_MAIN_KINDS = (FEDERATED, CENTRALIZED)  # Runs `runner.run` trains.
# What an averaging run reads: the data and model, and each parent's local
# training (McMahan 2017 §2: samples of 600, SGD at 0.1, B = 50, E = 20).
AVERAGING_FLAGS = frozenset((
    "dataset", "model", "seed", "examples_per_client",
    "client_learning_rate", "client_batch_size", "client_epochs"))

# Metrics a cell can show (see `Metric`).
FINAL_ACCURACY = "final_accuracy"          # last evaluated test accuracy
ACC_AT_ROUND = "acc_at_round"              # Acc@Round N (arg = N)
ACC_AT_BATCH = "acc_at_batch"              # Acc@Batch N (arg = N)
ROUNDS_TO_TARGET = "rounds_to_target"      # McMahan: rounds to accuracy arg
ROUNDS_TO_RELATIVE = "rounds_to_relative"  # rounds to arg x centralized acc.
# A centralized run's minibatch updates to accuracy arg (McMahan 2017 §3's
# baseline SGD: "each minibatch update requires a communication round").
UPDATES_TO_TARGET = "updates_to_target"
CENTRALIZED_ACCURACY = "centralized_accuracy"  # of a centralized run
EMD = "emd"                                # partition's EMD non-identicalness
METHOD_FIELD = "method_field"  # an accuracy (fraction) field of the method's
                               # summary.json entry, named by Metric.key
RUN_FIELD = "run_field"  # a count of the run's hparams.json, Metric.key a
                         # dotted path (e.g. "partition_stats.num_clients")
PAPER_ONLY = "paper_only"  # the paper's printed text alone (no ours)
METRIC_KINDS = (FINAL_ACCURACY, ACC_AT_ROUND, ACC_AT_BATCH, ROUNDS_TO_TARGET,
                ROUNDS_TO_RELATIVE, UPDATES_TO_TARGET, CENTRALIZED_ACCURACY,
                EMD, METHOD_FIELD, RUN_FIELD, PAPER_ONLY)
RUN_LEVEL_KINDS = (CENTRALIZED_ACCURACY, EMD, RUN_FIELD, PAPER_ONLY,
                   UPDATES_TO_TARGET)
ACCURACY_KINDS = (FINAL_ACCURACY, ACC_AT_ROUND, ACC_AT_BATCH,
                  CENTRALIZED_ACCURACY, METHOD_FIELD)
ROUNDS_KINDS = (ROUNDS_TO_TARGET, ROUNDS_TO_RELATIVE, UPDATES_TO_TARGET)

# Effective-learning-rate studies (Hsu et al. 2019 / Appendix A).
CONTOUR = "contour"          # best per (alpha, eta_eff) group, contour PNG
SENSITIVITY = "sensitivity"  # accuracy vs eta_eff, one line per momentum
STUDY_KINDS = (CONTOUR, SENSITIVITY)

# Prefix of a preset setting's source that is not from the paper
# (`Preset.sources`): "ours: <why the paper does not give it>".
OURS = "ours: "


def spec_table(name: str) -> "TableSpec":
  """An empty table named `name` (error messages of a cell outside one)."""
  return TableSpec(("", name), name, (), (), ())


def _show(value) -> str:
  """A setting's value as a flag would spell it: tuples as a,b."""
  if isinstance(value, tuple):
    return ",".join(str(v) for v in value)
  return str(value)


def _frozen(mapping: Mapping[str, object]) -> Mapping[str, object]:
  """A read-only copy; list values become tuples."""
  return types.MappingProxyType(
      {k: tuple(v) if isinstance(v, list) else v for k, v in mapping.items()})


@dataclasses.dataclass(frozen=True)
class Run:
  """One experiment of a preset (one run directory under the results root).

  Attributes:
    name: the run directory name; unique across all presets for one config,
      so presets sharing a run (e.g. a centralized baseline) share its results.
    flags: train_main flag name -> value (list flags as tuples).
    kind: FEDERATED, CENTRALIZED or AVERAGING.
    data_flags: data-location flags (paths) this run takes from the command
      line when given; nothing else is passed through.
    required_data_flags: groups of flag names; each group needs at least one
      of its flags given (e.g. ("image_root", "tar_shards")).
  """
  name: str
  flags: Mapping[str, object]
  kind: str = FEDERATED
  data_flags: Tuple[str, ...] = ()
  required_data_flags: Tuple[Tuple[str, ...], ...] = ()

  def __post_init__(self):
    if not self.name or "/" in self.name:
      raise ValueError(f"Run.name={self.name!r}: must be a non-empty name "
                       "without '/'")
    if self.kind not in RUN_KINDS:
      raise ValueError(f"Run {self.name}: kind={self.kind!r} must be one of "
                       f"{RUN_KINDS}")
    object.__setattr__(self, "flags", _frozen(self.flags))
    for group in self.required_data_flags:
      missing = [f for f in group if f not in self.data_flags]
      if not group or missing:
        raise ValueError(f"Run {self.name}: required data flags {group} must "
                         "be non-empty and listed in data_flags")
    if self.kind == CENTRALIZED and not self.flags.get("centralized_epochs"):
      raise ValueError(f"Run {self.name}: a centralized run needs "
                       "centralized_epochs > 0")
    if self.kind == AVERAGING and set(self.flags) != AVERAGING_FLAGS:
      raise ValueError(f"Run {self.name}: an averaging run sets exactly "
                       f"{sorted(AVERAGING_FLAGS)} (it reads no other), not "
                       f"{sorted(self.flags)}")

  def flag_dict(self) -> dict:
    """A fresh, mutable flag dict (tuples back to lists) for a config builder."""
    return {k: list(v) if isinstance(v, tuple) else v
            for k, v in self.flags.items()}

  def methods(self) -> Tuple[str, ...]:
    """Method names this run's summary.json holds (train_main's naming;
    none for an averaging run)."""
    if self.kind == AVERAGING:
      return ()
    return expected_methods(self.flags)


def expected_methods(flags: Mapping[str, object]) -> Tuple[str, ...]:
  """Method names train_main gives `flags`: its methods section expanded
  exactly as a run expands it (`MethodsConfig.expand`: --methods in order,
  else the shorthands), each once per --mixing strategy
  ('<method>+<strategy>').

  Raises:
    ConfigError: a bad `methods` entry (naming --methods).
  """
  from federated_vision import config_fields  # pylint: disable=g-import-not-at-top
  from federated_vision.experiment import config as config_lib  # pylint: disable=g-import-not-at-top
  fields = set(config_fields.leaf_names(config_lib.MethodsConfig))
  methods = config_fields.replace_leaves(
      config_lib.MethodsConfig(),
      {k: tuple(v) if isinstance(v, list) else v
       for k, v in flags.items() if k in fields})
  from federated_vision.methods import names  # pylint: disable=g-import-not-at-top
  strategies = tuple(flags.get("mixing", ())) or (None,)
  return tuple(names.method_name(m, s) for m in methods.expand()
               for s in strategies)


@dataclasses.dataclass(frozen=True)
class Metric:
  """What a cell shows: `kind` (one of METRIC_KINDS) and its argument.

  acc_at_round / acc_at_batch: arg = the round / cumulative batch budget N.
  rounds_to_target: arg = target test accuracy in (0, 1].
  rounds_to_relative: arg = fraction of the centralized accuracy in (0, 1].
  updates_to_target: arg = target test accuracy in (0, 1]; the minibatch
    updates a centralized run's SGD needed (its per-epoch curve, made
    monotone and interpolated as McMahan's rounds); no method.
  method_field: key = the field (e.g. a per-label accuracy the mixing runs
    write); no argument.
  run_field: key = a dotted path into the run's hparams.json (a count:
    clients, classes, examples); no argument.
  final_accuracy, centralized_accuracy, emd, paper_only: no argument.
  """
  kind: str
  arg: Optional[float] = None
  key: Optional[str] = None

  def __post_init__(self):
    if self.kind not in METRIC_KINDS:
      raise ValueError(f"Metric kind {self.kind!r} must be one of "
                       f"{METRIC_KINDS}")
    keyed = self.kind in (METHOD_FIELD, RUN_FIELD)
    if keyed != bool(self.key):
      raise ValueError(f"Metric {self.kind}: key={self.key!r} "
                       f"{'required' if keyed else 'not allowed'}")
    needs_arg = self.kind in (ACC_AT_ROUND, ACC_AT_BATCH) + ROUNDS_KINDS
    if needs_arg != (self.arg is not None):
      raise ValueError(f"Metric {self.kind}: arg={self.arg!r} "
                       f"{'required' if needs_arg else 'not allowed'}")
    if self.kind in ROUNDS_KINDS and not 0 < self.arg <= 1:
      raise ValueError(f"Metric {self.kind}: arg={self.arg} must be in (0, 1]")
    if self.kind in (ACC_AT_ROUND, ACC_AT_BATCH) and not (
        self.arg > 0 and math.isfinite(self.arg)):
      raise ValueError(f"Metric {self.kind}: arg={self.arg} must be > 0")

  @property
  def unit(self) -> str:
    """'%' for accuracies (papers print percent), 'rounds', 'count' (a run
    field), or '' (EMD, paper only)."""
    if self.kind in ACCURACY_KINDS:
      return "%"
    if self.kind == RUN_FIELD:
      return "count"
    return "rounds" if self.kind in ROUNDS_KINDS else ""


@dataclasses.dataclass(frozen=True)
class CellSpec:
  """One cell of a paper's table.

  Attributes:
    row, column: the labels of the paper's layout (also the published key).
    run: the Run name whose results fill the cell.
    metric: what is shown.
    method: the method of that run's summary.json (None for centralized
      accuracy and EMD, which belong to the run).
    baseline: the centralized Run whose accuracy gives relative accuracy (and
      the target of rounds_to_relative); None = no relative accuracy.
    speedup_reference: (run, method) whose rounds-to-target divided by this
      cell's gives McMahan's speedup; None = no speedup. (run, None): a
      centralized run's minibatch updates to the target (McMahan 2017
      Table 3's "speedup relative to baseline SGD").
    ratio_to: a column of the same row: this cell's rounds divided by that
      cell's are shown beside it (Hsu 2020 Table 5's "(k.k)", recomputed
      for ours and the paper's alike); None = no ratio.
    compared_run: for a row added beside a run (`extra_methods`): that
      run, whose common references (Acc@Batch's batch budget, the smallest
      final budget of its methods; Acc@Round's round) a `METHOD_FIELD`
      acc_at_batch / acc_at_round is read at, from this cell's metrics.csv,
      so the row compares like with like; None = this run's own.
  """
  row: str
  column: str
  run: str
  metric: Metric
  method: Optional[str] = None
  baseline: Optional[str] = None
  speedup_reference: Optional[Tuple[str, str]] = None
  ratio_to: Optional[str] = None
  compared_run: Optional[str] = None

  def __post_init__(self):
    if self.metric.kind == ROUNDS_TO_RELATIVE and self.baseline is None:
      raise ValueError(f"cell ({self.row}, {self.column}): rounds_to_relative "
                       "needs a centralized baseline run")
    run_level = self.metric.kind in RUN_LEVEL_KINDS
    if run_level != (self.method is None):
      raise ValueError(f"cell ({self.row}, {self.column}): method "
                       f"{'not allowed' if run_level else 'required'} for "
                       f"{self.metric.kind}")
    if self.speedup_reference is not None and self.metric.kind not in ROUNDS_KINDS:
      raise ValueError(f"cell ({self.row}, {self.column}): a speedup needs a "
                       "rounds metric")
    if self.ratio_to is not None and self.metric.kind not in ROUNDS_KINDS:
      raise ValueError(f"cell ({self.row}, {self.column}): a ratio needs a "
                       "rounds metric")


@dataclasses.dataclass(frozen=True)
class TableSpec:
  """A paper's table (or a figure's data as a table) and how it is filled.

  Attributes:
    key: (paper, table) key of `published.PUBLISHED`, e.g.
      ("mcmahan2017", "table1"); also names the output section.
    title: printed above the table.
    rows, columns: the layout, in the paper's order.
    cells: every filled cell (a (row, column) without a cell is blank).
    groups: (label, rows) of the paper's row groups (e.g. Hsu 2020 Table
      1's "Synthetic" / "Real-World"), printed above their first row.
    omitted_rows: (label, why) of the paper's rows no run fills, printed
      with the reason (e.g. McMahan Table 2's Shakespeare LSTM: no
      Shakespeare task): never left out silently.
    added_rows: rows that are not the paper's (a researcher's own methods,
      `extra_methods`): no published number, and the report says so.
  """
  key: Tuple[str, str]
  title: str
  rows: Tuple[str, ...]
  columns: Tuple[str, ...]
  cells: Tuple[CellSpec, ...]
  groups: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
  omitted_rows: Tuple[Tuple[str, str], ...] = ()
  added_rows: Tuple[str, ...] = ()

  def __post_init__(self):
    if not set(self.added_rows) <= set(self.rows):
      raise ValueError(f"table {self.key}: added rows must be rows")
    grouped = [r for _, rows in self.groups for r in rows]
    if self.groups and sorted(grouped) != sorted(self.rows):
      raise ValueError(f"table {self.key}: groups must hold every row once")
    seen = set()
    for c in self.cells:
      if c.row not in self.rows or c.column not in self.columns:
        raise ValueError(f"table {self.key}: cell ({c.row}, {c.column}) is "
                         "outside its rows/columns")
      if (c.row, c.column) in seen:
        raise ValueError(f"table {self.key}: two cells at ({c.row}, {c.column})")
      seen.add((c.row, c.column))
    for c in self.cells:
      if c.ratio_to is not None and (c.row, c.ratio_to) not in seen:
        raise ValueError(f"table {self.key}: cell ({c.row}, {c.column}) "
                         f"divides by ({c.row}, {c.ratio_to}), not a cell")


@dataclasses.dataclass(frozen=True)
class StudySpec:
  """An effective-learning-rate study over runs (see `effective_lr`).

  Attributes:
    key: output name, e.g. "appendix_a".
    title: printed above the study.
    kind: CONTOUR (best over (lr, momentum) per (alpha, lr/(1-momentum)),
      alpha x effective lr contour) or SENSITIVITY (accuracy vs effective lr,
      one line per momentum).
    runs: the Run names of the sweep.
    method: the method of each run's summary.json that is studied.
    lr_flag: the learning rate of eta_eff = lr / (1 - server_momentum):
      "client_learning_rate" or "server_learning_rate".
    panel_flags: flags whose values split the sweep into panels (e.g. C, E).
    baseline: centralized Run for relative accuracy (None = raw accuracy).
  """
  key: str
  title: str
  kind: str
  runs: Tuple[str, ...]
  method: str
  lr_flag: str = "client_learning_rate"
  panel_flags: Tuple[str, ...] = ()
  baseline: Optional[str] = None

  def __post_init__(self):
    if self.kind not in STUDY_KINDS:
      raise ValueError(f"study {self.key}: kind={self.kind!r} must be one of "
                       f"{STUDY_KINDS}")
    if self.lr_flag not in ("client_learning_rate", "server_learning_rate"):
      raise ValueError(f"study {self.key}: lr_flag={self.lr_flag!r}")


@dataclasses.dataclass(frozen=True)
class Preset:
  """A runnable reproduction of one table or figure.

  Attributes:
    name: registry name, e.g. "hsu2020_table3".
    paper: citation key of `published.PAPERS`.
    description: what it reproduces, one paragraph.
    runs: every run (federated and the centralized baselines it needs).
    tables: the paper layouts it fills.
    studies: effective-learning-rate studies.
    notes: which settings are ours, not the paper's (said, never hidden).
    sources: flag name -> where its value(s) come from: a quote of the paper
      with section and sentence (e.g. 'Hsu 2020 §6.5: "Unless otherwise
      stated, the client learning rate is 0.01"') or `OURS` + the reason the
      value is ours (e.g. 'ours: the extraction lost N_VC'). Every setting a
      paper preset's runs make (`sourced_settings`) has one; data-location
      flags (`Run.data_flags`) are paths, not settings.
    replicas_of: base run name -> the run names of its repetitions over
      seeds, seed order (`seeds.expand`, `--seeds=N`); empty: one seed.
    comparisons: the papers' claims as paired comparisons over the seeds
      (`claim_spec.Comparison`, evaluated by `comparisons`): the report's
      differences, intervals and verdicts.
    figures: the papers' figures it draws from its runs
      (`figure_spec.FigureSpec`, drawn by `figures`), each under its table.
    skipped_runs: ((run name, why), ...): runs left out because their
      method cannot join the run they would be compared in (`extra_methods`:
      e.g. an algorithm the mixing strategies do not compose); the plan and
      the report list them with the reason.
    lr_grids: base run name -> the run names of its learning-rate grid
      (`lr_grid.expand`, McMahan 2017 §3's protocol): a rounds cell of the
      base run reports the member whose monotone curve reaches the target
      first; empty: one rate per run.
  """
  name: str
  paper: str
  description: str
  runs: Tuple[Run, ...]
  tables: Tuple[TableSpec, ...] = ()
  studies: Tuple[StudySpec, ...] = ()
  notes: Tuple[str, ...] = ()
  sources: Mapping[str, str] = dataclasses.field(default_factory=dict)
  replicas_of: Mapping[str, Tuple[str, ...]] = dataclasses.field(
      default_factory=dict)
  comparisons: Tuple["claim_spec.Comparison", ...] = ()
  figures: Tuple["figure_spec.FigureSpec", ...] = ()
  skipped_runs: Tuple[Tuple[str, str], ...] = ()
  lr_grids: Mapping[str, Tuple[str, ...]] = dataclasses.field(
      default_factory=dict)

  def __post_init__(self):
    object.__setattr__(self, "sources", types.MappingProxyType(
        dict(self.sources)))
    object.__setattr__(self, "replicas_of", types.MappingProxyType(
        {k: tuple(v) for k, v in self.replicas_of.items()}))
    for flag, source in self.sources.items():
      if not (isinstance(source, str) and source.strip()):
        raise ValueError(f"preset {self.name}: source of {flag!r} is empty")
    names = [r.name for r in self.runs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
      raise ValueError(f"preset {self.name}: duplicate run names {dup}")
    by_name = {r.name: r for r in self.runs}
    self._check_lr_grids(by_name)
    for base, names in self.replicas_of.items():
      unknown = [n for n in (base,) + tuple(names) if n not in by_name]
      if unknown or names[:1] != (base,):
        raise ValueError(f"preset {self.name}: repetitions of {base} must "
                         f"start with it and be runs (unknown: {unknown})")
    for table in self.tables:
      for c in table.cells:
        self._check_cell(table, c, by_name)
    keys = [c.key for c in self.comparisons]
    if len(keys) != len(set(keys)):
      raise ValueError(f"preset {self.name}: duplicate comparison keys")
    for comparison in self.comparisons:
      for side in (comparison.a, comparison.b):
        self._check_cell(spec_table(f"comparison {comparison.key}"),
                         side.cell(), by_name)
    for figure in self.figures:  # Its runs, methods, table, unique key.
      figure.check(self, by_name)
    for study in self.studies:
      for name in study.runs + ((study.baseline,) if study.baseline else ()):
        if name not in by_name:
          raise ValueError(f"preset {self.name}: study {study.key} names "
                           f"unknown run {name!r}")
      for name in study.runs:
        if study.method not in by_name[name].methods():
          raise ValueError(f"preset {self.name}: run {name} has no method "
                           f"{study.method!r}")

  def _check_lr_grids(self, by_name) -> None:
    """Each grid: runs, one of them the base, equal but for the rate."""
    object.__setattr__(self, "lr_grids", types.MappingProxyType(
        {k: tuple(v) for k, v in self.lr_grids.items()}))
    for base, names in self.lr_grids.items():
      unknown = [n for n in names if n not in by_name]
      if unknown or base not in names or len(set(names)) != len(names):
        raise ValueError(f"preset {self.name}: the learning-rate grid of "
                         f"{base} must hold it and other runs once "
                         f"(unknown: {unknown})")
      rest = [{k: v for k, v in by_name[n].flags.items()
               if k != "client_learning_rate"} for n in names]
      if any(r != rest[0] for r in rest):
        raise ValueError(f"preset {self.name}: the learning-rate grid of "
                         f"{base} differs in more than "
                         "--client_learning_rate")

  def _check_cell(self, table, c, by_name) -> None:
    where = f"preset {self.name}: table {table.key} cell ({c.row}, {c.column})"
    refs = [c.run] + ([c.baseline] if c.baseline else []) + (
        [c.compared_run] if c.compared_run else [])
    if c.speedup_reference:
      refs.append(c.speedup_reference[0])
    for name in refs:
      if name not in by_name:
        raise ValueError(f"{where} names unknown run {name!r}")
    run = by_name[c.run]
    if c.metric.kind == CENTRALIZED_ACCURACY and run.kind != CENTRALIZED:
      raise ValueError(f"{where}: {run.name} is not a centralized run")
    if c.method is not None and c.method not in run.methods():
      raise ValueError(f"{where}: run {run.name} has no method {c.method!r} "
                       f"(it has {', '.join(run.methods())})")
    if c.baseline and by_name[c.baseline].kind != CENTRALIZED:
      raise ValueError(f"{where}: baseline {c.baseline} is not centralized")
    if c.metric.kind == UPDATES_TO_TARGET and run.kind != CENTRALIZED:
      raise ValueError(f"{where}: {run.name} is not a centralized run")
    if c.speedup_reference:
      ref_run, ref_method = c.speedup_reference
      if ref_method is None and by_name[ref_run].kind != CENTRALIZED:
        raise ValueError(f"{where}: speedup reference {ref_run} has no method "
                         "and is not a centralized run")
      if ref_method is not None and \
          ref_method not in by_name[ref_run].methods():
        raise ValueError(f"{where}: speedup reference {ref_run} has no method "
                         f"{ref_method!r}")

  def settings(self) -> Dict[str, Tuple[object, ...]]:
    """Flag name -> the distinct values the preset's runs give it (in first
    use order); data-location flags excluded."""
    out: Dict[str, list] = {}
    for r in self.runs:
      for flag, value in r.flags.items():
        values = out.setdefault(flag, [])
        if value not in values:
          values.append(value)
    return {k: tuple(v) for k, v in out.items()}

  def source_lines(self) -> List[str]:
    """One markdown line per setting: `--flag` = value(s): its source (a
    quote of the paper, or 'ours: reason')."""
    return [f"- `--{flag}` = {', '.join(_show(v) for v in values)}: "
            f"{self.sources.get(flag, 'no source')}"
            for flag, values in sorted(self.settings().items())]

  def unsourced(self) -> Tuple[str, ...]:
    """Settings of the runs with no entry in `sources`, sorted."""
    return tuple(sorted(set(self.settings()) - set(self.sources)))

  def run(self, name: str) -> Run:
    for r in self.runs:
      if r.name == name:
        return r
    raise KeyError(f"preset {self.name} has no run {name!r}")
