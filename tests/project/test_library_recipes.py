"""docs/library_recipes.md runs as written: quiet logs, the managed TFF
runtime, evaluation built first, plain TFF `build_weighted_fed_avg` with
per-(client, round) seeded augmentation."""

import os
import re
import subprocess
import sys

from conftest import REPO

CHECKS = """
import numpy as np
assert set(metrics) == {"loss", "accuracy"} and np.isfinite(metrics["loss"])
assert 0.0 <= metrics["accuracy"] <= 1.0
cid = train.client_ids[0]
def first(key):
  return next(iter(train.serializable_dataset_fn(key)))["x"].numpy()
a, b = first(round_keys.round_key(cid, 1)), first(round_keys.round_key(cid, 1))
c = first(round_keys.round_key(cid, 2))
assert a.shape == (10, 24, 24, 3)
np.testing.assert_array_equal(a, b)          # reproducible per (client, round)
assert not np.array_equal(np.sort(a.ravel()), np.sort(c.ravel()))  # re-augmented
p = next(iter(plain.create_tf_dataset_for_client(cid)))
ref = next(iter(fed.client_data.create_tf_dataset_for_client(cid).map(
    fed.eval_map_fn).batch(10)))
np.testing.assert_array_equal(p["x"].numpy(), ref["x"].numpy())
print("CHECKS OK")
"""


def test_library_recipes_run(tmp_path):
  with open(os.path.join(REPO, "docs", "library_recipes.md")) as f:
    blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
  assert len(blocks) == 4
  script = tmp_path / "recipes.py"
  script.write_text("\n".join(blocks) + CHECKS)
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  env.update(MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(
      [REPO, os.environ.get("PYTHONPATH", "")]))
  # Captured pipes: the run ends only when nothing holds them, so a worker
  # left running (no `runtime.install()`) would fail it by the timeout.
  proc = subprocess.run([sys.executable, str(script)], cwd=REPO, env=env,
                        capture_output=True, text=True, timeout=600,
                        stdin=subprocess.DEVNULL, check=False)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "CHECKS OK" in proc.stdout
  rounds = [l.split()[0] for l in proc.stdout.splitlines()
            if l[:2] in ("1 ", "2 ")]
  assert rounds == ["1", "2"]
  # The first recipe silenced TF's C++ and Python log lines.
  noisy = [l for l in proc.stderr.splitlines()
           if re.search(r"\] (oneDNN|Could not find cuda|This TensorFlow "
                        r"binary)|cuDNN factory|^I\d{4}|INFO:", l)]
  assert noisy == [], noisy[:5]


# Binaries that never import TensorFlow (checked below), so need no setting.
TF_FREE_BINARIES = ("experiments/report_main.py", "benchmarks/bench_partition.py")


def _binaries():
  out = []
  for d, pattern in (("experiments", r"_main\.py$|^reproduce\.py$"),
                     ("datasets", r"^(?!__init__).*\.py$"),
                     ("benchmarks", r"^(bench_.*|run_all|mixing_digits)\.py$")):
    out += [f"{d}/{n}" for n in sorted(os.listdir(os.path.join(REPO, d)))
            if re.search(pattern, n)]
  return out


def test_binaries_quiet_tf_and_the_library_changes_no_setting():
  for rel in _binaries():
    with open(os.path.join(REPO, rel)) as f:
      text = f.read()
    if rel in TF_FREE_BINARIES or not re.search(
        r"(?m)^(import tensorflow|from (federated_vision|experiments|benchmarks) )",
        text):
      continue
    quiet = text.find('os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL"')
    first = re.search(r"(?m)^(import tensorflow|from (federated_vision|"
                      r"experiments|benchmarks) )", text).start()
    assert 0 <= quiet < first, f"{rel}: set TF_CPP_MIN_LOG_LEVEL before imports"
  code = ("import os, sys, logging\n"
          "from absl import logging as absl_logging\n"
          "verbosity = absl_logging.get_verbosity()\n"
          "before = dict(os.environ)\n"
          "import experiments.report_main, benchmarks.bench_partition\n"
          "assert 'tensorflow' not in sys.modules\n"
          # TensorFlow itself sets TF_CPP_MIN_LOG_LEVEL=1, TF2_BEHAVIOR, ...
          "import tensorflow, tensorflow_federated\n"
          "before = dict(os.environ)\n"
          "import federated_vision.training_loop, federated_vision.methods\n"
          "import federated_vision.realworld.image_data, federated_vision.data.celeba\n"
          "assert absl_logging.get_verbosity() == verbosity\n"
          "changed = {k for k in set(before) | set(os.environ)\n"
          "           if before.get(k) != os.environ.get(k)}\n"
          "assert not changed, changed\n"
          "print('OK')\n")
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  env["PYTHONPATH"] = REPO
  proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                        capture_output=True, text=True, timeout=300,
                        check=False)
  assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr[-2000:]
