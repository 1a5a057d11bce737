"""Client partitions of a labelled example index, and their non-identicalness.

Plain numpy; no TensorFlow. A partition is an ordered mapping
`client_id (str) -> np.ndarray[int64]` of example indices into the source
data set. Clients' index sets are disjoint.

References:
  Hsu, Qi & Brown. Measuring the Effects of Non-Identical Data Distribution for
    Federated Visual Classification. 2019 (Appendix B: Dirichlet synthesis).
  Hsu, Qi & Brown. Federated Visual Classification with Real-World Data
    Distribution. ECCV 2020 (average EMD non-identicalness).
  McMahan et al. Communication-Efficient Learning of Deep Networks from
    Decentralized Data. AISTATS 2017 (pathological shards).
"""

import math
from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

Partition = Dict[str, np.ndarray]


def client_ids(num_clients: int) -> list:
  """Zero-padded ids '000', '001', ... that sort in numeric order."""
  width = len(str(max(num_clients - 1, 0)))
  return [f"{k:0{width}d}" for k in range(num_clients)]


def _check_labels(labels) -> np.ndarray:
  labels = np.asarray(labels)
  if labels.ndim != 1:
    raise ValueError(f"labels must be 1-D, got shape {labels.shape}")
  if labels.size and (labels.min() < 0 or
                      not np.issubdtype(labels.dtype, np.integer)):
    raise ValueError("labels must be non-negative integers")
  return labels.astype(np.int64)


def _distribution(p, num_classes: int, name: str) -> np.ndarray:
  """A validated probability vector over `num_classes` classes."""
  p = np.asarray(p, dtype=np.float64)
  if p.shape != (num_classes,) or np.any(p < 0) or not p.sum() > 0:
    raise ValueError(f"{name} must be {num_classes} non-negative numbers with "
                     f"a positive sum, got shape {p.shape}")
  return p / p.sum()


def dirichlet_partition(labels: Sequence[int],
                        num_clients: int,
                        examples_per_client: int,
                        alpha: float,
                        prior: Optional[Sequence[float]] = None,
                        seed: int = 0) -> Partition:
  """Hsu et al. 2019 Dirichlet partition: q_k ~ Dir(alpha * p) per client.

  Each of the `num_clients` clients receives exactly `examples_per_client`
  examples. For client k a class distribution q_k ~ Dir(alpha * p) is drawn;
  its examples are drawn class by class without replacement; when a class is
  exhausted, q_k is renormalised over the classes still available (Appendix B,
  eq. 5). Clients are filled in order, so later clients see fewer classes.

  `alpha == 0` is the limit: every client holds a single class, drawn from p
  renormalised over the classes that still have `examples_per_client` examples.
  `alpha == inf` gives q_k = p.

  Args:
    labels: integer class label of every example in the source set.
    num_clients: K > 0.
    examples_per_client: n > 0, with K * n <= len(labels).
    alpha: concentration >= 0 (may be `math.inf`).
    prior: p, the prior class distribution; uniform over the classes present
      when None.
    seed: seed of the numpy generator; same seed, same partition.

  Returns:
    An ordered dict client id -> sorted example indices.

  Raises:
    ValueError: naming the argument that is out of range.
  """
  if num_clients <= 0:
    raise ValueError(f"num_clients must be > 0, got {num_clients}")
  if examples_per_client <= 0:
    raise ValueError(f"examples_per_client must be > 0, got {examples_per_client}")
  num_examples = np.asarray(labels).size
  if num_clients * examples_per_client > num_examples:
    raise ValueError(
        f"num_clients * examples_per_client = {num_clients * examples_per_client}"
        f" exceeds the {num_examples} examples available")
  return dirichlet_partition_with_sizes(
      labels, [examples_per_client] * num_clients, alpha, prior, seed)


def dirichlet_partition_with_sizes(labels: Sequence[int],
                                   client_sizes: Sequence[int],
                                   alpha: float,
                                   prior: Optional[Sequence[float]] = None,
                                   seed: int = 0) -> Partition:
  """`dirichlet_partition` with a given size per client (imbalanced splits).

  Args:
    labels: integer class label of every example.
    client_sizes: n_k > 0 for each client; sum(n_k) <= len(labels).
    alpha: concentration >= 0 (may be `math.inf`).
    prior: p; uniform over present classes when None.
    seed: numpy seed.

  Returns:
    An ordered dict client id -> sorted example indices.
  """
  labels = _check_labels(labels)
  client_sizes = [int(n) for n in client_sizes]
  num_clients = len(client_sizes)
  if num_clients == 0 or min(client_sizes) <= 0:
    raise ValueError("client_sizes must be a non-empty list of sizes > 0")
  if sum(client_sizes) > labels.size:
    raise ValueError(
        f"the clients need {sum(client_sizes)} examples but only "
        f"{labels.size} are available")
  if not alpha >= 0:  # Also rejects NaN.
    raise ValueError(f"alpha must be >= 0 (or inf), got {alpha}")
  num_classes = int(labels.max()) + 1
  present = np.bincount(labels, minlength=num_classes) > 0
  if prior is None:
    p = present / present.sum()
  else:
    p = _distribution(prior, num_classes, "prior")

  rng = np.random.default_rng(seed)
  # Each class's examples in random order; `taken[c]` of them are used.
  pools = [rng.permutation(np.flatnonzero(labels == c)) for c in range(num_classes)]
  remaining = np.array([len(pool) for pool in pools], dtype=np.int64)
  taken = np.zeros(num_classes, dtype=np.int64)
  partition: Partition = {}
  for cid, n in zip(client_ids(num_clients), client_sizes):
    if alpha == 0:
      can_fill = (remaining >= n) & (p > 0)
      if not can_fill.any():
        raise ValueError(
            f"alpha=0 gives each client one class, but no class with prior > 0"
            f" has {n} examples left for client {cid}; use fewer clients or "
            "fewer examples_per_client")
      # One class per client: pick it with probability p (renormalised over
      # the classes that can still fill the client), then take all n from it.
      q_fill = np.where(can_fill, p, 0.0)
      q = np.zeros(num_classes, dtype=np.float64)
      q[rng.choice(num_classes, p=q_fill / q_fill.sum())] = 1.0
    elif math.isinf(alpha):
      q = p.copy()
    else:
      q = _dirichlet(rng, alpha * p)
    counts = np.zeros(num_classes, dtype=np.int64)
    need = n
    while need > 0:
      avail = remaining - counts
      q_avail = np.where(avail > 0, q, 0.0)
      if q_avail.sum() <= 0:
        # q_k has no mass left on available classes: eq. 5 is 0/0. Fall back
        # to the prior over what is left (the Dirichlet's base measure).
        q_avail = np.where(avail > 0, p, 0.0)
        if q_avail.sum() <= 0:
          q_avail = (avail > 0).astype(np.float64)
      draws = rng.multinomial(need, q_avail / q_avail.sum())
      got = np.minimum(draws, avail)  # Overflow is redrawn over the rest.
      counts += got
      need -= int(got.sum())
    chosen = []
    for c in np.flatnonzero(counts):
      chosen.append(pools[c][taken[c]:taken[c] + counts[c]])
    taken += counts
    remaining -= counts
    partition[cid] = np.sort(np.concatenate(chosen)).astype(np.int64)
  return partition


def _dirichlet(rng: np.random.Generator, concentration: np.ndarray) -> np.ndarray:
  """Dir(concentration) robust to tiny concentrations (zeros allowed)."""
  q = np.zeros_like(concentration)
  support = concentration > 0
  gammas = rng.standard_gamma(concentration[support])
  top = gammas.max() if gammas.size else 0.0
  if top > 0 and np.isfinite(top):
    # Scale exactly by a power of two so the max is in [0.5, 1): dividing
    # subnormal gammas by their subnormal sum overflows (1/sum = inf).
    scaled = np.ldexp(gammas, -np.frexp(top)[1])
    q[support] = scaled / scaled.sum()
  else:  # All gamma draws underflowed: the alpha -> 0 limit, one class.
    probs = concentration[support] / concentration[support].sum()
    q[np.flatnonzero(support)[rng.choice(support.sum(), p=probs)]] = 1.0
  return q


def heavy_tailed_sizes(num_clients: int, total: int, sigma: float = 1.0,
                       min_size: int = 1, seed: int = 0) -> np.ndarray:
  """Client sizes from a log-normal distribution, summing exactly to `total`.

  Used for imbalanced splits (real federated data sets have a few large
  clients and many small ones). Sizes are >= min_size.
  """
  if num_clients <= 0 or min_size <= 0 or total < num_clients * min_size:
    raise ValueError(f"cannot give {num_clients} clients at least {min_size} "
                     f"of {total} examples")
  if not sigma >= 0:
    raise ValueError(f"sigma must be >= 0, got {sigma}")
  rng = np.random.default_rng(seed)
  w = rng.lognormal(0.0, sigma, num_clients)
  spare = total - num_clients * min_size
  sizes = np.floor(w / w.sum() * spare).astype(np.int64)
  # Hand out the rounding remainder to the largest fractional parts.
  rest = spare - sizes.sum()
  frac = w / w.sum() * spare - sizes
  sizes[np.argsort(-frac, kind="stable")[:rest]] += 1
  return sizes + min_size


def iid_partition(num_examples: int,
                  num_clients: int,
                  examples_per_client: Optional[int] = None,
                  seed: int = 0) -> Partition:
  """Shuffle, then give each client an equal, disjoint share.

  Args:
    num_examples: size of the source set.
    num_clients: K > 0.
    examples_per_client: n; defaults to num_examples // K.
    seed: numpy seed.

  Returns:
    Ordered dict client id -> sorted indices.
  """
  if num_clients <= 0:
    raise ValueError(f"num_clients must be > 0, got {num_clients}")
  n = num_examples // num_clients if examples_per_client is None else examples_per_client
  if n <= 0 or n * num_clients > num_examples:
    raise ValueError(f"examples_per_client={n} with num_clients={num_clients} "
                     f"does not fit in {num_examples} examples")
  order = np.random.default_rng(seed).permutation(num_examples)
  return {cid: np.sort(order[k * n:(k + 1) * n]).astype(np.int64)
          for k, cid in enumerate(client_ids(num_clients))}


def shard_partition(labels: Sequence[int],
                    num_shards: int = 200,
                    shards_per_client: int = 2,
                    seed: int = 0) -> Partition:
  """McMahan et al. pathological non-IID: sort by label, deal out shards.

  The examples, sorted by label (ties in random order), are cut into
  `num_shards` equal shards; each of num_shards // shards_per_client clients
  gets `shards_per_client` random shards. On MNIST, 200 shards of 300 and 2 per
  client give 100 clients that mostly see two digits.

  Args:
    labels: labels of the source set; len(labels) must be divisible by
      num_shards.
    num_shards: S > 0.
    shards_per_client: s > 0 dividing S.
    seed: numpy seed.

  Returns:
    Ordered dict client id -> sorted indices.
  """
  labels = _check_labels(labels)
  if num_shards <= 0 or labels.size % num_shards:
    raise ValueError(f"num_shards={num_shards} must be > 0 and divide the "
                     f"{labels.size} examples")
  if shards_per_client <= 0 or num_shards % shards_per_client:
    raise ValueError(f"shards_per_client={shards_per_client} must be > 0 and "
                     f"divide num_shards={num_shards}")
  rng = np.random.default_rng(seed)
  order = rng.permutation(labels.size)
  order = order[np.argsort(labels[order], kind="stable")]
  shards = order.reshape(num_shards, -1)
  shard_order = rng.permutation(num_shards).reshape(-1, shards_per_client)
  return {cid: np.sort(shards[shard_order[k]].ravel()).astype(np.int64)
          for k, cid in enumerate(client_ids(len(shard_order)))}


def client_shard_partition(labels: Sequence[int], num_clients: int,
                           shards_per_client: int = 2, seed: int = 0
                           ) -> Tuple[Partition, Dict[str, int]]:
  """`shard_partition` for K clients: the first N - N mod (sK) examples cut
  into sK shards (the leftover examples are dropped).

  Returns:
    (partition, {"num_shards", "shards_per_client", "shard_size"}).
  """
  shards = shards_per_client * num_clients
  usable = len(labels) - len(labels) % shards
  part = shard_partition(np.asarray(labels)[:usable], shards,
                         shards_per_client, seed=seed)
  return part, {"num_shards": shards, "shards_per_client": shards_per_client,
                "shard_size": usable // shards}


def class_counts(labels: Sequence[int], partition: Mapping[str, np.ndarray],
                 num_classes: Optional[int] = None) -> np.ndarray:
  """[num_clients, num_classes] matrix of per-client class counts."""
  labels = _check_labels(labels)
  if num_classes is None:
    num_classes = int(labels.max()) + 1
  return np.stack([np.bincount(labels[idx], minlength=num_classes)
                   for idx in partition.values()]).astype(np.int64)


def emd_noniidness(counts: np.ndarray,
                   reference: Optional[Sequence[float]] = None) -> float:
  """Average earth mover's distance of Hsu, Qi & Brown 2020 (Section 3).

  EMD = sum_k (n_k / n) * ||q_k - p||_1, in [0, 2], where q_k is client k's
  class distribution and p the reference distribution. The paper's p is the
  *population distribution of the clients*: the pooled class distribution
  of `counts` (column sums / n), the default. 0 for identical clients; 1.8
  for one-class clients over 10 balanced classes.

  When a partition does not use every example, or was drawn around a
  non-uniform prior, the population distribution differs from that prior;
  pass the prior as `reference` to measure against it instead.

  Args:
    counts: [num_clients, num_classes] non-negative example counts.
    reference: optional p over the classes (normalised here); None = the
      clients' pooled distribution.

  Returns:
    The weighted average L1 distance.
  """
  counts = np.asarray(counts, dtype=np.float64)
  if counts.ndim != 2 or np.any(counts < 0):
    raise ValueError("counts must be a non-negative [clients, classes] matrix")
  n_k = counts.sum(axis=1)
  keep = n_k > 0
  counts, n_k = counts[keep], n_k[keep]
  if not keep.any():
    raise ValueError("counts has no examples")
  if reference is None:
    p = counts.sum(axis=0) / n_k.sum()
  else:
    p = _distribution(reference, counts.shape[1], "reference")
  q_k = counts / n_k[:, None]
  return float(np.sum(n_k / n_k.sum() * np.abs(q_k - p).sum(axis=1)))


def emd_stats(counts: np.ndarray,
              reference: Optional[Sequence[float]] = None) -> dict:
  """{'emd': the paper's EMD} plus {'emd_reference': EMD against p} when the
  given reference p differs from the clients' population distribution."""
  counts = np.asarray(counts, dtype=np.float64)
  out = {"emd": emd_noniidness(counts)}
  if reference is not None:
    p = _distribution(reference, counts.shape[1], "reference")
    pooled = counts.sum(axis=0) / counts.sum()
    if not np.allclose(p, pooled, rtol=0, atol=1e-12):
      out["emd_reference"] = emd_noniidness(counts, p)
  return out


def counts_stats(counts: np.ndarray,
                 reference: Optional[Sequence[float]] = None) -> dict:
  """Summary used in reports of a [clients, classes] count matrix: sizes,
  classes per client, EMD.

  `emd` is the paper's (against the clients' population distribution); with
  a `reference` p that differs from it, `emd_reference` is added (see
  `emd_stats`).
  """
  counts = np.asarray(counts, np.int64)
  if counts.ndim != 2 or counts.shape[0] == 0:
    raise ValueError(f"counts must be a non-empty [clients, classes] matrix, "
                     f"got shape {counts.shape}")
  sizes = counts.sum(axis=1)
  classes_per_client = (counts > 0).sum(axis=1)
  return {
      "num_clients": int(len(sizes)),
      "num_examples": int(sizes.sum()),
      "num_classes": int(counts.shape[1]),
      "examples_per_client": {"min": int(sizes.min()), "max": int(sizes.max()),
                              "mean": float(sizes.mean()),
                              "median": float(np.median(sizes))},
      "classes_per_client": {"min": int(classes_per_client.min()),
                             "max": int(classes_per_client.max()),
                             "mean": float(classes_per_client.mean())},
      **emd_stats(counts, reference),
  }


def partition_stats(labels: Sequence[int], partition: Mapping[str, np.ndarray],
                    num_classes: Optional[int] = None,
                    reference: Optional[Sequence[float]] = None) -> dict:
  """`counts_stats` of a partition of `labels`."""
  return counts_stats(class_counts(labels, partition, num_classes), reference)
