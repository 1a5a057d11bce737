"""Sweep grids, sweep_main / report_main / train_main on synthetic data, flags.

Budget: three TFF binary runs (train_main smoke, a 2-point sweep, one bad-flag
exit); everything else runs in-process without TFF computations.
"""

import csv
import json
import math
import os

import pytest

from conftest import run_module
import in_process
from federated_vision.experiment import config as config_lib
from federated_vision.experiment import report_lib
from experiments import sweep_lib
from federated_vision.experiment import sweeps
from federated_vision import tasks
from federated_vision.errors import ConfigError
from federated_vision.evaluation import convergence
from federated_vision.training import run_files

TWO_POINTS = ("2nn_iid_C0.1_E1_Binf", "2nn_iid_C0.2_E1_B10")
SWEEP_ARGS = ("--sweep=mcmahan_mnist_grid", "--dataset=synthetic_mnist",
              "--num_clients=10", "--examples_per_client=20",
              "--total_rounds=2", "--rounds_per_eval=1", "--seed=1",
              f"--only={','.join(TWO_POINTS)}")




def test_hsu2019_grids_are_exact():
  c10 = sweeps.SWEEPS["hsu2019_cifar10"]
  c100 = sweeps.SWEEPS["hsu2019_cifar100"]
  assert sweeps.HSU2019_CIFAR10_ALPHAS == (100, 10, 1, 0.5, 0.2, 0.1, 0.05, 0)
  assert sweeps.HSU2019_CIFAR100_ALPHAS == (1000, 100, 10, 5, 2, 1, 0.5, 0)
  for sweep, alphas, dataset in ((c10, sweeps.HSU2019_CIFAR10_ALPHAS, "cifar10"),
                                 (c100, sweeps.HSU2019_CIFAR100_ALPHAS,
                                  "cifar100")):
    assert len(sweep.points) == 16
    assert sweep.base["dataset"] == dataset
    assert (sweep.base["num_clients"], sweep.base["examples_per_client"]) == (100, 500)
    # One method per point, by name: FedAvgM with Nesterov momentum (as
    # the Hsu presets), never the shorthand --algorithm.
    for method in ("fedavg", "fedavgm@nesterov"):
      pts = [p for p in sweep.points if p.flags["methods"] == [method]]
      assert [p.flags["alpha"] for p in pts] == list(alphas)
    assert "algorithm" not in sweep.base and not any(
        "algorithm" in p.flags for p in sweep.points)
  assert [p.name for p in c10.points[:8]] == [
      "fedavg_alpha_100", "fedavg_alpha_10", "fedavg_alpha_1",
      "fedavg_alpha_0.5", "fedavg_alpha_0.2", "fedavg_alpha_0.1",
      "fedavg_alpha_0.05", "fedavg_alpha_0"]
  assert c100.points[8].name == "fedavgm_alpha_1000"


def test_mcmahan_grid_is_the_full_product():
  grid = sweeps.SWEEPS["mcmahan_mnist_grid"]
  assert len(grid.points) == 2 * 2 * 5 * 3 * 3 == 180
  assert len({p.name for p in grid.points}) == 180
  seen = {(p.flags["model"], p.flags["partition"], p.flags["client_fraction"],
           p.flags["client_epochs"], p.flags["client_batch_size"])
          for p in grid.points}
  assert {s[2] for s in seen} == {0, 0.1, 0.2, 0.5, 1.0}
  assert {s[3] for s in seen} == {1, 5, 20}
  assert {s[4] for s in seen} == {0, 10, 50}
  assert {s[:2] for s in seen} == {("mnist_2nn", "iid"), ("mnist_2nn", "shards"),
                                   ("mnist_cnn", "iid"), ("mnist_cnn", "shards")}
  fedsgd = [p.name for p in grid.points
            if p.flags["client_batch_size"] == 0 and p.flags["client_epochs"] == 1]
  assert len(fedsgd) == 20 and "cnn_shards_C0.1_E1_Binf" in fedsgd
  targets = {p.flags["model"]: p.flags["target_accuracy"] for p in grid.points}
  assert targets == {"mnist_2nn": 0.97, "mnist_cnn": 0.99}


def _prepared_cifar10(tmp_path) -> str:
  """A tfds data_dir where cifar10 counts as prepared (`tasks.presence`);
  without one a point is listed as missing data
  (tests/experiments/test_dry_runs_and_refusals.py)."""
  info = tmp_path / "tfds" / "cifar10" / "3.0.2" / "dataset_info.json"
  info.parent.mkdir(parents=True)
  info.write_text("{}")
  return f"--data_dir={tmp_path / 'tfds'}"


def test_dry_run_lists_exactly_the_selected_points(parse, tmp_path, capsys):
  from experiments import sweep_main  # pylint: disable=g-import-not-at-top
  f = parse("--sweep=hsu2019_cifar10", f"--root_output_dir={tmp_path}",
            "--only=fedavgm_*", "--dry_run", _prepared_cifar10(tmp_path))
  sweep, exp_dir, rows = sweep_lib.plan(f)
  sweep_lib.print_plan(sweep, exp_dir, rows)
  out = capsys.readouterr().out.splitlines()
  assert out[0] == (f"sweep hsu2019_cifar10: 8 points, 0 done -> "
                    f"{tmp_path}/hsu2019_cifar10")
  listed = [l.split()[1] for l in out if l.startswith("  [todo]")]
  assert listed == [f"fedavgm_alpha_{a}" for a in
                    ("100", "10", "1", "0.5", "0.2", "0.1", "0.05", "0")]
  assert ("  [todo] fedavgm_alpha_0.05  --methods=fedavgm@nesterov "
          "--alpha=0.05 --server_momentum=0.9") in out
  assert "--dataset=cifar10" in out[1] and "--num_clients=100" in out[1]
  assert not (tmp_path / "hsu2019_cifar10").exists()  # Nothing written.
  assert f.alpha == 0.5 and f.dataset == "digits"  # Flags restored.


def test_a_point_holding_other_methods_is_refused_not_skipped(parse,
                                                              tmp_path):
  """A point directory finished with other methods (the heavy-ball
  `fedavgm` this point trained before it became fedavgm@nesterov) is
  another experiment: the plan refuses it in one line instead of skipping
  it as done; with the point's own methods it is done."""
  from experiments import sweep_main  # pylint: disable=g-import-not-at-top,unused-import
  out = tmp_path / "hsu2019_cifar10" / "fedavgm_alpha_0"
  out.mkdir(parents=True)
  summary = out / "summary.json"
  summary.write_text(json.dumps({"status": "completed",
                                 "methods": {"fedavgm": {}}}))
  f = parse("--sweep=hsu2019_cifar10", f"--root_output_dir={tmp_path}",
            "--only=fedavgm_alpha_0", "--dry_run", _prepared_cifar10(tmp_path))
  with pytest.raises(run_files.RunFileError) as e:
    sweep_lib.plan(f)
  assert str(e.value) == (
      f"{summary}: it holds the methods fedavgm, the point trains "
      "fedavgm@nesterov; move the point's directory away (or use another "
      "--root_output_dir) to run it")
  summary.write_text(json.dumps({"status": "completed",
                                 "methods": {"fedavgm@nesterov": {}}}))
  _, _, rows = sweep_lib.plan(f)
  assert [(pt.name, status) for pt, _, _, status in rows] == [
      ("fedavgm_alpha_0", "completed")]


@pytest.mark.parametrize("args, message", [
    (["--dataset=cifar10", "--data_source=archive"],
     "--data_source=archive needs --archive_path"),
    (["--dataset=cifar10", "--data_source=zip"],
     "--data_source=zip: must be one of tfds, archive"),
    (["--dataset=mnist", "--partition=pathological"],
     "--partition=pathological: must be one of dirichlet, iid, shards"),
    (["--dataset=mnist", "--model=cifar_cnn"],
     "--model=cifar_cnn: does not fit --dataset=mnist; use one of mnist_2nn, mnist_cnn"),
    (["--model=resnet"], "--model=resnet: must be one of digits_cnn"),
    (["--dataset=cifar10", "--data_dir=/no/such/dir"], "--data_dir=/no/such/dir"),
    (["--client_fraction=0.1", "--clients_per_round=5"],
     "--client_fraction and --clients_per_round: give only one"),
    (["--client_fraction=1.5"], "--client_fraction=1.5: must be in [0, 1]"),
    (["--target_accuracy=2"], "--target_accuracy=2.0: must be in (0, 1]"),
    (["--dataset=mnist", "--partition=shards", "--examples_per_client=30"],
     "--examples_per_client=30: not used by --partition=shards"),
    (["--dataset=mnist", "--split_csv=/no/such.csv"],
     "--split_csv=/no/such.csv: no such file"),
    (["--dataset=synthetic_mnist", "--model=mnist_2nn", "--weight_decay=0.1"],
     "--weight_decay=0.1: --model=mnist_2nn has no weight decay"),
])
def test_bad_flags_raise_one_clear_flag_error(parse, args, message):
  with pytest.raises(ConfigError) as e:
    config_lib.from_flags(parse(*args))
  assert message in str(e.value)
  assert "\n" not in str(e.value)


def test_sweep_rejects_axis_flags_and_foreign_datasets(parse, tmp_path):
  from experiments import sweep_main  # pylint: disable=g-import-not-at-top
  for args, message in [
      (["--sweep=hsu2019_cifar10", "--alpha=3"], "--alpha: set by the points"),
      (["--sweep=hsu2019_cifar10", "--dataset=mnist"],
       "--dataset=mnist: --sweep=hsu2019_cifar10 runs on cifar10 or "
       "synthetic_cifar10"),
      (["--sweep=mcmahan_mnist_grid", "--clients_per_round=3"],
       "--clients_per_round: set by the points"),
      (["--sweep=mcmahan_mnist_grid", "--only=nope*"],
       "--only=nope*: 'nope*' matches no point"),
      (["--sweep=nope"], "--sweep=nope: must be one of hsu2019_cifar10"),
      # The points name their methods (--methods): its shorthands too are
      # theirs, refused on the command line like any axis.
      (["--sweep=hsu2019_cifar10", "--fedir"], "--fedir: set by the points"),
      (["--sweep=hsu2019_cifar10", "--only=fedavg_*",
        "--algorithm=fedavgm"], "--algorithm: set by the points"),
      (["--sweep=hsu2019_cifar10", "--methods=fedavgm"],
       "--methods: set by the points"),
  ]:
    with pytest.raises(ConfigError) as e:
      sweep_lib.plan(parse(f"--root_output_dir={tmp_path}", *args))
    assert message in str(e.value), args


def _build_data(config, tmp_path):
  return tasks.get_task(config.data.dataset).build_data(
      config.data, tasks.DataContext(0, str(tmp_path), str(tmp_path)))


def test_missing_data_names_the_flag_and_dir(parse, tmp_path):
  f = parse("--dataset=cifar10", f"--data_dir={tmp_path}")
  config = config_lib.from_flags(f)
  with pytest.raises(ConfigError) as e:
    _build_data(config, tmp_path)
  assert str(e.value).startswith(f"--data_dir={tmp_path}: tensorflow-datasets "
                                 "'cifar10' is not prepared there")
  f = parse("--dataset=mnist", "--data_source=archive",
            f"--archive_path={tmp_path}")
  config = config_lib.from_flags(f)
  with pytest.raises(ConfigError) as e:
    _build_data(config, tmp_path)
  assert str(e.value).startswith(f"--archive_path={tmp_path}: cannot read mnist")


def test_client_fraction_sets_clients_per_round(parse):
  for c, k, m in ((0.1, 100, 10), (0.0, 100, 1), (1.0, 20, 20), (0.05, 50, 3)):
    f = parse("--dataset=mnist", f"--client_fraction={c}", f"--num_clients={k}")
    assert config_lib.resolve(config_lib.from_flags(f))["clients_per_round"] == m
  f = parse("--dataset=cifar10")
  assert config_lib.resolve(config_lib.from_flags(f))["model"] == "cifar_cnn"
  assert config_lib.resolve(config_lib.from_flags(f))["examples_per_client"] == 500


def test_bad_flag_exits_nonzero_with_one_line(tmp_path):
  proc = run_module("experiments.sweep_main", "--sweep=hsu2019_cifar10",
                    "--alpha=2", f"--root_output_dir={tmp_path}", timeout=120)
  assert proc.returncode == 2
  assert "Traceback" not in proc.stderr
  errors = [l for l in proc.stderr.splitlines() if "error:" in l]
  assert errors == ["sweep_main.py: error: --alpha: set by the points of "
                    "--sweep=hsu2019_cifar10; do not give it on the command "
                    "line (use --only to pick points)"]


def test_train_main_smoke_synthetic_cifar10(tmp_path):
  # In this process: the test reads files and stdout.
  stdout = in_process.run_train_main(
      "--dataset=synthetic_cifar10", "--total_rounds=2", "--algorithm=fedavg",
      "--centralized_epochs=0", "--target_accuracy=0.01",
      f"--root_output_dir={tmp_path}", "--experiment_name=s")
  out = tmp_path / "s"
  summary = json.loads((out / "summary.json").read_text())
  assert summary["methods"]["fedavg"]["rounds"] == 2
  assert summary["methods"]["fedavg"]["rounds_to_target"] is not None
  hparams = json.loads((out / "hparams.json").read_text())
  assert hparams["resolved"] == {"model": "cifar_cnn", "num_clients": 10,
                                 "examples_per_client": 20,
                                 "clients_per_round": 10,
                                 "partition": "dirichlet"}
  report = json.loads((out / "partition_alpha_0.50_class_counts.json").read_text())
  assert len(report["clients"]) == 10
  assert all(c["num_examples"] == 20 for c in report["clients"])
  assert report["summary"]["emd"] == pytest.approx(summary["emd"])
  png = out / "partition_alpha_0.50_class_counts.png"
  assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  assert f"EMD non-identicalness {summary['emd']:.3f}" in stdout


@pytest.fixture(scope="module")
def two_point_sweep(tmp_path_factory):
  """The sweep's directory and stdout (in this process: its readers check
  files and printed lines)."""
  root = tmp_path_factory.mktemp("sweep")
  stdout = in_process.run_sweep_main(*SWEEP_ARGS, f"--root_output_dir={root}")
  return root / "mcmahan_mnist_grid", stdout


def test_two_point_sweep_runs_each_point(two_point_sweep):
  exp, stdout = two_point_sweep
  lines = stdout.splitlines()
  assert lines[0].startswith("sweep mcmahan_mnist_grid: 2 points, 0 done")
  assert [l.split()[1] for l in lines if l.startswith("  [todo]")] == list(TWO_POINTS)
  for name, per_round, batch in ((TWO_POINTS[0], 1, 0), (TWO_POINTS[1], 2, 10)):
    point = exp / name
    hp = json.loads((point / "hparams.json").read_text())
    assert hp["resolved"]["clients_per_round"] == per_round  # max(C*K, 1).
    assert hp["client_batch_size"] == batch and hp["model"] == "mnist_2nn"
    assert hp["target_accuracy"] == 0.97
    summary = json.loads((point / "summary.json").read_text())
    assert summary["methods"]["fedavg"]["rounds"] == 2
    assert (point / "fedavg" / "metrics.csv").is_file()
    assert list(point.glob("partition_class_counts.png"))
  assert "ran 2, skipped 0" in stdout


def test_sweep_resume_skips_finished_points(two_point_sweep, parse):
  from experiments import sweep_main  # pylint: disable=g-import-not-at-top
  exp, _ = two_point_sweep
  _, _, rows = sweep_lib.plan(parse(*SWEEP_ARGS,
                                     f"--root_output_dir={exp.parent}"))
  assert [(r[0].name, r[3]) for r in rows] == [(n, "completed")
                                               for n in TWO_POINTS]


def test_a_diverged_point_does_not_stop_the_sweep(parse, tmp_path, capsys,
                                                  monkeypatch):
  """The other points run; the sweep exits 3 naming the diverged point; a
  rerun lists it as diverged (not done) and exits 3 again."""
  from federated_vision.experiment import runner  # pylint: disable=g-import-not-at-top
  from experiments import sweep_main  # pylint: disable=g-import-not-at-top,unused-import
  from federated_vision.training import run_errors  # pylint: disable=g-import-not-at-top
  ran = []

  def fake_run(config):  # Writes summary.json as runner.run does.
    ran.append(config.output_dir)
    status = "diverged" if config.data.alpha == 0.1 else "completed"
    os.makedirs(config.output_dir)
    with open(os.path.join(config.output_dir, "summary.json"), "w") as f:
      json.dump({"status": status}, f)
    if status == "diverged":
      raise run_errors.DivergenceError("fedavg", 1, ["loss is nan"])

  monkeypatch.setattr(runner, "run", fake_run)
  f = parse("--sweep=hsu2019_cifar10", f"--root_output_dir={tmp_path}",
            "--only=fedavg_alpha_1,fedavg_alpha_0.1,fedavg_alpha_0",
            _prepared_cifar10(tmp_path))
  for attempt in range(2):
    planned = sweep_lib.plan(f)
    with pytest.raises(run_errors.RunError) as e:
      sweep_lib.run_points(*planned)
    assert e.value.exit_code == 3
    assert str(e.value) == ("sweep hsu2019_cifar10: 1 point(s) diverged: "
                            "fedavg_alpha_0.1 (summary.json status "
                            "'diverged')")
    assert len(ran) == 3  # Every point ran once, none twice.
  assert [r[3] for r in planned[2]] == ["completed", "diverged", "completed"]
  sweep_lib.print_plan(*planned)
  out = capsys.readouterr().out
  assert "  [diverged] fedavg_alpha_0.1 " in out
  assert "[2/3] fedavg_alpha_0.1: diverged (summary.json), skipped" in out


def test_report_gathers_the_sweep(two_point_sweep, tmp_path):
  exp, _ = two_point_sweep
  curves = {n: report_lib.curve_from_csv(str(exp / n / "fedavg" / "metrics.csv"))
            for n in TWO_POINTS}
  target = curves[TWO_POINTS[0]][1][0]  # Reached by the reference at round 1.
  rows = report_lib.gather(str(exp), target=target, reference=TWO_POINTS[0])
  assert [r["point"] for r in rows] == list(TWO_POINTS)
  for r in rows:
    summary = json.loads((exp / r["point"] / "summary.json").read_text())
    assert r["final_accuracy"] == summary["methods"]["fedavg"]["final_accuracy"]
    assert r["emd"] == summary["emd"]
    assert r["rounds_to_target"] == convergence.rounds_to_target(
        *curves[r["point"]], target)
    assert r["dataset"] == "synthetic_mnist" and r["partition"] == "iid"
    assert r["alpha"] is None and r["E"] == 1 and r["rounds"] == 2
  assert rows[0]["rounds_to_target"] == 1.0 and rows[0]["speedup"] == 1.0
  assert (rows[0]["C"], rows[0]["clients_per_round"], rows[0]["B"]) == (0.1, 1, "inf")
  assert (rows[1]["C"], rows[1]["clients_per_round"], rows[1]["B"]) == (0.2, 2, 10)
  second = rows[1]["rounds_to_target"]
  assert rows[1]["speedup"] == (None if second is None else 1.0 / second)

  # The binary: same rows in CSV and markdown.
  proc = run_module("experiments.report_main", f"--input_dir={exp}",
                    f"--output_dir={tmp_path}", f"--target_accuracy={target!r}",
                    f"--reference={TWO_POINTS[0]}", timeout=60)
  assert proc.returncode == 0, proc.stderr
  with open(tmp_path / "report.csv", newline="") as f:
    table = list(csv.DictReader(f))
  assert list(table[0]) == list(report_lib.COLUMNS)
  assert [t["point"] for t in table] == list(TWO_POINTS)
  for t, r in zip(table, rows):
    assert float(t["final_accuracy"]) == r["final_accuracy"]
    assert float(t["emd"]) == pytest.approx(r["emd"])
    assert float(t["rounds_to_target"] or "nan") == pytest.approx(
        r["rounds_to_target"] if r["rounds_to_target"] is not None else math.nan,
        nan_ok=True)
  md = (tmp_path / "report.md").read_text().splitlines()
  assert md[0].startswith("| point | dataset | partition | alpha | algorithm |")
  assert len(md) == 4 and TWO_POINTS[1] in md[3]
  assert TWO_POINTS[0] in proc.stdout


def test_report_errors_name_the_flag(tmp_path):
  with pytest.raises(report_lib.ReportError, match="--input_dir=.*no summary"):
    report_lib.gather(str(tmp_path))
