"""Exact-property tests of `federated_vision.data.partition`.

Hsu, Qi & Brown 2019 (Dirichlet synthesis), Hsu, Qi & Brown 2020 (EMD),
McMahan et al. 2017 (shards).
"""

import math

import numpy as np
import pytest

from federated_vision.data import partition as P

# Plain numpy, each test well under a second: a loop bug in the exhaustion
# path (Dirichlet draws, eq. 5) fails in 60 s instead of the suite's 600 s.
pytestmark = pytest.mark.timeout(60)

NUM_CLASSES = 10
# The CIFAR-10 training index: 10 balanced classes of 5,000.
CIFAR_LABELS = np.repeat(np.arange(NUM_CLASSES), 5000)
np.random.default_rng(123).shuffle(CIFAR_LABELS)


def _assert_disjoint_exact(partition, n, total):
  sizes = [len(v) for v in partition.values()]
  assert sizes == [n] * len(partition)
  flat = np.concatenate(list(partition.values()))
  assert flat.dtype == np.int64
  assert len(np.unique(flat)) == flat.size  # Disjoint.
  assert flat.min() >= 0 and flat.max() < total
  for idx in partition.values():
    assert np.all(np.diff(idx) > 0)  # Sorted, no repeats.


def test_client_ids_sort_numerically():
  assert P.client_ids(1) == ["0"]
  assert P.client_ids(10) == [str(k) for k in range(10)]
  ids = P.client_ids(100)
  assert ids[0] == "00" and ids[-1] == "99" and sorted(ids) == ids
  assert len(P.client_ids(1000)[0]) == 3


@pytest.mark.parametrize("alpha", [math.inf, 100.0, 1.0, 0.1, 1e-3, 0.0])
def test_dirichlet_disjoint_exact_size_full_use(alpha):
  # 100 clients x 500 uses all 50,000 examples, so exhaustion happens.
  part = P.dirichlet_partition(CIFAR_LABELS, 100, 500, alpha, seed=3)
  assert list(part) == P.client_ids(100)
  _assert_disjoint_exact(part, 500, CIFAR_LABELS.size)
  assert np.array_equal(np.sort(np.concatenate(list(part.values()))),
                        np.arange(CIFAR_LABELS.size))


def test_dirichlet_seed_reproduces_and_varies():
  a = P.dirichlet_partition(CIFAR_LABELS, 50, 200, 0.5, seed=7)
  b = P.dirichlet_partition(CIFAR_LABELS, 50, 200, 0.5, seed=7)
  c = P.dirichlet_partition(CIFAR_LABELS, 50, 200, 0.5, seed=8)
  assert list(a) == list(b)
  assert all(np.array_equal(a[k], b[k]) for k in a)
  assert not all(np.array_equal(a[k], c[k]) for k in a)


def test_alpha_zero_one_class_per_client_and_emd_1_8():
  part = P.dirichlet_partition(CIFAR_LABELS, 100, 500, 0.0, seed=0)
  counts = P.class_counts(CIFAR_LABELS, part)
  assert counts.shape == (100, 10)
  assert np.all((counts > 0).sum(axis=1) == 1)
  assert np.all(counts.max(axis=1) == 500)
  # Balanced and fully used: every class goes to exactly 10 clients.
  assert np.array_equal((counts > 0).sum(axis=0), [10] * 10)
  assert P.emd_noniidness(counts) == pytest.approx(1.8, abs=1e-12)


def test_alpha_zero_class_frequency_follows_prior():
  # 1,000 clients of 10 from a large pool: no exhaustion, class ~ p.
  labels = np.repeat(np.arange(4), 100_000)
  prior = [0.4, 0.3, 0.2, 0.1]
  part = P.dirichlet_partition(labels, 1000, 10, 0.0, prior=prior, seed=1)
  counts = P.class_counts(labels, part)
  assert np.all((counts > 0).sum(axis=1) == 1)
  freq = (counts > 0).sum(axis=0) / 1000
  # Binomial std <= sqrt(.25/1000) = 0.016; tolerance 0.06 is > 3.5 std.
  np.testing.assert_allclose(freq, prior, atol=0.06)


def test_alpha_zero_raises_when_no_class_can_fill_a_client():
  labels = np.repeat(np.arange(3), 10)  # 3 classes of 10.
  with pytest.raises(ValueError, match="alpha=0"):
    P.dirichlet_partition(labels, 4, 6, 0.0)  # Only 3 clients of 6 fit.


@pytest.mark.parametrize("alpha", [math.inf, 1e6])
def test_large_alpha_client_proportions_close_to_prior(alpha):
  # Non-uniform prior; 40 clients x 500 from 4 x 50,000: no exhaustion.
  labels = np.repeat(np.arange(4), 50_000)
  prior = np.array([0.4, 0.3, 0.2, 0.1])
  part = P.dirichlet_partition(labels, 40, 500, alpha, prior=prior, seed=2)
  props = P.class_counts(labels, part) / 500
  # Stated tolerance: multinomial std <= sqrt(.25/500) = 0.0224; |q_k - p|
  # <= 0.1 per class (> 4.4 std) for every client, and the client average
  # within 0.02 (> 5.6 std of the mean).
  assert np.abs(props - prior).max() <= 0.1
  np.testing.assert_allclose(props.mean(axis=0), prior, atol=0.02)


def test_small_alpha_is_more_skewed_than_large_alpha():
  emd = {a: P.emd_noniidness(P.class_counts(
      CIFAR_LABELS, P.dirichlet_partition(CIFAR_LABELS, 100, 500, a, seed=0)))
         for a in (100.0, 1.0, 0.1, 0.0)}
  assert emd[100.0] < emd[1.0] < emd[0.1] < emd[0.0]
  assert emd[100.0] < 0.4 and emd[0.1] > 1.4


class _SpyRng:
  """Delegates to a numpy Generator and records multinomial probabilities."""

  def __init__(self, rng):
    self._rng = rng
    self.pvals = []

  def multinomial(self, n, pvals):
    self.pvals.append(np.array(pvals))
    return self._rng.multinomial(n, pvals)

  def __getattr__(self, name):
    return getattr(self._rng, name)


@pytest.mark.parametrize("alpha", [100.0, 1.0, 0.05, 0.0])
def test_exhaustion_never_asks_for_an_empty_class(alpha, monkeypatch):
  # Class 1 has no examples yet has prior mass; class 3 is tiny. All examples
  # are used, so every client after the first exhausts classes.
  labels = np.concatenate([np.full(600, 0), np.full(300, 2), np.full(100, 3)])
  spies = []
  real = np.random.default_rng

  def spy_rng(seed):
    spies.append(_SpyRng(real(seed)))
    return spies[-1]
  monkeypatch.setattr(P.np.random, "default_rng", spy_rng)
  n, k = (100, 10)
  part = P.dirichlet_partition(labels, k, n, alpha,
                               prior=[0.25, 0.25, 0.25, 0.25], seed=4)
  _assert_disjoint_exact(part, n, labels.size)
  counts = P.class_counts(labels, part, num_classes=4)
  assert counts[:, 1].sum() == 0
  assert np.array_equal(counts.sum(axis=0), [600, 0, 300, 100])
  pvals = np.stack(spies[0].pvals)
  assert pvals.shape[1] == 4
  assert np.all(pvals[:, 1] == 0)  # The empty class is never requested.
  np.testing.assert_allclose(pvals.sum(axis=1), 1.0)
  if alpha == 0:
    # One class per client; tiny class 3 (100 examples) fills one client.
    assert np.all((counts > 0).sum(axis=1) == 1)


def test_exhaustion_later_clients_only_get_available_classes():
  # Class 0 holds only 50 examples; after it is used up no client gets more.
  labels = np.concatenate([np.full(50, 0), np.full(950, 1)])
  part = P.dirichlet_partition(labels, 10, 100, 0.01, prior=[0.5, 0.5], seed=0)
  counts = P.class_counts(labels, part)
  assert np.array_equal(counts.sum(axis=0), [50, 950])
  assert np.all(counts.sum(axis=1) == 100)


@pytest.mark.parametrize("kwargs,name", [
    (dict(num_clients=0), "num_clients"),
    (dict(examples_per_client=0), "examples_per_client"),
    (dict(examples_per_client=10_000), "num_clients \\* examples_per_client"),
    (dict(alpha=-1.0), "alpha"),
    (dict(alpha=float("nan")), "alpha"),
    (dict(prior=[0.5, 0.5]), "prior"),
    (dict(prior=[-1.0] + [0.2] * 9), "prior"),
])
def test_dirichlet_argument_errors(kwargs, name):
  args = dict(labels=CIFAR_LABELS, num_clients=100, examples_per_client=500,
              alpha=1.0)
  args.update(kwargs)
  with pytest.raises(ValueError, match=name):
    P.dirichlet_partition(**args)


def test_labels_validation():
  with pytest.raises(ValueError, match="1-D"):
    P.dirichlet_partition(np.zeros((2, 2), int), 1, 1, 1.0)
  with pytest.raises(ValueError, match="non-negative integers"):
    P.dirichlet_partition([0, -1, 1], 1, 1, 1.0)
  with pytest.raises(ValueError, match="non-negative integers"):
    P.dirichlet_partition([0.5, 1.0], 1, 1, 1.0)


def test_iid_partition_exact_and_emd_near_zero():
  part = P.iid_partition(50_000, 100, seed=0)
  _assert_disjoint_exact(part, 500, 50_000)
  again = P.iid_partition(50_000, 100, seed=0)
  assert all(np.array_equal(part[k], again[k]) for k in part)
  emd = P.emd_noniidness(P.class_counts(CIFAR_LABELS, part))
  # Sampling noise only: E|q_kc - 0.1| ~ sqrt(2/pi) * sqrt(.09/500) = 0.0107
  # per class, ~0.107 summed over 10 classes; 1.8 is the one-class extreme.
  assert 0.07 < emd < 0.14
  # Larger clients -> smaller EMD (noise ~ 1/sqrt(n)).
  big = P.emd_noniidness(P.class_counts(CIFAR_LABELS,
                                        P.iid_partition(50_000, 10, seed=0)))
  assert big < emd / 2
  with pytest.raises(ValueError, match="examples_per_client"):
    P.iid_partition(10, 3, examples_per_client=4)
  with pytest.raises(ValueError, match="num_clients"):
    P.iid_partition(10, 0)


def test_emd_exact_values():
  # Stratified split: every client has the population distribution -> 0.
  assert P.emd_noniidness(np.full((100, 10), 50)) == 0.0
  # Two one-class clients over two classes: |1-.5| + |0-.5| = 1.
  assert P.emd_noniidness([[2, 0], [0, 2]]) == pytest.approx(1.0)
  assert P.emd_noniidness([[3, 1], [1, 3]]) == pytest.approx(0.5)
  # Weighted by client size: q = (6, 2)/8 = (.75, .25).
  # client 0: (1, 0) -> .5; client 1: (.5, .5) -> .5; weights 4/8, 4/8.
  assert P.emd_noniidness([[4, 0], [2, 2]]) == pytest.approx(0.5)
  # One-class clients over 10 balanced classes: 0.9 + 9 * 0.1 = 1.8.
  assert P.emd_noniidness(np.eye(10) * 7) == pytest.approx(1.8)
  # Empty clients are ignored.
  assert P.emd_noniidness([[2, 0], [0, 2], [0, 0]]) == pytest.approx(1.0)
  with pytest.raises(ValueError):
    P.emd_noniidness([[-1, 2]])
  with pytest.raises(ValueError):
    P.emd_noniidness([[0, 0]])


def _emd_reference(counts, p):
  """sum_k n_k / n * ||q_k - p||_1, written out with numpy."""
  counts = np.asarray(counts, float)
  counts = counts[counts.sum(1) > 0]
  n_k = counts.sum(1)
  return sum(n / n_k.sum() * np.abs(c / n - p).sum() for c, n in zip(counts, n_k))


def test_emd_reference_distribution():
  counts = np.array([[4, 0, 0], [2, 2, 0], [0, 0, 0]])
  pooled = np.array([6, 2, 0]) / 8
  # Default: the clients' population (pooled) distribution, the paper's p.
  assert P.emd_noniidness(counts) == pytest.approx(
      _emd_reference(counts, pooled))
  # An explicit prior: uniform over 3 classes (normalised from counts).
  uniform = np.full(3, 1 / 3)
  # client 0: |1-1/3|+1/3+1/3 = 4/3; client 1: 1/6+1/6+1/3 = 2/3 -> mean 1.
  assert P.emd_noniidness(counts, reference=[5, 5, 5]) == pytest.approx(1.0)
  assert P.emd_noniidness(counts, uniform) == pytest.approx(
      _emd_reference(counts, uniform))
  assert P.emd_noniidness(counts, pooled) == P.emd_noniidness(counts)
  with pytest.raises(ValueError, match="reference must be 3"):
    P.emd_noniidness(counts, [0.5, 0.5])
  with pytest.raises(ValueError, match="reference"):
    P.emd_noniidness(counts, [0, 0, 0])
  # Statistics carry both when they differ, only the paper's when not.
  assert P.emd_stats(counts) == {"emd": pytest.approx(0.5)}
  assert P.emd_stats(counts, pooled) == {"emd": pytest.approx(0.5)}
  assert P.emd_stats(counts, uniform) == {"emd": pytest.approx(0.5),
                                          "emd_reference": pytest.approx(1.0)}


def test_partition_stats_against_the_prior_when_not_every_example_is_used():
  # A Dirichlet partition of half the examples: its population drifts from
  # the data's uniform prior; partition_stats reports both EMDs.
  part = P.dirichlet_partition(CIFAR_LABELS, 10, 100, 0.1, seed=3)
  prior = np.bincount(CIFAR_LABELS) / CIFAR_LABELS.size
  counts = P.class_counts(CIFAR_LABELS, part)
  stats = P.partition_stats(CIFAR_LABELS, part, reference=prior)
  assert stats["emd"] == pytest.approx(_emd_reference(
      counts, counts.sum(0) / counts.sum()))
  assert stats["emd_reference"] == pytest.approx(_emd_reference(counts, prior))
  assert stats["emd_reference"] != pytest.approx(stats["emd"])
  assert "emd_reference" not in P.partition_stats(CIFAR_LABELS, part)


def test_shard_partition_mcmahan_mnist():
  labels = np.repeat(np.arange(10), 6000)  # MNIST training set size.
  part = P.shard_partition(labels, 200, 2, seed=0)
  assert len(part) == 100
  _assert_disjoint_exact(part, 600, 60_000)
  counts = P.class_counts(labels, part)
  # 6,000 per class / 300 per shard: every shard is one class.
  assert np.all((counts > 0).sum(axis=1) <= 2)
  assert np.all(np.isin(counts, [0, 300, 600]))
  with pytest.raises(ValueError, match="num_shards"):
    P.shard_partition(labels, 7)
  with pytest.raises(ValueError, match="shards_per_client"):
    P.shard_partition(labels, 200, 3)


def test_client_shard_partition_drops_the_remainder():
  labels = np.repeat(np.arange(10), 143)  # 1,430 = 40 shards of 35 + 30.
  part, info = P.client_shard_partition(labels, 20, seed=1)
  assert info == {"num_shards": 40, "shards_per_client": 2, "shard_size": 35}
  _assert_disjoint_exact(part, 70, 1400)
  assert max(max(idx) for idx in part.values()) < 1400  # Tail dropped.
  # 35-example shards of 143-example classes: at most 2 classes per shard.
  assert np.all((P.class_counts(labels, part) > 0).sum(axis=1) <= 4)
  again, _ = P.client_shard_partition(labels, 20, seed=1)
  assert all(np.array_equal(part[c], again[c]) for c in part)


def test_class_counts_and_stats():
  labels = np.array([0, 0, 1, 2, 2, 2])
  part = {"a": np.array([0, 2]), "b": np.array([1, 3, 4, 5])}
  counts = P.class_counts(labels, part)
  assert counts.tolist() == [[1, 1, 0], [1, 0, 3]]
  assert P.class_counts(labels, part, num_classes=5).shape == (2, 5)
  stats = P.partition_stats(labels, part)
  assert stats["num_clients"] == 2 and stats["num_examples"] == 6
  assert stats["num_classes"] == 3
  assert stats["examples_per_client"] == {"min": 2, "max": 4, "mean": 3.0,
                                          "median": 3.0}
  assert stats["classes_per_client"] == {"min": 2, "max": 2, "mean": 2.0}
  # q = (2, 1, 3)/6; a: (.5,.5,0) -> |.5-1/3|+|.5-1/6|+|0-.5| = 1; weight 2/6.
  # b: (.25,0,.75) -> |.25-1/3|+1/6+|.75-.5| = .5; weight 4/6.
  assert stats["emd"] == pytest.approx(2 / 6 * 1.0 + 4 / 6 * 0.5)
