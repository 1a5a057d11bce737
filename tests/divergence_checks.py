"""Checks on a train_main run that stopped because FedAvg diverged at round 1
(issue 10, acceptance 3), shared by tests/test_docs_output.py (client
updates, a real process) and tests/test_run_integrity.py (the server step,
in this process)."""

import json

from conftest import run_module


def strict_json(path):
  """A JSON file's value; fails on NaN / Infinity (not strict JSON)."""
  def refuse(constant):
    raise AssertionError(f"{path} holds {constant}")
  with open(path) as f:
    return json.load(f, parse_constant=refuse)


def check_stopped_at_round_1(run_dir):
  """summary.json marks FedAvg and the run diverged at round 1 with no
  relative accuracy and no centralized baseline; report_main's row says
  'diverged' and report.md holds no nan. Returns FedAvg's summary entry."""
  summary = strict_json(run_dir / "summary.json")
  m = summary["methods"]["fedavg"]
  assert summary["status"] == "diverged" and m["status"] == "diverged"
  assert m["relative_accuracy"] is None and m["non_finite_rounds"] == [1]
  assert summary["centralized"] is None
  report = run_module("experiments.report_main", f"--input_dir={run_dir}",
                      timeout=120)
  assert report.returncode == 0, report.stderr
  row = [l for l in report.stdout.splitlines() if " fedavg " in l][0]
  assert " diverged " in row
  assert "nan" not in (run_dir / "report.md").read_text().lower()
  return m
