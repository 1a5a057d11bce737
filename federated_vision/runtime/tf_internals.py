"""The TensorFlow internals the data pipeline needs, each with why."""

import contextlib

import tensorflow as tf
from tensorflow.python.eager import context as eager_context


@contextlib.contextmanager
def op_seed_only():
  """Makes seeded ops created in the body depend on their own seed only.

  TF combines an op's seed with the global seed (`tf.random.set_seed`, or the
  graph seed TFF's tracing inherits from it): `random_seed.get_seed` returns
  (global, op). So a process that had set a global seed (e.g. a centralized
  baseline trained earlier in the same process, or the user's script) would
  shuffle clients' data differently from a fresh process with the same
  --seed; and with a global seed of 0 it fails outright ("symbolic Tensor as
  a Python bool") on our tensor seeds. In the body the global / graph seed
  is None, as in a fresh process; it is restored afterwards.

  Why private: TF has no public getter of the eager global seed, and
  `tf.random.set_seed` re-creates the context's op-seed generator (`_rng`)
  and clears its kernel cache, so restoring a seed through it would not
  restore the caller's state; the eager context's `_seed` and `_rng` are
  saved and put back unchanged instead.
  """
  if tf.executing_eagerly():
    ctx = eager_context.context()
    saved = (ctx._seed, getattr(ctx, "_rng", None))  # pylint: disable=protected-access
    ctx._seed = None  # pylint: disable=protected-access
    try:
      yield
    finally:
      ctx._seed, ctx._rng = saved  # pylint: disable=protected-access
  else:
    graph = tf.compat.v1.get_default_graph()
    saved = graph.seed
    graph.seed = None
    try:
      yield
    finally:
      graph.seed = saved
