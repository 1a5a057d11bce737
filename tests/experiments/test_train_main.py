"""The default experiment binary: outputs, determinism, resume, bad input."""

import json
import os
import signal
import sys

import pytest

from conftest import FIXTURES, REPO
from conftest import SMALL_RUN as SMALL
from conftest import TRAIN_MAIN as BINARY
from conftest import metric_rows as _metric_rows
import run_checks
from run_checks import DIGITS_NUM_TEST, check_method_run


def test_smoke_two_rounds_writes_every_output(tmp_path, train_in_process):
  # In this process (conftest's train_in_process): results, not the process.
  # The default 20 clients (partition_stats below), 3 of them a round (ours:
  # the default 10 cost ~1.8 CPU-s more and check nothing more).
  proc = train_in_process(f"--root_output_dir={tmp_path}",
                          "--experiment_name=smoke", "--total_rounds=2",
                          "--rounds_per_eval=1", "--centralized_epochs=2",
                          "--clients_per_round=3")
  assert proc.returncode == 0, proc.stderr[-3000:]
  out = tmp_path / "smoke"
  summary = json.loads((out / "summary.json").read_text())
  assert set(summary["methods"]) == {"fedavg", "fedavgm"}
  for name, m in summary["methods"].items():
    assert m["rounds"] == 2
    assert 0 <= m["final_accuracy"] <= 1
    # A count over the test set, the last round's, and training lowered the
    # loss (1.968 -> 1.859 for both methods when measured).
    check_method_run(out / name, m, num_test=DIGITS_NUM_TEST)
    assert m["relative_accuracy"] == pytest.approx(
        m["final_accuracy"] / summary["centralized"]["accuracy"])
    rows = _metric_rows(out / name / "metrics.csv")
    assert [r["round"] for r in rows] == ["1", "2"]
    assert all(r["test_accuracy"] for r in rows)
    assert os.listdir(out / name / "tensorboard")
    assert (out / name / "checkpoints" / "round_2").is_dir()
  assert len(summary["centralized"]["history"]) == 2
  hparams = json.loads((out / "hparams.json").read_text())
  for flag in ("dataset", "algorithm", "clients_per_round", "client_epochs",
               "client_batch_size", "client_learning_rate",
               "server_learning_rate", "server_momentum", "total_rounds",
               "rounds_per_eval", "rounds_per_checkpoint", "seed",
               "root_output_dir", "experiment_name", "alpha"):
    assert flag in hparams
  assert hparams["total_rounds"] == 2 and hparams["clients_per_round"] == 3
  assert hparams["partition_stats"]["num_clients"] == 20
  # The baseline's SGD updates at each epoch (McMahan 2017 §3 counts them):
  # ceil(n / B) a epoch, B = --client_batch_size (10).
  n = hparams["partition_stats"]["num_examples"]
  assert summary["centralized"]["minibatch_updates"] == [
      -(-n // 10), 2 * -(-n // 10)]
  assert hparams["partition"] == "dirichlet"  # Top level: the flag's value.
  for png in ("accuracy.png", "accuracy_vs_batches.png"):
    assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  # One progress line per round and method, then the table.
  assert proc.stdout.count("[fedavg] round") == 2
  assert proc.stdout.count("[fedavgm] round") == 2
  assert "relative_acc" in proc.stdout and str(out) in proc.stdout


# Same seed, same numbers: tests/experiments/test_run_integrity.py's `runs` (a
# fresh run in this process, then extended) against conftest's reference_run (a
# child process), row for row and byte for byte; and the resumes there and in
# tests/runtime/test_interrupts.py (SIGKILL, then SIGINT at every moment around
# a checkpoint write, resumed to the reference run's metrics).


def test_sigterm_stops_run_and_worker(tmp_path):
  # Says how to resume, as docs/failure_modes.md quotes it (SIGTERM said
  # nothing before issue 29). SIGINT: tests/runtime/test_interrupts.py, whose
  # run is then resumed.
  run_checks.signal_in_first_round(
      [sys.executable, "-m", BINARY, f"--root_output_dir={tmp_path}",
       "--total_rounds=200", *SMALL], signal.SIGTERM)


def _file_in(tmp_path):
  blocker = tmp_path / "a_file"
  blocker.write_text("not a directory")
  return str(blocker / "sub")


@pytest.mark.parametrize("flag_args, must_mention", [
    (["--dataset=imagenet"], ["--dataset", "digits"]),
    (["--total_rounds=0"], ["--total_rounds"]),
    (["--total_rounds=-3"], ["--total_rounds"]),
    (["--clients_per_round=21"], ["--clients_per_round", "[1, 20]"]),
    (["--alpha=-0.5"], ["--alpha"]),
    (["--algorithm=fedfoo"], ["--algorithm", "fedavg, fedavgm, fedsgd"]),
    (["--server_momentum=1.5"], ["--server_momentum", "[0, 1)"]),
    (["--local_workers=0"], ["--local_workers=0", "--workers"]),
    ("UNWRITABLE", ["--root_output_dir", "cannot write"]),
])
def test_bad_input_exits_with_one_clear_line(tmp_path, flag_args, must_mention,
                                            train_in_process):
  # In this process (conftest's train_in_process): the binary's exit status
  # and stderr. Real processes refusing a flag (exit 2, one line, before
  # TensorFlow's import) are tests/project/test_docs_output.py's "bad flag
  # value" and "cannot be created or written" rows and
  # tests/experiments/test_startup.py.
  if flag_args == "UNWRITABLE":
    flag_args = [f"--root_output_dir={_file_in(tmp_path)}"]
  else:
    flag_args = [f"--root_output_dir={tmp_path}", *flag_args]
  proc = train_in_process(*flag_args, "--total_rounds=1"
                          if not any("total_rounds" in a for a in flag_args)
                          else "--seed=0")
  assert proc.returncode != 0
  assert "Traceback" not in proc.stderr
  lines = [l for l in proc.stderr.splitlines()
           if all(m in l for m in must_mention)]
  assert lines, proc.stderr


def test_dry_run_prints_the_resolved_plan_and_trains_nothing(tmp_path):
  # A user's algorithm from a file path (--extra_modules=<path>.py), C from
  # --client_fraction (0.5 x the default 20 clients), 'auto' client groups
  # (min(25, ceil(C / 4)) = 3; fedavg_clip declares no grouped build: 1), a
  # method's own setting.
  from test_startup import _probe  # pylint: disable=g-import-not-at-top
  module = os.path.join(FIXTURES, "extra_algorithm.py")
  code, tf, tff, out, err = _probe(
      "experiments.train_main", "--dry_run", f"--extra_modules={module}",
      "--methods=fedavg_clip,fedavg@adam:server_learning_rate=0.01",
      "--client_fraction=0.5", "--clip_norm=0.5",
      f"--root_output_dir={tmp_path}", "--experiment_name=planned")
  assert code == 0 and not tf and not tff, err[-2000:]
  assert list(tmp_path.iterdir()) == []  # Nothing written.
  lines = out.splitlines()
  assert "  clients per round: 10 (--client_fraction=0.5)" in lines
  assert "    fedavg_clip: algorithm fedavg_clip, server optimizer sgd" in lines
  assert ("    fedavg@adam:server_learning_rate=0.01: algorithm fedavg, "
          "server optimizer adam") in lines
  clip, adam = (lines[lines.index(l) + 1: lines.index(l) + 3] for l in lines
                if l.startswith(("    fedavg_clip:", "    fedavg@adam")))
  assert "clip_norm=0.5" in clip[0] and "server_learning_rate=0.01" in adam[0]
  assert "adam_beta_1=0.9" in adam[0] and "clip_norm" not in adam[0]
  assert (clip[1], adam[1]) == ("      client groups: 1 per TFF slot",
                                "      client groups: 3 per TFF slot")
  assert f"  output: {tmp_path}/planned" in lines
