"""Hsu, Qi & Brown 2020: Tables 1-5 (Figure 4 and Appendix A's Figure 8:
`hsu2020_cifar`).

Tables 1-5 are the paper's experiments: every row of each table (its layout
and published numbers: `published_hsu2020`), each run training exactly the
methods its rows show (`--methods`), and every setting sourced
(`spec.Preset.sources`): a quote of the paper with its section, or "ours:"
and why (the paper does not state it, or the text extraction lost the
number). Two rows share a run only where they are the same experiment (same
data, algorithm, C and settings; FedVC or FedIR off/on of one algorithm).
FedAvgM is `fedavgm@nesterov` throughout (`_common.NESTEROV_SOURCE`).
"""

import dataclasses
import types
from typing import Dict, Mapping, Sequence, Tuple

from federated_vision.methods import names
from federated_vision.reproduction import published_hsu2020 as pub
from federated_vision.reproduction import claim_spec
from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import _common as c
from federated_vision.reproduction.presets import hsu2020_cifar as cifar
from federated_vision.reproduction.presets import hsu2020_figures as figs
from federated_vision.reproduction.presets import hsu2020_sources as src

PAPER = "hsu2020"
_ALGORITHMS = (("fedavg", "FedAvg"), ("fedavgm", "FedAvgM"))
# The source every table adds to its own for --methods (joined with ' | ').
_NESTEROV = {"methods": c.NESTEROV_SOURCE}


def _method(algorithm: str, *variants: str) -> str:
  """The method name of `algorithm` with `variants`, canonical; FedAvgM
  with Nesterov momentum (`_common.with_nesterov`)."""
  method = "+".join((algorithm,) + variants)
  return (c.with_nesterov(method) if algorithm == "fedavgm" else
          names.spec_name(names.parse(method)))


def _sources(runs: Sequence[spec.Run], *tables: Mapping[str, str],
             fallback: Mapping[str, str] = types.MappingProxyType({})
             ) -> Dict[str, str]:
  """flag -> its sources' texts (joined with ' | ' when several tables give
  one), for exactly the settings `runs` make; `fallback` only for a flag no
  table gives.

  Raises:
    ValueError: a setting without a source (never a silent gap).
  """
  out = {}
  for run in runs:
    for flag in run.flags:
      texts = [t[flag] for t in tables if flag in t] or (
          [fallback[flag]] if flag in fallback else [])
      if not texts:
        raise ValueError(f"hsu2020: run {run.name} sets --{flag} without a "
                         "source")
      out[flag] = " | ".join(dict.fromkeys(texts))
  return out


def _flags_for(methods: Tuple[str, ...]) -> Dict[str, object]:
  """The method settings the methods use (and only those)."""
  specs = [names.parse(m) for m in methods]
  flags: Dict[str, object] = {"methods": methods, "server_learning_rate": 1.0}
  if any(s.algorithm == "fedavgm" for s in specs):
    flags["server_momentum"] = 0.9
  if any("fedvc" in s.variants for s in specs):
    flags["virtual_client_size"] = 256
  if any("fedir" in s.variants for s in specs):
    flags["fedir_target"] = "uniform"
  return flags


def _inat_run(split: str, methods: Tuple[str, ...], clients: int,
              total_rounds: int, rounds_per_eval: int, tag: str = "",
              pretrained: bool = True) -> spec.Run:
  """An iNaturalist run of one algorithm's `methods`; named
  inat_<split>_<algorithm>_c<C>[_<tag>][_scratch]_r<rounds>."""
  algorithm = names.parse(methods[0]).algorithm
  parts = [f"inat_{c.INAT_SPLITS[split]}", algorithm, f"c{clients}"]
  parts += [tag] if tag else []
  parts += ([] if pretrained else ["scratch"]) + [f"r{total_rounds}"]
  flags = dict(c.REALWORLD_TRAINING, **c.INAT_MODEL, **_flags_for(methods))
  flags.update(dataset="inaturalist", inat_split=c.INAT_SPLITS[split],
               clients_per_round=clients, total_rounds=total_rounds,
               rounds_per_eval=rounds_per_eval,
               rounds_per_checkpoint=rounds_per_eval)
  data = c.INAT_DATA + (c.PRETRAINED if pretrained else ())
  required = c.INAT_REQUIRED + ((c.PRETRAINED,) if pretrained else ())
  return c.federated("_".join(parts), data, required, **flags)


def _centralized_row(rows, cells, run: spec.Run, column: str) -> None:
  """Adds the table's printed "Centralized" row: our centralized run's
  accuracy in `column` (the paper prints one number per row / layer mode)."""
  if pub.CENTRALIZED not in rows:
    rows.append(pub.CENTRALIZED)
  cells.append(spec.CellSpec(pub.CENTRALIZED, column, run.name,
                             spec.Metric(spec.CENTRALIZED_ACCURACY)))


def _preset(name: str, description: str, runs, table: spec.TableSpec,
            *sources: Mapping[str, str], comparisons=(), figures=(),
            **fallback) -> spec.Preset:
  runs = c.unique_runs(runs)
  return spec.Preset(name, PAPER, description, runs, (table,),
                     sources=_sources(runs, *sources, **fallback),
                     comparisons=tuple(comparisons), figures=tuple(figures))


# Table 1's columns: what each reads from the row's centralized run
# (hparams.json; the ✓ / ✗ column, whose name the extraction lost, is the
# paper's text alone).
_TABLE1_FIELDS = {"Clients": "partition_stats.num_clients",
                  "Classes": "partition_stats.num_classes",
                  "Examples": "partition_stats.num_examples"}


def table1() -> spec.Preset:
  """Table 1: each data set's clients, classes, examples (ours: the pooled
  run's partition) and centralized accuracy, in the paper's Synthetic /
  Real-World groups."""
  baselines = {"CIFAR-10": c.cifar_centralized("cifar10"),
               "CIFAR-100": c.cifar_centralized("cifar100"),
               "iNaturalist Geo Splits": c.inat_centralized(True),
               "iNaturalist-User-120k": c.inat_centralized(True),
               "Landmarks-User-160k": c.landmarks_centralized(False)}
  cells = []
  for row in pub.TABLE1_ROWS:
    run = baselines[row].name
    for column in pub.TABLE1_COLUMNS:
      metric = (spec.Metric(spec.CENTRALIZED_ACCURACY)
                if column == pub.TABLE1_COLUMN else
                spec.Metric(spec.RUN_FIELD, key=_TABLE1_FIELDS[column])
                if column in _TABLE1_FIELDS else spec.Metric(spec.PAPER_ONLY))
      cells.append(spec.CellSpec(row, column, run, metric))
  table = spec.TableSpec(
      (PAPER, "table1"), "Table 1: data sets and centralized accuracy "
      "(ours: the centralized run's pooled partition)", pub.TABLE1_ROWS,
      pub.TABLE1_COLUMNS, tuple(cells), groups=pub.TABLE1_GROUPS)
  preset = _preset(
      "hsu2020_table1",
      "Clients, classes, examples and the centralized accuracy (same model "
      "and pipeline, pooled training data: relative accuracy's denominator) "
      "of each data set; both iNaturalist rows are one run (User-120k's "
      "120,300 images; its clients are not the Geo splits').",
      baselines.values(), table, src.CENTRAL_SOURCES,
      src.REALWORLD_SOURCES, src.CIFAR_CENTRAL_SOURCES,
      {"dataset": src.H + "Table 1 rows \"CIFAR-10\", \"CIFAR-100\", "
                  "\"iNaturalist Geo Splits\", \"iNaturalist-User-120k\", "
                  "\"Landmarks-User-160k\""},
      # The CIFAR centralized runs are Figure 4's: its sources cover a
      # setting of theirs that the tables above do not.
      fallback=cifar.figure4().sources)
  return dataclasses.replace(preset, notes=(
      f"\"{pub.TABLE1_MARK}\": the extraction's header lost this column's "
      "name; the paper's marks are shown (CIFAR's non-identical Dirichlet "
      "clients are \"✗\", so it does not mean non-IID).",))


def table2() -> spec.Preset:
  """Table 2 (§6.3): FedVC off/on x FedAvg/FedAvgM on Geo-3k and User-120k."""
  rounds, every = 12_500, 50
  baseline = c.inat_centralized(True)
  runs, cells, rows = [], [], []
  metrics = [spec.Metric(spec.ACC_AT_ROUND, n) for n in pub.ACC_ROUNDS] + [
      spec.Metric(spec.ACC_AT_BATCH, n) for n in pub.ACC_BATCHES]
  by_row = {}
  for split in ("Geo-3k", "User-120k"):
    for algorithm, label in _ALGORITHMS:
      # FedVC off and on of one algorithm: one experiment, one run.
      off, on = _method(algorithm), _method(algorithm, "fedvc")
      run = _inat_run(split, (off, on), 10, rounds, every, "fedvc_off_on")
      runs.append(run)
      for fedvc in (False, True):
        by_row[pub.table2_row(split, label, fedvc)] = (run, on if fedvc
                                                       else off)
  for data, label, fedvc, _ in pub.TABLE2:  # The paper's row order.
    row = pub.table2_row(data, label, fedvc)
    rows.append(row)
    run, method = by_row[row]
    cells += [spec.CellSpec(row, col, run.name, m, method, baseline.name)
              for col, m in zip(pub.TABLE2_COLUMNS, metrics)]
  _centralized_row(rows, cells, baseline, pub.TABLE2_COLUMNS[0])
  table = spec.TableSpec((PAPER, "table2"), "Table 2: FedVC on iNaturalist "
                         "(C = 10)", tuple(rows), pub.TABLE2_COLUMNS,
                         tuple(cells))
  batch = spec.Metric(spec.ACC_AT_BATCH, pub.ACC_BATCHES[-1])
  comparisons = tuple(
      claim_spec.Comparison(
          f"fedvc_vs_off_{run.name}", src.H + "§6.3: \"FedVC consistently "
          "yields superior accuracy on both FedAvg and FedAvgM\" (Acc@Batch "
          f"50k, {run.flags['inat_split']}, {run.flags['methods'][0]})",
          claim_spec.Side(run.name, batch, run.flags["methods"][1], "FedVC on"),
          claim_spec.Side(run.name, batch, run.flags["methods"][0], "FedVC off"))
      for run in runs)
  return _preset(
      "hsu2020_table2",
      "Acc@Round 1k/2.5k/5k and Acc@Batch 10k/25k/50k of FedAvg and FedAvgM "
      "with and without FedVC on iNaturalist Geo-3k and User-120k, C = 10.",
      runs + [baseline], table, src.REALWORLD_SOURCES, {
          "dataset": src.H + "§6.3: \"evaluate its efficacy using iNaturalist "
                     "user and geo-location datasets\"",
          "inat_split": src.H + "Table 2 rows \"Geo-3k\" and \"User-120k\"",
          "methods": src.H + "§6.3: \"We apply the Virtual Clients scheme (FedVC) "
                     "to both FedAvg and FedAvgM\" (Table 2: FedVC ✗/✓); "
                     "FedVC off and on of one algorithm share a run",
          "clients_per_round": src.H + "§6.3: \"In the experiments, 10 clients "
                               "are selected for every federated round.\"",
          "total_rounds": src.OURS + "the paper does not state the run "
                          "length; Acc@Batch 50k with FedVC (N_VC/B = 4 "
                          "batches a round) needs 12,500 rounds, and both "
                          "methods of a run train as long (a plain round "
                          "takes the largest selected client's batches, §6.3; "
                          "a method that does not reach 50k batches shows "
                          "n/a)",
          "rounds_per_eval": src.OURS + "every 50 rounds: the Acc@Batch "
                             "budgets fall between evaluations for the plain "
                             "methods"}, _NESTEROV, src.CENTRAL_SOURCES,
      comparisons=comparisons, figures=(figs.figure6(runs, baseline.name),))


def table3() -> spec.Preset:
  """Table 3 (§6.4.1): FedIR off/on x FedAvg/FedAvgM x C, FedVC on."""
  baseline = c.inat_centralized(True)
  runs, by_row, rows, cells = [], {}, [], []
  for algorithm, label in _ALGORITHMS:
    for clients in (10, 100):
      # FedIR off and on of one algorithm and C: one run, same client draws.
      off, on = (_method(algorithm, "fedvc"),
                 _method(algorithm, "fedir", "fedvc"))
      run = _inat_run("User-120k", (off, on), clients, 5000, 250,
                      "fedvc_fedir_off_on")
      runs.append(run)
      for fedir in (False, True):
        by_row[pub.table3_row(label, fedir, clients)] = (run, on if fedir
                                                         else off)
  for label, fedir, clients, _ in pub.TABLE3:
    row = pub.table3_row(label, fedir, clients)
    rows.append(row)
    run, method = by_row[row]
    cells += [spec.CellSpec(row, col, run.name,
                            spec.Metric(spec.ACC_AT_ROUND, n), method,
                            baseline.name)
              for col, n in zip(pub.TABLE3_COLUMNS, pub.ACC_ROUNDS)]
  _centralized_row(rows, cells, baseline, pub.TABLE3_COLUMNS[0])
  table = spec.TableSpec((PAPER, "table3"), "Table 3: iNaturalist-User-120k "
                         "benchmark (FedVC on)", tuple(rows),
                         pub.TABLE3_COLUMNS, tuple(cells))
  return _preset(
      "hsu2020_table3",
      "FedIR off/on for FedAvg and FedAvgM with FedVC on iNaturalist-User-120k,"
      " C in {10, 100}: Acc@Round 1k/2.5k/5k.",
      runs + [baseline], table, src.REALWORLD_SOURCES, {
          "dataset": src.H + "§6.4.1: \"The iNaturalist-User-120k data has "
                     "9,275 clients and 120k examples, containing 1,203 "
                     "species classes.\"",
          "inat_split": src.H + "§6.4.1 / Table 3 (iNaturalist-User-120k): "
                        "\"A summary of the benchmark results is shown in "
                        "Table 3.\"",
          "methods": src.H + "Table 3 rows: FedAvg and FedAvgM, FedVC ✓, FedIR "
                     "✗/✓ (§6.2: \"We evaluate FedIR with both FedAvg and "
                     "FedAvgM\"); FedIR off and on share a run",
          "clients_per_round": src.H + "§6.4.1: \"We use report goals {10, 100}."
                               "\"",
          "total_rounds": src.OURS + "the paper does not state the run "
                          "length; Table 3's last column is Acc@Round 5k",
          "rounds_per_eval": src.OURS + "every 250 rounds: 1k, 2.5k and 5k "
                             "are evaluations"}, _NESTEROV,
      src.CENTRAL_SOURCES, figures=(figs.figure7({
          f"C = {k}": ([r for r in runs if r.flags["clients_per_round"] == k],
                       baseline.name) for k in (10, 100)}),))


def table4() -> spec.Preset:
  """Table 4 (§6.4.2): FedIR off/on x FedAvg/FedAvgM x C x layers."""
  baselines = {True: c.landmarks_centralized(True),
               False: c.landmarks_centralized(False)}
  runs, by_cell = [], {}
  for two_layers in (True, False):
    layers = pub.LAYERS[0 if two_layers else 1]
    for algorithm, label in _ALGORITHMS:
      for clients in (10, 50, 100):
        methods = (_method(algorithm), _method(algorithm, "fedir"))
        flags = dict(c.REALWORLD_TRAINING, **c.LANDMARKS_MODEL,
                     **_flags_for(methods))
        flags.update(dataset="landmarks", clients_per_round=clients,
                     total_rounds=5000, rounds_per_eval=250,
                     rounds_per_checkpoint=250)
        if two_layers:
          flags["trainable_last_layers"] = 2
        run = c.federated(
            f"landmarks_{algorithm}_c{clients}_fedir_off_on_"
            f"{layers.lower().replace(' ', '_')}_r5000",
            c.LANDMARKS_DATA + c.PRETRAINED,
            c.LANDMARKS_REQUIRED + (c.PRETRAINED,), **flags)
        runs.append(run)
        for fedir in (False, True):
          by_cell[(pub.table4_row(label, fedir, clients), layers)] = (
              run, methods[fedir], baselines[two_layers])
  rows, cells = [], []
  for label, fedir, clients, _ in pub.TABLE4:
    row = pub.table4_row(label, fedir, clients)
    rows.append(row)
    for i, col in enumerate(pub.TABLE4_COLUMNS):
      run, method, base = by_cell[(row, pub.LAYERS[i // 3])]
      cells.append(spec.CellSpec(
          row, col, run.name, spec.Metric(spec.ACC_AT_ROUND,
                                          pub.ACC_ROUNDS[i % 3]),
          method, base.name))
  for i, two_layers in enumerate((True, False)):
    _centralized_row(rows, cells, baselines[two_layers],
                     pub.TABLE4_COLUMNS[3 * i])
  table = spec.TableSpec((PAPER, "table4"), "Table 4: Landmarks-User-160k "
                         "benchmark", tuple(rows), pub.TABLE4_COLUMNS,
                         tuple(cells))
  round5k = spec.Metric(spec.ACC_AT_ROUND, pub.ACC_ROUNDS[-1])
  comparisons = []
  for two_layers in (True, False):
    mode = "two_layers" if two_layers else "all_layers"
    for clients in (10, 50, 100):
      name = (f"landmarks_{{}}_c{clients}_fedir_off_on_{mode}_r5000").format
      comparisons.append(claim_spec.Comparison(
          f"fedavgm_vs_fedavg_c{clients}_{mode}", src.H + "§6.4.2: \"While "
          "FedAvgM gives the most significant improvements in all runs\" "
          f"(Acc@Round 5k, C = {clients}, {mode.replace('_', ' ')})",
          claim_spec.Side(name("fedavgm"), round5k, _method("fedavgm"),
                          "FedAvgM"),
          claim_spec.Side(name("fedavg"), round5k, "fedavg", "FedAvg")))
    for algorithm in ("fedavg", "fedavgm"):
      run = f"landmarks_{algorithm}_c10_fedir_off_on_{mode}_r5000"
      comparisons.append(claim_spec.Comparison(
          f"fedir_vs_off_{algorithm}_c10_{mode}", src.H + "§6.4.2: \"FedIR "
          "further improves the convergence speed and accuracy especially "
          "when the report goal is small\" (Acc@Round 5k, C = 10, "
          f"{algorithm}, {mode.replace('_', ' ')})",
          claim_spec.Side(run, round5k, _method(algorithm, "fedir"),
                          "FedIR on"),
          claim_spec.Side(run, round5k, _method(algorithm), "FedIR off")))
  return _preset(
      "hsu2020_table4",
      "FedIR off/on for FedAvg and FedAvgM on Landmarks-User-160k, C in "
      "{10, 50, 100}, training the last two layers or all layers: Acc@Round "
      "1k/2.5k/5k.",
      runs + list(baselines.values()), table, src.REALWORLD_SOURCES, {
          "dataset": src.H + "§6.4.2: \"The Landmarks-User-160k dataset "
                     "comprises 164,172 images for 2,028 landmarks, divided "
                     "among 1,262 clients.\"",
          "methods": src.H + "§6.2: \"We evaluate FedIR with both FedAvg and "
                     "FedAvgM on both two datasets with natural user splits\""
                     " (Table 4: FedIR ✗/✓, no FedVC column); FedIR off and "
                     "on share a run",
          "clients_per_round": src.H + "§6.4.2: \"Report goal {10, 50, 100} are "
                               "used.\"",
          "total_rounds": src.OURS + "the paper does not state the run "
                          "length; Table 4's last columns are Acc@Round 5k",
          "rounds_per_eval": src.OURS + "every 250 rounds: 1k, 2.5k and 5k "
                             "are evaluations"}, _NESTEROV,
      src.CENTRAL_SOURCES,
      comparisons=comparisons, figures=(figs.figure5({
          f"{pub.LAYERS[0 if two else 1]}, C = {k}": (
              [r for r in runs if r.flags["clients_per_round"] == k and
               ("trainable_last_layers" in r.flags) == two],
              baselines[two].name)
          for two in (True, False) for k in (10, 50, 100)}),))


# Table 5's FedVC, inferred from the paper's numbers (it prints no FedVC
# column): with FedVC off, FedAvg on Geo-3k at C = 10 never passes 48.7%
# by 5k rounds (Table 2), yet Table 5 has it at 90% of the centralized
# 57.90% (52.1%) after 4,912 rounds; Table 2's FedVC-on row (52.8% at 5k)
# fits.
_TABLE5_FEDVC = (
    src.H + "Appendix A.2: \"with a combination of settings including the FL "
    "algorithm (FedAvg/FedAvgM) and report goal\" (Table 5 prints no FedVC "
    "column). FedVC on is inferred from the paper's numbers: Table 2's "
    "Geo-3k, FedAvg, FedVC ✗, C = 10 row prints Acc@Round 1k / 2.5k / 5k "
    "\"47.0\", \"47.9\", \"48.7\": never past 48.7% by 5k rounds, yet "
    "Table 5's \"4912 (29.8)\" has FedAvg, pretrained, C = 10 at 90% of "
    "Table 1's centralized \"57.90%\" (52.1%) after 4,912 rounds; Table "
    "2's FedVC ✓ row (\"52.8\" at 5k) fits. The other rows use FedVC too "
    "(ours: one algorithm per table, as Tables 2-3 on iNaturalist)")


def table5() -> spec.Preset:
  """Table 5 (Appendix A.2): rounds to relative accuracy, pretrained vs
  scratch, FedAvg/FedAvgM x C on Geo-3k, FedVC on (`_TABLE5_FEDVC`)."""
  baselines = {p: c.inat_centralized(p) for p in (True, False)}
  runs, rows, cells, curves = [], [], [], []
  for label, init, clients, _ in pub.TABLE5:  # One run per row.
    algorithm = dict((b, a) for a, b in _ALGORITHMS)[label]
    method = _method(algorithm, "fedvc")
    pretrained = init == "pretrained"
    run = _inat_run("Geo-3k", (method,), clients, pub.TABLE5_BUDGET[clients],
                    50, tag="fedvc", pretrained=pretrained)
    runs.append(run)
    row = pub.table5_row(label, init, clients)
    rows.append(row)
    curves.append((row, run, baselines[pretrained].name))
    cells += [spec.CellSpec(row, col, run.name,
                            spec.Metric(spec.ROUNDS_TO_RELATIVE, f), method,
                            baselines[pretrained].name,
                            ratio_to=pub.TABLE5_COLUMNS[0])
              for col, f in zip(pub.TABLE5_COLUMNS, pub.RELATIVE)]
  table = spec.TableSpec((PAPER, "table5"), "Table 5: rounds to relative "
                         "accuracy on iNaturalist-Geo-3k (ratio to the 10% "
                         "column; FedVC on)", tuple(rows), pub.TABLE5_COLUMNS,
                         tuple(cells))
  return _preset(
      "hsu2020_table5",
      "Rounds to 10/50/90% of the centralized accuracy, ImageNet-pretrained "
      "vs from scratch, FedAvg and FedAvgM with FedVC, C in {10, 100}, on "
      "iNaturalist-Geo-3k; each row's target is its own centralized run "
      "(pretrained or scratch).",
      runs + list(baselines.values()), table, src.REALWORLD_SOURCES, {
          "dataset": src.H + "Appendix A.2: \"We perform experiments using "
                     "iNaturalist-Geo-3k\"",
          "inat_split": src.H + "Appendix A.2: \"iNaturalist-Geo-3k\"",
          "methods": _TABLE5_FEDVC,
          "clients_per_round": src.H + "Table 5 rows: C \"10\" and \"100\" "
                               "(Appendix A.2: \"... the FL algorithm "
                               "(FedAvg/FedAvgM) and report goal\")",
          "total_rounds": src.H + "Table 5 prints \"50k\" (C = 10) and \"20k\" "
                          "(C = 100) where a target was not reached: the "
                          "runs' budgets (the pretrained rows get the same "
                          "budget: ours)",
          "rounds_per_eval": src.OURS + "every 50 rounds; rounds to a target "
                             "are interpolated between evaluations "
                             "(McMahan et al.'s convention)"},
      _NESTEROV, src.CENTRAL_SOURCES, figures=(figs.figure9(curves),))


PRESETS = (table1, table2, table3, table4, table5, cifar.figure4,
           cifar.appendix_a)
