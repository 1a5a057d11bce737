"""MNIST's four IDX files of random images, as `--data_source=archive
--archive_path=DIR` reads them (a stand-in: no data set is downloaded)."""

import gzip
import os
import struct

import numpy as np


def write_mnist(directory, n_train=30, n_test=7, seed=0, bad_magic=False,
                gz=True):
  rng = np.random.default_rng(seed)
  os.makedirs(directory, exist_ok=True)
  out = {}
  for prefix, n in (("train", n_train), ("t10k", n_test)):
    x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    y = (np.arange(n) % 10).astype(np.uint8)
    files = {f"{prefix}-images-idx3-ubyte":
                 struct.pack(">iiii", 2049 if bad_magic else 2051, n, 28, 28)
                 + x.tobytes(),
             f"{prefix}-labels-idx1-ubyte": struct.pack(">ii", 2049, n)
                 + y.tobytes()}
    for name, data in files.items():
      if gz:
        with gzip.open(os.path.join(directory, name + ".gz"), "wb") as f:
          f.write(data)
      else:
        with open(os.path.join(directory, name), "wb") as f:
          f.write(data)
    out[prefix] = (x, y)
  return out
