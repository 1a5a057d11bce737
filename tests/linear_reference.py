"""A linear model and its numpy reference, for exact-value algorithm tests.

The model is logits = x W (no bias) with mean softmax cross-entropy; the numpy
functions compute its gradient, local SGD over batches in order and a FedAvg
round (McMahan et al. 2017, Algorithm 1) by hand. Tests build client datasets
with shuffling off, so every client's batch order is known.
"""

import collections

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

F, C = 4, 3
B = 3           # client batch size
LR = 0.1        # client learning rate
INPUT_SPEC = collections.OrderedDict(
    x=tf.TensorSpec([None, F], tf.float32), y=tf.TensorSpec([None], tf.int64))


def keras_model():
  return tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=(F,)),
      tf.keras.layers.Dense(C, use_bias=False, kernel_initializer=
                            tf.keras.initializers.GlorotUniform(seed=3))])


def model_fn():
  return tff.learning.models.from_keras_model(
      keras_model(), input_spec=INPUT_SPEC,
      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      metrics=[tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy")])


def sgd(lr=LR):
  return tff.learning.optimizers.build_sgdm(learning_rate=lr)


def np_grad(w, x, y):
  """Gradient of mean softmax cross-entropy of logits x w."""
  logits = x @ w
  p = np.exp(logits - logits.max(axis=1, keepdims=True))
  p /= p.sum(axis=1, keepdims=True)
  p[np.arange(len(y)), y] -= 1.0
  return x.T @ p / len(y)


def np_local_sgd(w, x, y, lr=LR, batch=B, extra=None):
  for i in range(0, len(y), batch):
    g = np_grad(w, x[i:i + batch], y[i:i + batch])
    w = w - lr * (g if extra is None else g + extra)
  return w


def np_fedavg_round(w, clients, extra=None):
  """clients: [(x, y)]; deltas weighted by examples trained on."""
  deltas = [w - np_local_sgd(w, x, y, extra=extra) for x, y in clients]
  n = np.array([len(y) for _, y in clients], np.float64)
  return w - sum(d * k for d, k in zip(deltas, n)) / n.sum()
