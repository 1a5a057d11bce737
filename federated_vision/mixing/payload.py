"""Bytes of TFF types: what the mixing strategies broadcast beyond the model.

Augenstein et al. (*Jointly Learning from Decentralized (Federated) and
Centralized Data to Mitigate Distribution Shift*) compare the strategies'
communication: gradient transfer (Algorithm 4) broadcasts g_c, one model's
trainable size; `strategies.extra_broadcast_bytes` counts each strategy's extra.
"""

import numpy as np
import tensorflow_federated as tff

from federated_vision.learning import local


def tensor_bytes(type_spec: tff.Type) -> int:
  """Bytes of all tensors in a TFF type (fully defined shapes)."""
  total = 0
  for tensor_type in _tensor_types(type_spec):
    shape = tensor_type.shape
    if shape is None or any(d is None for d in shape):
      raise ValueError(f"tensor {tensor_type} has no fixed byte size")
    size = int(np.prod(shape, dtype=np.int64))
    total += size * np.dtype(tensor_type.dtype).itemsize
  return total


def _tensor_types(type_spec):
  if isinstance(type_spec, tff.TensorType):
    yield type_spec
  elif isinstance(type_spec, tff.StructType):
    for _, member in tff.structure.iter_elements(type_spec):
      yield from _tensor_types(member)
  else:
    raise TypeError(f"not a tensor structure: {type_spec}")


def model_trainable_bytes(model_fn: local.ModelFn) -> int:
  """Bytes of one model's trainable weights (gradient transfer's g_c)."""
  return tensor_bytes(local.weights_type_of(model_fn).trainable)
