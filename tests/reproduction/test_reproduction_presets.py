"""Presets: every table/figure the issue lists, complete runs, valid flags.

No training: flags are checked against experiments/flags_lib.py's DEFINE_*
names (parsed with ast) and, for runs on today's data sets, parsed into absl
FLAGS and validated by flags_lib.validate with stand-in data files.
"""

import ast
import os

import pytest

from conftest import REPO
from federated_vision.experiment import config as config_lib
from experiments import flags_lib
from federated_vision import config_fields
from federated_vision import tasks
from federated_vision.errors import ConfigError
from federated_vision.experiment import sweeps
from federated_vision.experiment import fields_read
from federated_vision.reproduction import presets
from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import _common

EXPECTED = (
    "hsu2020_table1", "hsu2020_table2", "hsu2020_table3", "hsu2020_table4",
    "hsu2020_table5", "hsu2020_figure4", "hsu2020_appendix_a",
    "hsu2019_cifar10_alpha", "hsu2019_sensitivity", "mcmahan2017_table1",
    "mcmahan2017_table2", "mcmahan2017_table4", "mcmahan2017_table1_lr_grid",
    "mcmahan2017_table2_lr_grid", "mcmahan2017_table4_lr_grid",
    "mcmahan2017_table3", "mcmahan2017_table3_lr_grid", "mcmahan2017_figure4",
    "mcmahan2017_figure9", "mcmahan2017_slides", "mcmahan2017_figure1",
    "mcmahan2017_figure3",
    "augenstein_figure1",
    "digits_claims",
    "digits_effective_lr", "shakespeare_claims")
# Runs that are another run at another learning rate (`lr_grid`): a grid
# member other than its base run, which spec.Preset checks equal to the
# base but for --client_learning_rate.
GRID_MEMBERS = frozenset(
    m for name in EXPECTED
    for base, members in presets.get_preset(name).lr_grids.items()
    for m in members if m != base)
# McMahan 2017 Table 3 (3 runs), Figure 9 (4 more: SGD at B = 50, FedAvg
# C in {0, 0.1} x E in {1, 5} but Table 3's), the slides (4) and Figure 1
# (1: two 2NNs averaged, an averaging run).
MCMAHAN_CIFAR_AND_SLIDES_RUNS = 3 + 4 + 4 + 1
# Issue 34: McMahan Table 2's Shakespeare LSTM rows (6 (E, B) x 2 splits),
# Figure 3's large-E runs (E in {10, 20, 50}; E = 1, 5 are Table 2's) and
# shakespeare_claims (4); the LSTM rows' learning-rate grid: 12 x 12 more.
SHAKESPEARE_RUNS = 12 + 3 + 4
SHAKESPEARE_GRID_MEMBERS = 12 * 12


def defined_flag_names():
  """Names of every flags.DEFINE_*("name", ...) in flags_lib.FLAG_MODULES,
  and of every generated flag."""
  names = set()
  nodes = []
  for module in flags_lib.FLAG_MODULES:
    path = os.path.join(REPO, *module.split(".")) + ".py"
    with open(path) as f:
      nodes.extend(ast.walk(ast.parse(f.read())))
  for node in nodes:
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr.startswith("DEFINE_") and node.args
        and isinstance(node.args[0], ast.Constant)):
      names.add(node.args[0].value)
  # Plus the flags generated from the fields tasks and variants declare
  # (experiments.flags_lib; e.g. --celeba_cache_dir).
  return names | set(config_fields.field_names())


FLAG_NAMES = defined_flag_names()


def test_flag_names_parsed():
  assert {"dataset", "algorithm", "client_fraction", "virtual_client_size",
          "trainable_last_layers", "inat_split"} <= FLAG_NAMES
  flags_lib.define_flags()
  from absl import flags  # pylint: disable=g-import-not-at-top
  assert len(FLAG_NAMES) > 40 and FLAG_NAMES <= set(flags.FLAGS)
  assert {"mixing", "missing_classes", "celeba_cache_dir"} <= FLAG_NAMES


def test_registry_names_and_unknown_name():
  assert presets.preset_names() == EXPECTED
  with pytest.raises(KeyError, match="no preset 'table9'.*hsu2020_table3"):
    presets.get_preset("table9")


@pytest.mark.parametrize("name", EXPECTED)
def test_runs_use_known_flags_and_are_all_used(name):
  p = presets.get_preset(name)
  assert p.runs and p.description and p.paper
  used = set()
  for t in p.tables:
    for c in t.cells:
      used.add(c.run)
      used.update(x for x in (c.baseline,) if x)
      if c.speedup_reference:
        used.add(c.speedup_reference[0])
    # Every (row, column) of a layout is filled (but a "Centralized" row
    # Hsu 2020 prints with one number per table or layer mode).
    assert {(c.row, c.column) for c in t.cells
            if c.row != "Centralized"} == {
        (r, col) for r in t.rows for col in t.columns if r != "Centralized"}
  for s in p.studies:
    used.update(s.runs + ((s.baseline,) if s.baseline else ()))
  for f in p.figures:  # McMahan Figure 1's run: its figure alone reads it.
    used.update(r for r in f.runs() if p.run(r).kind == spec.AVERAGING)
  # A cell of a tuned run reads every rate of its learning-rate grid.
  used.update(m for base in list(used) for m in p.lr_grids.get(base, ()))
  assert used == {r.name for r in p.runs}
  for run in p.runs:
    if run.kind == spec.AVERAGING:  # Not train_main: what it reads, only.
      assert set(run.flags) == spec.AVERAGING_FLAGS <= FLAG_NAMES
      assert set(run.data_flags) <= FLAG_NAMES, run.name
      continue
    unknown = set(run.flags) - FLAG_NAMES
    assert not unknown, (run.name, unknown)
    assert set(run.data_flags) <= FLAG_NAMES, run.name
    assert not set(run.data_flags) & set(run.flags), run.name
    # E and B except on FedSGD-only runs, which read neither (E = 1,
    # B = inf by definition; test_every_preset_run_sets_only_settings_it_reads).
    fedsgd_only = run.flags.get("algorithm") == ("fedsgd",)
    for required in ("dataset", "total_rounds", "seed",
                     "client_epochs", "client_batch_size",
                     "client_learning_rate", "centralized_epochs"):
      if fedsgd_only and required in ("client_epochs", "client_batch_size"):
        assert required not in run.flags, (run.name, required)
        continue
      assert required in run.flags, (run.name, required)
    # The methods: an explicit list or the shorthands, never both.
    assert ("algorithm" in run.flags) != ("methods" in run.flags), run.name
    assert (run.kind == spec.CENTRALIZED) == (run.flags["centralized_epochs"] > 0)


def test_one_name_one_config_across_presets():
  runs = presets.all_runs()
  # 551 + 384 (Appendix A on CIFAR-100) + 8 (beta = 0) + 8 (Hsu 2020 Tables
  # 1-5: every row of the paper) = 951; issue 28: Figure 4's report goals
  # (+48), Hsu 2019's E = 5 (+32), the sensitivity study's four panels
  # (+144), McMahan Table 4 (+14: 4 runs are Table 1's).
  # McMahan's Table 3, Figure 9 and slides (+11); the learning-rate grids
  # (Tables 1, 2, 4 and 3 at 13 rates: 12 more runs per tuned run, shared
  # runs once: 480 + 168 + 168 + 36).
  assert len(runs) == (951 + 48 + 32 + 144 + 14
                       + MCMAHAN_CIFAR_AND_SLIDES_RUNS + 480 + 168 + 168 + 36
                       + SHAKESPEARE_RUNS + SHAKESPEARE_GRID_MEMBERS)
  assert len(GRID_MEMBERS) == (480 + 168 + 168 + 36
                               + SHAKESPEARE_GRID_MEMBERS)
  assert runs["central_cifar10"].kind == spec.CENTRALIZED


@pytest.mark.parametrize("name", EXPECTED)
def test_describe_lists_every_run_of_every_preset(name):
  p = presets.get_preset(name)
  lines = presets.describe(p).splitlines()
  assert lines[0].startswith(f"preset {name}: {len(p.runs)} runs (")
  assert len(lines) == 1 + len(p.runs)
  for run, line in zip(p.runs, lines[1:]):
    flags = line.split(": ", 1)[1].split("  [data: ")[0].split(" ")
    assert line.startswith(f"  {run.kind} {run.name}: ")
    assert [f.split("=", 1)[0] for f in flags] == [
        f"--{k}" for k in sorted(run.flags)]


def test_describe_lists_every_run_with_its_full_config():
  p = presets.get_preset("hsu2020_table5")
  text = presets.describe(p)
  lines = text.splitlines()
  assert lines[0].startswith("preset hsu2020_table5: 10 runs")
  assert len(lines) == 1 + len(p.runs)
  for run, line in zip(p.runs, lines[1:]):
    assert f" {run.name}: " in line
    for k in run.flags:
      assert f"--{k}=" in line
  scratch = next(l for l in lines if "c10_fedvc_scratch_r50000:" in l)
  assert "pretrained_weights" not in scratch
  assert "split_csv*" in scratch and "image_paths_csv," in scratch
  pretrained = next(l for l in lines if "fedavg_c10_fedvc_r50000:" in l)
  assert "pretrained_weights*" in pretrained


def _flags(run):
  return run.flags


def test_hsu2020_table2_layout():
  p = presets.get_preset("hsu2020_table2")
  (t,) = p.tables
  assert t.columns == ("Acc@Round 1k", "Acc@Round 2.5k", "Acc@Round 5k",
                       "Acc@Batch 10k", "Acc@Batch 25k", "Acc@Batch 50k")
  assert len(t.rows) == 8 + 1 and t.rows[2] == "Geo-3k, FedAvg, FedVC ✓, C = 10"
  args = [c.metric.arg for c in t.cells[:6]]
  assert args == [1000, 2500, 5000, 10000, 25000, 50000]
  for run in p.runs[:-1]:
    f = run.flags
    assert (f["dataset"], f["clients_per_round"], f["client_batch_size"],
            f["client_learning_rate"]) == ("inaturalist", 10, 64, 0.01)
    assert f["inat_split"] in ("geo_3k", "user_120k")
    # FedVC off and on of one algorithm: one run, 12,500 rounds (FedAvgM
    # with Nesterov momentum).
    assert f["methods"] in (("fedavg", "fedavg+fedvc"),
                            ("fedavgm@nesterov", "fedavgm+fedvc@nesterov"))
    assert f["virtual_client_size"] == 256 and f["total_rounds"] == 12_500
    assert ("server_momentum" in f) == (f["methods"][0] == "fedavgm@nesterov")
  assert p.runs[-1].name == "central_inat_pretrained"


def test_hsu2020_tables_3_4_5_layouts():
  t3 = presets.get_preset("hsu2020_table3")
  assert [r.flags["clients_per_round"] for r in t3.runs[:4]] == [10, 100] * 2
  assert {c.method for c in t3.tables[0].cells} == {
      "fedavg+fedvc", "fedavg+fedir+fedvc", "fedavgm+fedvc@nesterov",
      "fedavgm+fedir+fedvc@nesterov", None}
  t4 = presets.get_preset("hsu2020_table4")
  (table,) = t4.tables
  assert len(table.rows) == 12 + 1
  assert table.rows[0] == "FedAvg, FedIR ✗, C = 10"
  for run in t4.runs[:12]:
    assert run.flags["client_batch_size"] == 32
    assert run.flags.get("trainable_last_layers") == (
        2 if "two_layers" in run.name else None)
  assert {r.flags["clients_per_round"] for r in t4.runs[:12]} == {10, 50, 100}
  base = {(c.row, c.column): c.baseline for c in table.cells}
  assert base[("FedAvgM, FedIR ✓, C = 50", "Two layers, Acc@Round 1k")] == (
      "central_landmarks_two_layers")
  assert base[("FedAvgM, FedIR ✓, C = 50", "All layers, Acc@Round 5k")] == (
      "central_landmarks_all_layers")
  t5 = presets.get_preset("hsu2020_table5")
  (table,) = t5.tables
  assert table.columns == ("Rounds@10% relative accuracy",
                           "Rounds@50% relative accuracy",
                           "Rounds@90% relative accuracy")
  cells = {(c.row, c.column): c for c in table.cells}
  c = cells[("Geo-3k, FedAvg, scratch, C = 100",
             "Rounds@90% relative accuracy")]
  assert (c.metric.kind, c.metric.arg, c.baseline) == (
      spec.ROUNDS_TO_RELATIVE, 0.9, "central_inat_scratch")
  scratch = t5.run(c.run)
  assert scratch.flags["inat_split"] == "geo_3k"
  assert scratch.flags["total_rounds"] == 20_000
  assert "pretrained_weights" not in scratch.data_flags


def test_hsu2019_alpha_preset_matches_the_sweep_grid():
  """The sweep is the preset's C = 10, E = 1 panel (the preset adds the
  report goals C and the epochs E of its sources)."""
  p = presets.get_preset("hsu2019_cifar10_alpha")
  sweep = sweeps.SWEEPS["hsu2019_cifar10"]
  fed = [r for r in p.runs if r.kind == spec.FEDERATED]
  assert {(r.flags["clients_per_round"], r.flags["client_epochs"])
          for r in fed} == {(k, e) for k in (5, 10, 20, 40) for e in (1, 5)}
  fed = [r for r in fed if r.flags["clients_per_round"] == 10
         and r.flags["client_epochs"] == 1]
  assert [r.flags["alpha"] for r in fed] == list(sweeps.HSU2019_CIFAR10_ALPHAS)
  for run in fed:
    for k, v in sweep.base.items():
      assert run.flags[k] == v, (run.name, k)
    # One run trains both of the sweep's methods (its points: one each).
    assert run.flags["methods"] == tuple(
        sweeps.HSU2019_METHODS[a] for a in sweeps.HSU2019_ALGORITHMS)
    points = [p for p in sweep.points if p.flags["alpha"] ==
              run.flags["alpha"]]
    assert tuple(m for p in points for m in p.flags["methods"]) == (
        run.methods())
  assert _common.CIFAR100_ALPHAS == sweeps.HSU2019_CIFAR100_ALPHAS


def test_mcmahan_presets():
  t1 = presets.get_preset("mcmahan2017_table1")
  assert len(t1.runs) == 2 * 2 * 2 * 5
  cells = {(t.key[1], c.row, c.column): c for t in t1.tables for c in t.cells}
  c = cells[("table1_cnn", "C = 0.5", "non-IID, B = 10")]
  run = t1.run(c.run)
  assert (run.flags["model"], run.flags["partition"], run.flags["client_fraction"],
          run.flags["client_epochs"], run.flags["client_batch_size"]) == (
              "mnist_cnn", "shards", 0.5, 5, 10)
  assert "examples_per_client" not in run.flags
  assert c.metric.arg == 0.99 and c.speedup_reference == (
      "mnist_cnn_shards_C0_E5_B10", "fedavg")
  c2 = cells[("table1_2nn", "C = 1.0", "IID, B = ∞")]
  # 2NN, E = 1, B = inf is FedSGD: it reads no E or B (B = inf by definition).
  assert t1.run(c2.run).flags["algorithm"] == ("fedsgd",)
  assert "client_batch_size" not in t1.run(c2.run).flags
  assert c2.metric.arg == 0.97
  t2 = presets.get_preset("mcmahan2017_table2")
  table = t2.tables[0]  # The MNIST CNN's rows (then the LSTM's).
  cells = {(c.row, c.column): c for c in table.cells}
  fedsgd = t2.run(cells[("FedSGD E=1 B=∞", "IID")].run)
  assert (fedsgd.flags["algorithm"], fedsgd.flags["client_fraction"]) == (
      ("fedsgd",), 0.1)
  assert not {"client_epochs", "client_batch_size"} & set(fedsgd.flags)
  assert all(c.speedup_reference[0] == (fedsgd.name if c.column == "IID" else
                                        fedsgd.name.replace("iid", "shards"))
             for c in table.cells)
  # Table 1's CNN C = 0.1 E = 5 runs are Table 2's: one run, one result.
  assert "mnist_cnn_iid_C0.1_E5_B10" in {r.name for r in t1.runs} & {
      r.name for r in t2.runs}


def test_augenstein_and_digits_claims_mixing_runs():
  strategies = ["none", "parallel", "example_transfer", "gradient_transfer",
                "oracle"]
  p = presets.get_preset("augenstein_figure1")
  assert [tuple(r.flags["mixing"]) for r in p.runs] == [
      (s,) for s in strategies]
  assert {r.flags["dataset"] for r in p.runs} == {"celeba"}
  assert {r.required_data_flags for r in p.runs} == {(("celeba_cache_dir",),)}
  # Cells read the runner's method name `<algorithm>+<strategy>`.
  (table,) = p.tables
  assert {(c.run, c.method) for c in table.cells} == {
      (f"celeba_mixing_{s}", f"fedavg+{s}") for s in strategies}
  d = presets.get_preset("digits_claims")
  mixing = [r for r in d.runs if "mixing" in r.flags]
  assert len(mixing) == 5 and {r.flags["missing_classes"] for r in mixing} == {
      "8,9"}
  # The mixing issue's acceptance settings (docs/algorithms.md "Mixing").
  # Each run sets only its own strategy's settings.
  assert {(r.flags["num_clients"], r.flags["clients_per_round"])
          for r in mixing} == {(10, 5)}
  own = {r.flags["mixing"][0]: {k: r.flags[k] for k in (
      "merge_weight", "central_steps", "central_examples_per_client",
      "gradient_weight") if k in r.flags} for r in mixing}
  assert own == {"none": {}, "oracle": {},
                 "parallel": {"merge_weight": 0.7, "central_steps": 6},
                 "example_transfer": {"central_examples_per_client": 20},
                 "gradient_transfer": {"gradient_weight": 0.25}}
  claim5 = [t for t in d.tables if t.key == ("digits", "claim5")][0]
  assert {c.method for c in claim5.cells} == {f"fedavg+{s}" for s in strategies}


def _unread(run, data_files):
  """Flags of `run` its experiment does not read (`federated_vision.experiment.fields_read`):
  reproduce passes them as values, not as given flags, and records none of
  them; given on a command line they are refused."""
  values = {k: v for k, v in run.flag_dict().items() if v is not None}
  values.update({g[0]: str(data_files[g[0]]) for g in run.required_data_flags})
  config = config_lib.replace_fields(config_lib.ExperimentConfig(), values)
  return set(run.flags) & set(fields_read.unused_fields(config))


def _argv(run, data_files, like=None):
  """`run`'s command line without the flags the preset run `like` (default
  `run`) carries and does not read."""
  unread = _unread(like or run, data_files)
  argv = []
  for k, v in sorted(run.flag_dict().items()):
    if v is None or k in unread:
      continue
    if isinstance(v, bool):
      argv.append(f"--{k}" if v else f"--no{k}")
    elif isinstance(v, list):
      argv.append(f"--{k}={','.join(map(str, v))}")
    else:
      argv.append(f"--{k}={v}")
  for group in run.required_data_flags:
    argv.append(f"--{group[0]}={data_files[group[0]]}")
  return argv


@pytest.fixture
def data_files(tmp_path):
  files = {}
  for name in ("split_csv", "test_csv", "pretrained_weights"):
    files[name] = tmp_path / name
    files[name].write_text("stand-in\n")
  for name in ("image_root", "celeba_cache_dir", "shakespeare_cache_dir"):
    files[name] = tmp_path / name
    files[name].mkdir()
  return files


def test_every_run_on_todays_data_sets_passes_config_validation(parse,
                                                             data_files):
  checked = 0
  for run in presets.all_runs().values():
    if run.name in GRID_MEMBERS:  # Its base run's config but for the rate.
      assert run.flags["client_learning_rate"] > 0, run.name
      continue
    assert run.flags["dataset"] in tasks.task_names(), run.name
    try:
      f = parse(*_argv(run, data_files))
      config_lib.from_flags(f)
    except Exception as e:  # pylint: disable=broad-except
      pytest.fail(f"{run.name}: {e}")
    checked += 1
  assert checked == (951 + 48 + 32 + 144 + 14 + MCMAHAN_CIFAR_AND_SLIDES_RUNS
                     + SHAKESPEARE_RUNS)


def test_validation_catches_a_bad_run(parse, data_files):
  good = presets.get_preset("mcmahan2017_table2").runs[0]
  bad = spec.Run(good.name, dict(good.flags, clients_per_round=10),
                 data_flags=good.data_flags)
  config_lib.from_flags(parse(*_argv(good, data_files)))
  with pytest.raises(ConfigError, match="--client_fraction and "
                     "--clients_per_round"):
    config_lib.from_flags(parse(*_argv(bad, data_files, like=good)))
  inat = presets.get_preset("hsu2020_table3").runs[0]
  with pytest.raises(ConfigError, match="--alpha: not used"):
    config_lib.from_flags(parse(*_argv(spec.Run(
        inat.name, dict(inat.flags, alpha=0.5), data_flags=inat.data_flags,
        required_data_flags=inat.required_data_flags), data_files,
        like=inat)))


def test_library_imports_no_tensorflow_absl_flags_or_experiments():
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  code = ("import sys\n"
          "from federated_vision.reproduction import claims, effective_lr, "
          "hparams, plan, presets, published, report, results, spec\n"
          "bad = [m for m in ('tensorflow', 'absl.flags', 'experiments') "
          "if m in sys.modules]\n"
          "assert not bad, bad\n")
  out = subprocess.run([sys.executable, "-c", code], cwd=REPO,
                       capture_output=True, text=True, check=False)
  assert out.returncode == 0, out.stderr


def test_every_preset_run_sets_only_settings_it_reads():
  """A preset run sets nothing its resolved experiment does not read
  (`federated_vision.experiment.fields_read`): no server momentum on FedAvg-only runs, no E or B
  for FedSGD, no weight decay for a model without one, no other strategy's
  mixing settings. Such a value would be shown by --dry_run and listed as
  the paper's setting while changing nothing."""
  from federated_vision.experiment import fields_read  # pylint: disable=g-import-not-at-top
  unread = {}
  for name, run in presets.all_runs().items():
    if name in GRID_MEMBERS:  # Its base run's settings but for the rate.
      continue
    config = config_lib.replace_fields(config_lib.ExperimentConfig(),
                                       run.flag_dict())
    unused = fields_read.unused_fields(config)
    for flag in run.flags:
      if flag in unused:
        unread[f"{name} --{flag}"] = unused[flag]
  assert unread == {}
  # The rule has teeth: FedAvgM's momentum on a FedAvg-only run is unread.
  config = config_lib.replace_fields(config_lib.ExperimentConfig(), {
      "algorithm": ["fedavg"], "server_momentum": 0.9})
  assert "server_momentum" in fields_read.unused_fields(config)
