"""experiments.cli.main freezes the objects that exist before the run (the
imports') for the garbage collector during `body()` and unfreezes them after,
whether `body()` returns or fails (docs/performance.md, "Start-up")."""

import subprocess
import sys

from conftest import REPO

_SCRIPT = """
import gc
from experiments import cli
from federated_vision.errors import ConfigError
seen = []
def ok():
  seen.append(gc.get_freeze_count())
cli.main(["binary"], ok, tff_runtime=False)
print("ok", seen[0] > 1000, gc.get_freeze_count())
def bad():
  seen.append(gc.get_freeze_count())
  raise ConfigError("refused")
try:
  cli.main(["binary"], bad, tff_runtime=False)
except SystemExit as e:
  print("bad", e.code, seen[1] > 1000, gc.get_freeze_count())
"""


def test_frozen_during_the_body_and_unfrozen_after():
  proc = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=REPO,
                        capture_output=True, text=True, check=False)
  assert proc.stdout.split("\n")[:2] == ["ok True 0", "bad 2 True 0"], (
      proc.stdout, proc.stderr)
  assert proc.stderr.strip().endswith("error: refused")
