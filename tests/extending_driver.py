"""Runs every scenario of tests/test_extending.py in one process (a child of
the test): a researcher's components, preset and sweep from --extra_modules,
and docs/extending.md's commands, each through its binary's own parser and
main (`in_process.run`), so TensorFlow is imported and its functions traced
once for all of them. Components register process-wide, which is why this
is a child of pytest and not pytest itself.

    python tests/extending_driver.py <repo> <work dir> <scenario>...

prints one line `RESULT <json>` with what each scenario returned. (sweep_main
and reproduce define flags of the same names, which absl refuses in one
process: the sweep scenario first deletes the flags reproduce defined,
`forget_reproduce_flags`, so it runs last.)
"""

import json
import os
import re
import shlex
import sys

REPO, WORK, SCENARIOS = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path[:0] = [REPO, os.path.join(REPO, "tests"), WORK]

import in_process  # pylint: disable=g-import-not-at-top,wrong-import-position
from conftest import metric_rows  # pylint: disable=g-import-not-at-top,wrong-import-position
from federated_vision.learning import sampling  # pylint: disable=g-import-not-at-top,wrong-import-position

MODULES = "extra_algorithm,extra_client_variant,extra_server_optimizer"
COMPONENT_METHODS = ("fedavg_clip", "fedavg+scaled", "fedavg@clipped_sgd")
TINY = ["--num_clients=4", "--clients_per_round=2", "--client_batch_size=20",
        "--centralized_epochs=0", "--seed=3", "--rounds_per_eval=1",
        "--rounds_per_checkpoint=1", "--total_rounds=2"]


def ctrl_c_before(round_num):
  """Makes the samplers raise KeyboardInterrupt (Ctrl-C) before `round_num`;
  returns the undo."""
  select = sampling.UniformSampler.select

  def select_or_stop(self, r):
    if r == round_num:
      raise KeyboardInterrupt
    return select(self, r)
  sampling.UniformSampler.select = select_or_stop
  return lambda: setattr(sampling.UniformSampler, "select", select)


def whole_split_resumed(binary, run_dir_args, args, stop_round):
  """(whole, killed, resumed) runs of `binary`: uninterrupted, Ctrl-C
  before `stop_round`, the same command again."""
  whole = in_process.run(binary, *run_dir_args("whole"), *args)
  undo = ctrl_c_before(stop_round)
  try:
    killed = in_process.run(binary, *run_dir_args("split"), *args)
  finally:
    undo()
  resumed = in_process.run(binary, *run_dir_args("split"), *args)
  return whole, killed, resumed


def rows_of(paths):
  return {p: metric_rows(p) for p in paths}


def components():
  root = os.path.join(WORK, "components")
  procs = whole_split_resumed(
      "experiments.train_main",
      lambda name: (f"--root_output_dir={root}", f"--experiment_name={name}"),
      [f"--extra_modules={MODULES}", f"--methods={','.join(COMPONENT_METHODS)}",
       "--clip_norm=0.5", "--update_scale=0.8", "--server_clip_norm=2",
       *TINY], 2)
  rows = {n: {m: metric_rows(f"{root}/{n}/{m}/metrics.csv")
              for m in COMPONENT_METHODS} for n in ("whole", "split")}
  return {"codes": [p.returncode for p in procs],
          "stderr": "".join(p.stderr for p in procs)[-3000:],
          "resumed_out": procs[2].stdout, "same": rows["whole"] == rows["split"],
          "rounds": {m: [r["round"] for r in rows["split"][m]]
                     for m in COMPONENT_METHODS}}


def presets():
  root = os.path.join(WORK, "presets")
  procs = whole_split_resumed(
      "experiments.reproduce", lambda name: (f"--results_root={root}/{name}",),
      ["--extra_modules=extra_preset", "--preset=my_digits_table"], 2)
  run = "my_digits_table_run"
  rows = {n: {m: metric_rows(f"{root}/{n}/{run}/{m}/metrics.csv")
              for m in ("fedavg", "fedavg@clipped_sgd")}
          for n in ("whole", "split")}
  extra = in_process.run(
      "experiments.reproduce", f"--results_root={root}/claims",
      "--extra_modules=extra_server_optimizer", "--preset=digits_claims",
      "--extra_methods=fedavg@clipped_sgd",
      "--only=digits_claims_fedvc_imbalanced+*")
  budget = compared_run_at_an_earlier_budget(f"{root}/claims")
  # fedavg_clip (tests/extra_algorithm.py) is no algorithm the mixing
  # strategies compose: the claim 5 runs are skipped, the rest planned.
  both = ["--extra_modules=extra_server_optimizer,extra_algorithm",
          "--preset=digits_claims",
          "--extra_methods=fedavg@clipped_sgd,fedavg_clip"]
  report = in_process.run("experiments.reproduce", *both, "--report_only",
                          f"--results_root={root}/claims")
  plan = in_process.run("experiments.reproduce", *both, "--dry_run",
                        f"--results_root={root}/claims")
  procs += (extra, report, plan)
  return {"codes": [p.returncode for p in procs],
          "stderr": "".join(p.stderr for p in procs)[-3000:],
          "same": rows["whole"] == rows["split"],
          "rounds": [r["round"] for r in rows["split"]["fedavg"]],
          "budget": budget, "plan": plan.stdout}


def compared_run_at_an_earlier_budget(root):
  """Writes the compared run of claim 2 as finished, its common batch budget
  (summary.json's acc_at_batch_ref) B between two of the added run's
  evaluations, before its last one with another accuracy: B and that
  evaluation (round, accuracy) are what the added row must read."""
  import reproduction_helpers  # pylint: disable=g-import-not-at-top
  from federated_vision.reproduction import presets as presets_lib  # pylint: disable=g-import-not-at-top
  run = presets_lib.get_preset("digits_claims").run(
      "digits_claims_fedvc_imbalanced")
  rows = metric_rows(f"{root}/{run.name}+fedavg@clipped_sgd/"
                     "fedavg@clipped_sgd/metrics.csv")
  evaluated = [r for r in rows if r["test_accuracy"]]
  at = next(r for r in evaluated
            if r["test_accuracy"] != evaluated[-1]["test_accuracy"])
  budget = int(rows[int(at["round"]) + 1]["cumulative_batch_budget"])
  reproduction_helpers.finished_run(
      root, run, {"fedavg": [(40, 0.5)], "fedavg+fedvc": [(40, 0.6)]},
      acc_at_batch_ref=budget)
  return {"batches": budget, "round": at["round"],
          "accuracy": float(at["test_accuracy"])}


def forget_reproduce_flags():
  """Deletes the flags experiments.reproduce defined (--dry_run, --only,
  --parallel_runs, ...) from absl's FLAGS, and its hook on them after
  --extra_modules (`cli.AFTER_EXTRA_MODULES`), so that sweep_main can define
  its own of the same names in this process; reproduce cannot run after."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  from experiments import cli  # pylint: disable=g-import-not-at-top
  module = "experiments.reproduce"
  for flag in list(flags.FLAGS.flags_by_module_dict().get(module, [])):
    delattr(flags.FLAGS, flag.name)
  cli.AFTER_EXTRA_MODULES[:] = [h for h in cli.AFTER_EXTRA_MODULES
                                if h.__module__ != module]


def sweep():
  forget_reproduce_flags()
  root = os.path.join(WORK, "sweeps")
  ran = in_process.run("experiments.sweep_main", "--extra_modules=extra_sweep",
                       "--sweep=my_scale_sweep", f"--root_output_dir={root}")
  # report_main's library (its binary defines --target_accuracy, as
  # train_main does: absl refuses both in one process).
  from federated_vision.experiment import report_lib  # pylint: disable=g-import-not-at-top
  rows = report_lib.gather(f"{root}/my_scale_sweep")
  report_lib.write_outputs(rows, f"{root}/my_scale_sweep")
  return {"codes": [ran.returncode, 0], "stderr": ran.stderr[-3000:],
          "report_header": report_lib.format_table(rows).splitlines()[0]}


def docs():
  """docs/extending.md's modules written to the docs' work dir and its
  commands run there, each as written (its program and flags)."""
  work = os.path.join(WORK, "docs")
  os.makedirs(work, exist_ok=True)
  sys.path.insert(0, work)
  text = open(os.path.join(REPO, "docs", "extending.md"),
              encoding="utf-8").read()
  for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
    name = block.splitlines()[0][len("# file: "):].strip()
    with open(os.path.join(work, name), "w", encoding="utf-8") as f:
      f.write(block)
  out = []
  cwd = os.getcwd()
  os.chdir(work)
  try:
    for command in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
      argv = shlex.split(command.replace("\\\n", " "))
      assert argv[:2] == [".venv/bin/python", "-m"], argv
      proc = in_process.run(argv[2], *argv[3:])
      out.append({"args": argv[2:], "code": proc.returncode,
                  "stdout": proc.stdout, "stderr": proc.stderr[-3000:]})
  finally:
    os.chdir(cwd)
  return out


if __name__ == "__main__":
  print("RESULT", json.dumps({name: globals()[name]() for name in SCENARIOS}))
