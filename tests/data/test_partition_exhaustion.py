"""The Dirichlet partition's class-exhaustion path, forced, with exact counts.

Hsu et al. 2019, Appendix B: a client's examples are drawn class by class
without replacement; when a class is exhausted, q_k is renormalised over the
classes still available (eq. 5). When q_k has no mass left on any available
class, `partition.dirichlet_partition_with_sizes` falls back to the prior over
what is left, then to uniform (ours: eq. 5 is 0/0 there). A bug in that loop
(e.g. drawing again from an exhausted class) would spin forever, so each test
has a short timeout: it fails, naming itself, instead of hanging the suite.
"""

import math

import numpy as np
import pytest

from federated_vision.data import partition as P

# Pure numpy on a few dozen labels: milliseconds. Ours: 10 s leaves room for
# a loaded machine and is still far from the suite's 600 s default.
FAST = pytest.mark.timeout(10)


def _counts(labels, part, num_classes):
  return np.stack([np.bincount(labels[idx], minlength=num_classes)
                   for idx in part.values()])


@FAST
@pytest.mark.parametrize("alpha", [0.05, 1.0, math.inf])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_q_k_on_an_exhausted_class_only_falls_back_to_what_is_left(alpha, seed):
  # The prior puts all mass on class 0 (3 examples), so q_k = (1, 0) for any
  # alpha > 0; the client needs 10: after 3 draws q_k has no mass left on an
  # available class and the other 7 come from class 1.
  labels = np.array([0] * 3 + [1] * 20)
  part = P.dirichlet_partition_with_sizes(labels, [10], alpha,
                                          prior=[1.0, 0.0], seed=seed)
  assert list(part) == ["0"]
  np.testing.assert_array_equal(_counts(labels, part, 2), [[3, 7]])
  assert set(part["0"][:3].tolist()) == {0, 1, 2}  # Sorted: class 0 first.


@FAST
@pytest.mark.parametrize("alpha", [0.1, 1.0, math.inf])
@pytest.mark.parametrize("seed", [0, 3])
def test_later_clients_fall_back_past_the_prior_to_the_classes_left(alpha,
                                                                    seed):
  # Classes 0 and 1 (5 examples each) carry the whole prior; class 2 (50)
  # none. Client 0 takes all ten of classes 0 and 1; clients 1 and 2 find
  # q_k and the prior both zero on what is left and take class 2.
  labels = np.array([0] * 5 + [1] * 5 + [2] * 50)
  part = P.dirichlet_partition_with_sizes(labels, [10, 10, 10], alpha,
                                          prior=[0.5, 0.5, 0.0], seed=seed)
  np.testing.assert_array_equal(_counts(labels, part, 3),
                                [[5, 5, 0], [0, 0, 10], [0, 0, 10]])
  used = np.concatenate(list(part.values()))
  assert len(np.unique(used)) == used.size == 30  # Disjoint.


@FAST
def test_exhausting_every_class_uses_each_example_exactly_once():
  # 7 clients take all 70 examples: every class runs out along the way.
  rng = np.random.default_rng(5)
  labels = rng.permutation(np.repeat([0, 1, 2, 3], [40, 20, 7, 3]))
  part = P.dirichlet_partition_with_sizes(labels, [10] * 7, 0.01, seed=9)
  used = np.sort(np.concatenate(list(part.values())))
  np.testing.assert_array_equal(used, np.arange(70))
  counts = _counts(labels, part, 4)
  np.testing.assert_array_equal(counts.sum(axis=1), [10] * 7)
  np.testing.assert_array_equal(counts.sum(axis=0), [40, 20, 7, 3])
