"""Shared steps of the mixing strategies (Augenstein et al.): local SGD, checks.

*Jointly Learning from Decentralized (Federated) and Centralized Data to
Mitigate Distribution Shift* (Augenstein, Hard, Partridge & Mathews): the SGD
loop over a dataset that parallel training's K centralized steps (Algorithm 2)
and gradient transfer's client update g_k + lambda g_c (Algorithm 4) share,
plus the argument checks of `mixing_parallel`, `mixing_gradient` and
`mixing`.
"""

import collections

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.algorithms import fedavg
from federated_vision.algorithms import mixing_data


def check_optimizer(name: str, optimizer) -> None:
  if not isinstance(optimizer, tff.learning.optimizers.Optimizer):
    raise TypeError(f"{name} must be a tff.learning.optimizers.Optimizer, got "
                    f"{type(optimizer).__name__}")


def check_central(central) -> None:
  if not isinstance(central, mixing_data.CentralizedData):
    raise TypeError("central must be a mixing_data.CentralizedData, got "
                    f"{type(central).__name__}")
  central.validate()


def check_int(name: str, value, minimum: int) -> None:
  if not isinstance(value, (int, np.integer)) or value < minimum:
    raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def local_sgd(model, optimizer, hparams, initial_weights, dataset,
              correction=None, correction_weight: float = 0.0):
  """SGD steps over `dataset` from `initial_weights` (a traced tf.function body).

  Each step applies `optimizer` to grad(loss) + correction_weight * correction
  (gradient transfer's g_k + lambda g_c; plain FedAvg when correction is None).

  Returns:
    (model weights after training, examples seen, sum of batch loss x batch
    examples).
  """
  weights = tff.learning.models.ModelWeights.from_model(model)
  tf.nest.map_structure(lambda v, t: v.assign(t), weights, initial_weights)
  trainable = tuple(tf.nest.flatten(weights.trainable))
  extra = None if correction is None else tuple(
      correction_weight * tf.cast(c, v.dtype)
      for c, v in zip(tf.nest.flatten(correction), trainable))

  def reduce_fn(carry, batch):
    num_examples, loss_sum, opt_state = carry
    with tf.GradientTape() as tape:
      output = model.forward_pass(batch, training=True)
    grads = tape.gradient(output.loss, trainable)
    if extra is not None:
      grads = tuple(g + e for g, e in zip(grads, extra))
    opt_state, updated = optimizer.next(opt_state, trainable, grads)
    for var, value in zip(trainable, updated):
      var.assign(value)
    n = tf.cast(output.num_examples, tf.int64)
    return (num_examples + n, loss_sum + output.loss * tf.cast(n, tf.float32),
            opt_state)

  specs = tuple(tf.TensorSpec(v.shape, v.dtype) for v in trainable)
  opt_state = optimizer.initialize(specs)
  if hparams is not None:
    opt_state = optimizer.set_hparams(opt_state, hparams)
  num_examples, loss_sum, _ = dataset.reduce(
      (tf.constant(0, tf.int64), tf.constant(0.0), opt_state), reduce_fn)
  return weights, num_examples, loss_sum


def central_metrics(num_examples, loss_sum):
  return collections.OrderedDict(
      loss=tf.math.divide_no_nan(loss_sum, tf.cast(num_examples, tf.float32)),
      num_examples=num_examples)


def weights_type_of(model_fn) -> tff.Type:
  return fedavg.build_initial_weights_fn(model_fn).type_signature.result
