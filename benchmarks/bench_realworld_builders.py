"""Real-world split builders at real scale (Hsu, Qi & Brown 2020).

Generates synthetic metadata in the real formats at real scale (579,184
iNaturalist 2017 training records with user ids and clustered coordinates;
GLD-v2-clean-sized CSVs: 1,580,470 images, 81,313 landmarks) and times:

* `datasets/build_inaturalist.py` with all six N_max values (one process),
  and once per N_max: wall time and peak RSS of each process;
* the geo maths alone on all 579,184 points (leaf ids once, then each N_max);
* `datasets/build_landmarks.py`;
* opening the ClientData of the resulting 120k-example user split
  (`check_images='none'`: no image is read).

Run: `python -m benchmarks.bench_realworld_builders [--work_dir=DIR]`.
Exit status 1 if the all-N_max iNaturalist build exceeds 5 minutes or 4 GB,
or opening the 120k split takes 10 s or more.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUDGET_SEC = 300.0
BUDGET_BYTES = 4 << 30
OPEN_BUDGET_SEC = 10.0


def run_binary(args, log_path):
  """(wall seconds, peak RSS bytes) of a child process; raises on failure."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", MPLBACKEND="Agg")
  start = time.perf_counter()
  with open(log_path, "w") as log:
    proc = subprocess.Popen([sys.executable] + args, stdout=log,
                            stderr=subprocess.STDOUT, env=env, cwd=REPO)
    _, status, usage = os.wait4(proc.pid, 0)
  wall = time.perf_counter() - start
  proc.returncode = os.waitstatus_to_exitcode(status)
  if proc.returncode:
    raise RuntimeError(f"{args[0]} failed ({proc.returncode}); see {log_path}")
  return wall, usage.ru_maxrss * 1024


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--work_dir", default=None,
                      help="Where to write metadata/outputs (default: temp, "
                           "deleted afterwards).")
  parser.add_argument("--skip_per_n_max", action="store_true",
                      help="Skip the six single-N_max builder runs.")
  parser.add_argument("--skip_landmarks", action="store_true")
  args = parser.parse_args(argv)
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  from federated_vision.realworld import fixtures, s2_cells, split_csv  # pylint: disable=g-import-not-at-top
  work = args.work_dir or tempfile.mkdtemp(prefix="bench_realworld_")
  os.makedirs(work, exist_ok=True)
  results = {}
  ok = True
  try:
    inat = os.path.join(work, "inat_meta")
    t = time.perf_counter()
    gen = fixtures.write_inaturalist_at_scale(inat)
    print(f"generated iNaturalist metadata {gen} in {time.perf_counter() - t:.1f}s")
    base = [os.path.join(REPO, "datasets", "build_inaturalist.py"),
            f"--train_json={inat}/train2017.json",
            f"--train_locations={inat}/train2017_locations.json",
            f"--val_json={inat}/val2017.json"]
    out_all = os.path.join(work, "inat_out")
    wall, rss = run_binary(base + [f"--output_dir={out_all}"],
                           os.path.join(work, "inat_all.log"))
    stats = json.load(open(os.path.join(out_all, "stats.json")))
    results["inaturalist_all_n_max"] = {"seconds": wall, "peak_rss_mb": rss / 2**20}
    print(f"build_inaturalist (all N_max, plots): {wall:.1f}s, "
          f"peak RSS {rss / 2**20:.0f} MB")
    for name, s in stats["splits"].items():
      print(f"  {name:10s} clients={s['num_clients']:6d} "
            f"examples={s['num_examples']:6d} classes={s['num_classes']} "
            f"EMD={s['emd']:.3f}")
    ok &= wall < BUDGET_SEC and rss < BUDGET_BYTES
    if not args.skip_per_n_max:
      for n_max in split_csv.GEO_MAX_EXAMPLES[::-1]:
        out = os.path.join(work, f"inat_{n_max}")
        wall, rss = run_binary(base + [f"--output_dir={out}",
                                       f"--geo_max_examples={n_max}",
                                       "--noplots"],
                               os.path.join(work, f"inat_{n_max}.log"))
        results[f"inaturalist_n_max_{n_max}"] = {"seconds": wall,
                                                 "peak_rss_mb": rss / 2**20}
        print(f"build_inaturalist --geo_max_examples={n_max}: {wall:.1f}s, "
              f"peak RSS {rss / 2**20:.0f} MB")
        shutil.rmtree(out)
    # Geo maths alone on all 579,184 training points.
    with open(os.path.join(inat, "train2017_locations.json")) as f:
      locs = json.load(f)
    xy = np.array([(l["lat"], l["lon"]) for l in locs if l["lat"] is not None])
    del locs
    t = time.perf_counter()
    leaves = s2_cells.leaf_cell_ids(xy[:, 0], xy[:, 1])
    leaf_s = time.perf_counter() - t
    print(f"geo maths on {len(xy)} points: leaf cell ids {leaf_s:.2f}s")
    results["geo_leaf_ids_seconds"] = leaf_s
    for n_max in split_csv.GEO_MAX_EXAMPLES[::-1]:
      t = time.perf_counter()
      part = s2_cells.adaptive_partition(leaves, n_max)
      s = time.perf_counter() - t
      results[f"geo_partition_{n_max}_seconds"] = s
      print(f"  N_max={n_max:6d}: {len(part.cells):6d} cells in {s:.3f}s")
    # Opening the 120k user split.
    from federated_vision.realworld import image_data  # pylint: disable=g-import-not-at-top
    t = time.perf_counter()
    fds = image_data.load_inaturalist(
        os.path.join(out_all, "inaturalist_user_120k.csv"), inat,
        config=image_data.LoaderConfig(check_images="none",
                                       cache_dir=os.path.join(work, "cache")))
    open_s = time.perf_counter() - t
    results["open_user_120k_seconds"] = open_s
    print(f"open ClientData user_120k: {len(fds.client_data.client_ids)} clients, "
          f"{sum(fds.client_sizes.values())} examples in {open_s:.2f}s "
          "(no image read)")
    ok &= open_s < OPEN_BUDGET_SEC
    if not args.skip_landmarks:
      gld = os.path.join(work, "gld_meta")
      t = time.perf_counter()
      gen = fixtures.write_gld_at_scale(gld)
      print(f"generated GLD-v2-clean metadata {gen} in "
            f"{time.perf_counter() - t:.1f}s")
      out = os.path.join(work, "gld_out")
      wall, rss = run_binary(
          [os.path.join(REPO, "datasets", "build_landmarks.py"),
           f"--train_clean_csv={gld}/train_clean.csv",
           f"--attribution_csv={gld}/train_attribution.csv",
           f"--output_dir={out}"], os.path.join(work, "gld.log"))
      st = json.load(open(os.path.join(out, "stats.json")))
      results["landmarks"] = {"seconds": wall, "peak_rss_mb": rss / 2**20,
                              "users": st["train"]["num_clients"],
                              "train": st["train"]["num_examples"],
                              "landmarks": st["train"]["num_classes"],
                              "test": st["test"]["num_examples"],
                              "iterations": st["fixed_point_iterations"]}
      print(f"build_landmarks: {wall:.1f}s, peak RSS {rss / 2**20:.0f} MB; "
            f"{results['landmarks']}")
  finally:
    if args.work_dir is None:
      shutil.rmtree(work, ignore_errors=True)
  print(json.dumps(results, indent=1, sort_keys=True))
  print("OK" if ok else "OVER BUDGET")
  return 0 if ok else 1


if __name__ == "__main__":
  sys.exit(main())
