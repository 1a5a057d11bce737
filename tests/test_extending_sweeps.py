"""A sweep registered from --extra_modules (tests/extra_sweep.py) runs
through sweep_main with a researcher's own hyper-parameter (--update_scale
of the `scaled` client work) as its axis, and report_main shows that
hyper-parameter as a column (issue 27). Subprocesses: the registrations
stay out of the pytest process."""

import csv
import os

from conftest import REPO, run_module

ENV = {"PYTHONPATH": os.pathsep.join([REPO, os.path.join(REPO, "tests")])}


def test_a_registered_sweep_runs_and_its_axis_is_a_report_column(tmp_path):
  proc = run_module("experiments.sweep_main", "--extra_modules=extra_sweep",
                    "--sweep=my_scale_sweep", f"--root_output_dir={tmp_path}",
                    env=ENV, timeout=900)
  assert proc.returncode == 0, proc.stderr[-3000:]
  out = tmp_path / "my_scale_sweep"
  assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
      "scale_0.5", "scale_1"]
  report = run_module("experiments.report_main", f"--input_dir={out}",
                      env=ENV, timeout=300)
  assert report.returncode == 0, report.stderr[-3000:]
  with open(out / "report.csv", newline="") as f:
    rows = list(csv.DictReader(f))
  assert [(r["point"], r["algorithm"], r["update_scale"]) for r in rows] == [
      ("scale_0.5", "fedavg+scaled", "0.5"), ("scale_1", "fedavg+scaled", "1.0")]
  # Only what differs: the shared client lr is not a column of its own.
  assert "client lr" not in rows[0]
  assert "update_scale" in report.stdout.splitlines()[0]
  helped = run_module("experiments.sweep_main", "--extra_modules=extra_sweep",
                      "--help", env=ENV, timeout=120)
  assert "my_scale_sweep" in helped.stdout
