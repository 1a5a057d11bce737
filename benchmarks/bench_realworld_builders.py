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
import hashlib
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


# ----------------------------------------------------------------------------
# Real-scale synthetic metadata: no images, the real formats.

def write_inaturalist_at_scale(root: str, num_train: int = 579_184,
                               num_val: int = 95_986, num_categories: int = 5_089,
                               num_big_categories: int = 1_203,
                               num_users: int = 30_000, num_cities: int = 400,
                               seed: int = 0) -> dict:
  """iNaturalist-2017-sized `train2017.json`, `train2017_locations.json`,
  `val2017.json` with clustered observations.

  Exactly `num_big_categories` categories have >= 100 training images, each
  at least 130, so that >= 100 of them have a user id and coordinates (the
  balancing keeps num_big_categories x 100). Users have power-law activity
  and a home city (cities have power-law populations); observations scatter
  ~0.3 degrees around the home city, 10% around a random other city. 1% of
  locations have no user id, 4% no coordinates.

  Returns:
    Summary counts.
  """
  rng = np.random.default_rng(seed)
  small = rng.integers(2, 100, num_categories - num_big_categories)
  big_total = num_train - int(small.sum())
  if big_total < 130 * num_big_categories:
    raise ValueError("num_train too small for the requested big categories")
  w = rng.lognormal(0, 1, num_big_categories)
  big = 130 + rng.multinomial(big_total - 130 * num_big_categories, w / w.sum())
  sizes = np.concatenate([big, small])
  cat_of = rng.permutation(np.repeat(np.arange(num_categories), sizes))
  supercategories = ("Plantae", "Aves", "Insecta", "Reptilia", "Mammalia")
  categories = [{"id": c, "name": f"Species {c:04d}",
                 "supercategory": supercategories[c % len(supercategories)]}
                for c in range(num_categories)]
  city = np.stack([rng.uniform(-45, 65, num_cities),
                   rng.uniform(-160, 170, num_cities)], 1)
  city_p = 1 / np.arange(1, num_cities + 1)
  city_p /= city_p.sum()
  user_p = 1 / np.arange(1, num_users + 1) ** 1.1
  user_p /= user_p.sum()
  home = rng.choice(num_cities, num_users, p=city_p)
  user = rng.choice(num_users, num_train, p=user_p)
  where = np.where(rng.random(num_train) < 0.1,
                   rng.choice(num_cities, num_train, p=city_p), home[user])
  lat = np.clip(city[where, 0] + rng.normal(0, 0.3, num_train), -89.9, 89.9)
  lon = np.clip(city[where, 1] + rng.normal(0, 0.3, num_train), -179.9, 179.9)
  no_user = rng.random(num_train) < 0.01
  no_xy = rng.random(num_train) < 0.04
  os.makedirs(root, exist_ok=True)

  def dump(prefix, ids, cats, with_locations):
    names = [f"train_val_images/{categories[c]['supercategory']}/"
             f"{categories[c]['name']}/{hashlib.md5(str(i).encode()).hexdigest()}.jpg"
             for i, c in zip(ids.tolist(), cats.tolist())]
    meta = {"info": {"year": 2017, "description": "synthetic at scale"},
            "licenses": [],
            "images": [{"id": i, "file_name": n, "width": 800, "height": 600}
                       for i, n in zip(ids.tolist(), names)],
            "annotations": [{"id": i, "image_id": i, "category_id": c}
                            for i, c in zip(ids.tolist(), cats.tolist())],
            "categories": categories}
    with open(os.path.join(root, f"{prefix}2017.json"), "w") as f:
      json.dump(meta, f)
    if with_locations:
      locs = [{"id": i,
               "lat": None if no_xy[k] else round(float(lat[k]), 5),
               "lon": None if no_xy[k] else round(float(lon[k]), 5),
               "date": "2016-06-01 12:00:00+00:00",
               "user_id": None if no_user[k] else int(user[k])}
              for k, i in enumerate(ids.tolist())]
      with open(os.path.join(root, f"{prefix}2017_locations.json"), "w") as f:
        json.dump(locs, f)

  dump("train", np.arange(num_train), cat_of, True)
  val_cats = rng.integers(0, num_categories, num_val)
  dump("val", np.arange(num_train, num_train + num_val), val_cats, False)
  return {"num_train": num_train, "num_val": num_val,
          "num_categories": num_categories,
          "num_categories_ge_100": int((sizes >= 100).sum()),
          "num_no_user": int(no_user.sum()), "num_no_coordinates": int(no_xy.sum())}


def write_gld_at_scale(root: str, num_images: int = 1_580_470,
                       num_landmarks: int = 81_313, num_authors: int = 150_000,
                       seed: int = 0) -> dict:
  """GLD-v2-clean-sized `train_clean.csv` and `train_attribution.csv`.

  Landmark sizes are log-normal (heavy tail); author activity is power-law;
  1% of images have no author.
  """
  rng = np.random.default_rng(seed)
  w = rng.lognormal(0, 1.5, num_landmarks)
  landmark = rng.choice(num_landmarks, num_images, p=w / w.sum())
  # Make sure every landmark id has an image (GLD ids are all used).
  landmark[:num_landmarks] = np.arange(num_landmarks)
  p = 1 / np.arange(1, num_authors + 1) ** 1.05
  author = rng.choice(num_authors, num_images, p=p / p.sum())
  no_author = rng.random(num_images) < 0.01
  ids = [f"{x:016x}" for x in rng.integers(0, 2**63, num_images, dtype=np.int64).tolist()]
  os.makedirs(root, exist_ok=True)
  order = np.argsort(landmark, kind="stable")
  bounds = np.flatnonzero(np.diff(landmark[order])) + 1
  with open(os.path.join(root, "train_clean.csv"), "w") as f:
    f.write("landmark_id,images\n")
    for group in np.split(order, bounds):
      f.write(f"{int(landmark[group[0]]) * 2 + 1},"
              f"{' '.join(ids[i] for i in group.tolist())}\n")
  with open(os.path.join(root, "train_attribution.csv"), "w") as f:
    f.write("id,url,author,license,title\n")
    for i in range(num_images):
      a = "" if no_author[i] else f"Author_{int(author[i])}"
      f.write(f"{ids[i]},http://commons.wikimedia.org/wiki/File:{ids[i]}.jpg,"
              f"{a},CC-BY-SA-3.0,\"Photo {i}, synthetic\"\n")
  return {"num_images": num_images, "num_landmarks": num_landmarks,
          "num_authors": num_authors, "num_no_author": int(no_author.sum())}


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
  from federated_vision.data import split_io  # pylint: disable=g-import-not-at-top
  from federated_vision.realworld import s2_cells  # pylint: disable=g-import-not-at-top
  work = args.work_dir or tempfile.mkdtemp(prefix="bench_realworld_")
  os.makedirs(work, exist_ok=True)
  results = {}
  ok = True
  try:
    inat = os.path.join(work, "inat_meta")
    t = time.perf_counter()
    gen = write_inaturalist_at_scale(inat)
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
      for n_max in split_io.GEO_MAX_EXAMPLES[::-1]:
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
    for n_max in split_io.GEO_MAX_EXAMPLES[::-1]:
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
      gen = write_gld_at_scale(gld)
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
