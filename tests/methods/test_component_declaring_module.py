"""Every component records the module that declares it (`Component.module`,
set by `methods.register` from its caller; the generated component table
tells built-ins from a user's by it), also when it is registered through
`register_mixing_strategy`."""

import json
import os
import subprocess
import sys

from conftest import REPO, TEST_PYTHONPATH

# A child process: the user's modules register process-wide.
_PROBE = """
import json, sys
import tensorflow  # As under pytest: TensorFlow imported before the registries.
import extra_algorithm, extra_mixing_strategy
from federated_vision import methods
print(json.dumps({c.name: c.module for c in methods.all_components()}))
"""


def test_each_component_names_its_declaring_module():
  proc = subprocess.run(
      [sys.executable, "-c", _PROBE], cwd=REPO, capture_output=True,
      text=True, timeout=300, check=False, stdin=subprocess.DEVNULL,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=TEST_PYTHONPATH))
  assert proc.returncode == 0, proc.stderr[-3000:]
  module = json.loads(proc.stdout.strip().splitlines()[-1])
  builtins = "federated_vision.algorithms."
  assert module["fedavg"] == builtins + "fedavg"
  assert module["fedir"] == builtins + "fedir"
  assert module["adam"] == builtins + "server_adaptive"
  assert module["sgdm"] == builtins + "server_sgd"
  # Mixing strategies: the declaring module, not mixing.strategy (whose
  # register_mixing_strategy calls register).
  assert module["parallel"] == "federated_vision.mixing.strategies"
  assert module["parallel_shared"] == "extra_mixing_strategy"
  assert module["fedavg_clip"] == "extra_algorithm"
