"""`train_main --estimate` against the run it projects (issue 18, check 5).

For each repetition: `train_main --estimate` of a configuration (a synthetic
twin, default synthetic_inaturalist: MobileNetV2-GN), then the same
configuration actually trained (in a temporary directory), each its own
process. Compares the projected total wall time (imports + start-up +
rounds + evaluations + centralized epochs) with the measured wall time of
the training process, and the projected rounds + evaluations with the sum
of the run's `round_seconds` (metrics.csv). The check passes when every
ratio projected / actual is within [1/1.5, 1.5]. The machine's load is
printed before and after (other processes change both sides).

  python -m benchmarks.bench_estimate [--rounds 20] [--repeats 1] [--quick]
      [--config "--dataset=synthetic_mnist ..."]
"""

import argparse
import csv
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks import harness  # pylint: disable=g-import-not-at-top

DEFAULT_CONFIG = ("--dataset=synthetic_inaturalist --image_size=64 "
                  "--num_clients=6 --examples_per_client=16 "
                  "--clients_per_round=3 --client_batch_size=8 "
                  "--algorithm=fedavg --rounds_per_eval=5 "
                  "--centralized_epochs=2")
FACTOR = 1.5


def _run(args):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", MPLBACKEND="Agg")
  t0 = time.perf_counter()
  out = subprocess.run([sys.executable, "-m", "experiments.train_main", *args],
                       capture_output=True, text=True, env=env, check=False,
                       stdin=subprocess.DEVNULL)
  wall = time.perf_counter() - t0
  if out.returncode != 0:
    raise SystemExit(f"train_main {' '.join(args)} exited {out.returncode}: "
                     f"{out.stderr.strip()[-2000:]}")
  return out.stdout, wall


def _projected(stdout: str):
  """(total wall s, rounds + evaluations wall s) from --estimate's output."""
  total = float(re.search(r"^total: .*?\((\d+(?:\.\d+)?) s\)", stdout,
                          re.M).group(1))
  line = re.search(r"^  = .*$", stdout, re.M).group(0)
  seconds = float(re.search(r"rounds \((\d+(?:\.\d+)?) s\)", line).group(1))
  evals = float(re.search(r"evaluations \((\d+(?:\.\d+)?) s\)", line).group(1))
  return total, seconds + evals


def _round_seconds(run_dir: str) -> float:
  total = 0.0
  for path in glob.glob(os.path.join(run_dir, "*", "metrics.csv")):
    with open(path) as f:
      total += sum(float(r["round_seconds"]) for r in csv.DictReader(f))
  return total


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=20)
  parser.add_argument("--repeats", type=int, default=1)
  parser.add_argument("--config", default=DEFAULT_CONFIG,
                      help="train_main flags (quoted)")
  parser.add_argument("--quick", action="store_true", help="5 rounds")
  args = parser.parse_args(argv)
  rounds = 5 if args.quick else args.rounds
  flags = shlex.split(args.config) + [f"--total_rounds={rounds}"]
  print(f"train_main {' '.join(flags)}")
  print(harness.load_line(), flush=True)
  ratios = []
  for rep in range(args.repeats):
    with tempfile.TemporaryDirectory(prefix="bench_estimate_") as tmp:
      est_out, est_wall = _run(flags + ["--estimate",
                                        f"--root_output_dir={tmp}/est"])
      if os.path.exists(os.path.join(tmp, "est")):
        raise SystemExit("--estimate created an experiment directory")
      total, loop = _projected(est_out)
      _, actual = _run(flags + [f"--root_output_dir={tmp}/run",
                                "--experiment_name=run"])
      actual_loop = _round_seconds(os.path.join(tmp, "run", "run"))
    r_total, r_loop = total / actual, loop / actual_loop
    ratios += [r_total, r_loop]
    print(f"[{rep + 1}] estimate took {est_wall:.1f} s; projected total "
          f"{total:.1f} s vs actual {actual:.1f} s (x{r_total:.2f}); "
          f"projected rounds+evaluations {loop:.1f} s vs metrics.csv "
          f"round_seconds {actual_loop:.1f} s (x{r_loop:.2f})", flush=True)
  print(harness.load_line())
  ok = all(1 / FACTOR <= r <= FACTOR for r in ratios)
  print(f"{'PASS' if ok else 'FAIL'}: every projected/actual ratio within "
        f"[{1 / FACTOR:.2f}, {FACTOR}]")
  return ok


if __name__ == "__main__":
  sys.exit(0 if main() else 1)
