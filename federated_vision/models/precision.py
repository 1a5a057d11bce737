"""Mixed precision of the Keras models (--mixed_precision), set per layer.

`bfloat16` builds a model whose layers compute in bfloat16 (Keras policy
`mixed_bfloat16`: 8-bit mantissa activations and gradients) while its
variables stay float32 (the policy's variable dtype). So TFF sees float32
weights whatever the precision: the model's TFF type, the server's
aggregation and the checkpoints are float32. The last layer (the
classifier) computes in float32, so logits, loss and metrics are float32
and comparable with a float32 run (ours: the placement Keras' mixed
precision guide advises for a model's output).

Why per layer and not `tf.keras.mixed_precision.set_global_policy`: that is
process-wide state; a policy given to each layer when the model is built
leaves the global policy (float32) untouched, so a bfloat16 model and a
float32 one can live in one process (the benchmark interleaves them).

Which models accept bfloat16 is decided by a measurement in the TFF worker
(`tasks.models.ModelSpec.bfloat16_cpu_ratio`, docs/performance.md).
"""

from typing import Optional, Tuple, Union

import tensorflow as tf


# The Keras policy of each --mixed_precision value (None: the layer default);
# its keys are tasks.models.MIXED_PRECISIONS (tested; not imported from there:
# tasks.models imports the model builders, which import this module).
KERAS_POLICIES = {"float32": None, "bfloat16": "mixed_bfloat16"}

Dtype = Optional[Union[str, tf.keras.mixed_precision.Policy]]


def layer_dtypes(mixed_precision: str = "float32") -> Tuple[Dtype, Dtype]:
  """(dtype of the hidden layers, dtype of the output layer).

  Args:
    mixed_precision: "float32" or "bfloat16".

  Returns:
    (None, None) for float32: the Keras default, i.e. the models exactly as
    without this option; (Policy('mixed_bfloat16'), 'float32') for bfloat16.

  Raises:
    ValueError: an unknown value.
  """
  if mixed_precision not in KERAS_POLICIES:
    raise ValueError(f"mixed_precision must be one of "
                     f"{', '.join(KERAS_POLICIES)}, got {mixed_precision!r}")
  policy = KERAS_POLICIES[mixed_precision]
  if policy is None:
    return None, None
  return tf.keras.mixed_precision.Policy(policy), "float32"
