"""`--help` lists a binary's flags grouped by config section (help_lib)."""

import re

from absl import flags

from federated_vision.experiment import config as config_lib
from experiments import help_lib
from experiments import reproduce_lib
from federated_vision import tasks
from federated_vision.reproduction import presets
from conftest import run_module


# experiments.estimate's flags (defined there, not in the binaries): were
# missing from --help although the binaries' docstrings name --estimate.
ESTIMATE_FLAGS = ["estimate", "estimate_batch_size", "estimate_clients",
                  "estimate_rounds", "estimate_scaled_rounds"]


def _groups(text):
  """{group title: [flag names]} in printed order, from `--help` output."""
  out, title = {}, None
  for line in text.splitlines():
    m = re.match(r"^== (.*) ==$", line)
    if m:
      title = m.group(1)
      out[title] = []
      continue
    m = re.match(r"^  --(?:\[no\])?([A-Za-z_][A-Za-z0-9_]*):", line)
    if m:
      assert title is not None, line
      out[title].append(m.group(1))
  return out


def test_train_main_help_is_grouped_by_section():
  proc = run_module("experiments.train_main", "--help", timeout=180)
  assert proc.returncode == 0, proc.stderr[-2000:]
  groups = _groups(proc.stdout)
  sections = [t.split(":")[0] for t in groups]
  assert sections == list(config_lib.SECTIONS) + ["train_main.py"]
  where = config_lib.field_sections()
  listed = [n for names in groups.values() for n in names]
  assert len(listed) == len(set(listed))  # each flag once
  assert set(listed) == set(where) | {"dry_run", "extra_modules",
                                      "seeds"} | set(ESTIMATE_FLAGS)
  for title, names in groups.items():
    section = title.split(":")[0]
    for name in names:
      assert where.get(name, "train_main.py") == section, (name, title)
    assert names == sorted(names)
  assert groups["train_main.py: this binary"] == [
      "dry_run", *ESTIMATE_FLAGS, "extra_modules", "seeds"]
  assert proc.stdout.startswith("Federated training experiment")
  # The partition help matches the digits task's partitions.
  assert tasks.get_task("digits").partitions == (
      "dirichlet", "shards", "dirichlet_per_class")
  text = " ".join(proc.stdout.split())
  assert "digits: all but iid" in text
  assert "dirichlet only" not in text


def test_helpfull_is_still_absls_complete_list():
  proc = run_module("experiments.report_main", "--helpfull", timeout=180)
  assert "--[no]logtostderr" in proc.stdout  # absl's own flags
  short = run_module("experiments.report_main", "-h", timeout=180)
  assert short.returncode == 0
  assert "logtostderr" not in short.stdout
  groups = _groups(short.stdout)
  assert list(groups) == ["report_main.py: this binary"]
  assert "input_dir" in groups["report_main.py: this binary"]


def test_groups_orders_sections_and_keeps_the_rest_last():
  fv = flags.FlagValues()
  for name in ("zeta", "alpha", "seed", "mine"):
    flags.DEFINE_string(name, None, name, flag_values=fv)
  class Data:
    """Which data set; more."""
  class Training:
    """Rounds and seeds."""
  out = help_lib.groups([fv[n] for n in ("zeta", "alpha", "seed", "mine")],
                        {"data": Data, "training": Training, "empty": Data},
                        {"alpha": "data", "zeta": "data", "seed": "training"},
                        "bin: this binary")
  assert [(t, [f.name for f in fl]) for t, fl in out] == [
      ("data: Which data set", ["zeta", "alpha"]),
      ("training: Rounds and seeds", ["seed"]),
      ("bin: this binary", ["mine"])]
  assert help_lib.wants_help(["prog", "--x=1", "-h"])
  assert not help_lib.wants_help(["prog", "--helpfull"])


def test_reproduce_help_lists_exactly_the_flags_it_reads():
  # Was: the task-component flags (e.g. --imbalance_sigma, which reproduce
  # ignores) without --split_csv, --data_dir, --root_output_dir, the worker
  # flags, --extra_modules or --estimate, all of which it reads.
  proc = run_module("experiments.reproduce", "--help", timeout=180)
  assert proc.returncode == 0, proc.stderr[-2000:]
  groups = _groups(proc.stdout)
  own = groups.pop("reproduce.py: this binary")
  assert own == sorted(["dry_run", *ESTIMATE_FLAGS, "extra_methods",
                        "extra_modules", "only", "parallel_runs", "preset",
                        "report_only", "results_root", "seeds"])
  where = config_lib.field_sections()
  listed = [n for names in groups.values() for n in names]
  assert sorted(listed) == reproduce_lib.read_flag_names()
  assert {"split_csv", "data_dir", "archive_path", "root_output_dir",
          "local_workers", "workers"} <= set(listed)
  assert "imbalance_sigma" not in listed
  for title, names in groups.items():
    assert all(where[n] == title.split(":")[0] for n in names), title
  text = " ".join(proc.stdout.split())
  assert ("--preset: Preset name: " + " | ".join(presets.preset_names())
          + " (and any registered by --extra_modules; --dry_run lists its "
          "runs).") in text
  assert "  --[no]estimate: Calibrate a few rounds per run shape in a " \
      "temporary directory," in proc.stdout.splitlines()
  assert "[--estimate]" in proc.stdout  # The usage line names it too.
