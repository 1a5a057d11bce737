"""Runs several train_main command lines in one process, a child of a test
(tests/test_extra_components.py): each through the binary's own parser and
main (`in_process.run`), so TensorFlow is imported and the TFF workers'
start-up paid once for all of them. Components from --extra_modules
register process-wide, which is why this is a child of pytest and not
pytest itself.

    python tests/child_train_runs.py <repo> '<json {name: [arg, ...]}>'

prints one line `RESULT <json {name: {"code": exit status, "stdout": ...,
"stderr": ...}}>`.
"""

import json
import os
import sys

REPO, RUNS = sys.argv[1], json.loads(sys.argv[2])
sys.path[:0] = [REPO, os.path.join(REPO, "tests")]

import in_process  # pylint: disable=g-import-not-at-top,wrong-import-position


def main():
  out = {}
  for name, args in RUNS.items():
    proc = in_process.run("experiments.train_main", *args)
    out[name] = {"code": proc.returncode, "stdout": proc.stdout,
                 "stderr": proc.stderr[-3000:]}
  print("RESULT", json.dumps(out))


if __name__ == "__main__":
  main()
