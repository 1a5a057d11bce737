"""McMahan et al. 2017's character LSTM (§3, "Language modeling").

"The model takes a series of characters as input and embeds each of these
into a learned 8 dimensional space. The embedded characters are then
processed through 2 LSTM layers, each with 256 nodes. Finally the output of
the second LSTM layer is sent to a softmax output layer with one node per
character. The full model has 866,578 parameters, and we trained using an
unroll length of 80 characters."

Ours: characters are bytes (§3 footnote: "a one byte string"), so V = 256
and the model has `num_params(256)` = 864,512 parameters: 265 V + 796,672
with Keras' LSTM (one bias per gate, no peepholes): embedding 8V, LSTMs
4·256·(8+256+1) = 271,360 and 4·256·(256+256+1) = 525,312, softmax 257V.
No vocabulary gives 866,578 with these cells (V = 263.8); TF1's
`LSTMCell(use_peepholes=True)` (3·256 more weights per layer) with V = 258
gives exactly 866,578, a guess the paper does not confirm. The softmax is
in the loss (logits out, as every model here).
"""

import tensorflow as tf

from federated_vision.models import precision

PAPER_PARAMS = 866_578
EMBEDDING_DIM = 8
UNITS = 256
LAYERS = 2


def num_params(vocab_size: int, embedding_dim: int = EMBEDDING_DIM,
               units: int = UNITS, layers: int = LAYERS) -> int:
  """Weights of `create_char_lstm` (Keras LSTM: 4 gates, one bias each)."""
  n = vocab_size * embedding_dim + (units + 1) * vocab_size
  inputs = embedding_dim
  for _ in range(layers):
    n += 4 * units * (inputs + units + 1)
    inputs = units
  return n


def create_char_lstm(vocab_size: int = 256, unroll: int = 80,
                     embedding_dim: int = EMBEDDING_DIM, units: int = UNITS,
                     layers: int = LAYERS, seed: int = 0,
                     mixed_precision: str = "float32") -> tf.keras.Model:
  """int32 [unroll] character ids -> logits [unroll, vocab_size].

  Args:
    vocab_size: characters (the softmax's nodes).
    unroll: sequence length (McMahan: 80).
    embedding_dim: 8 in the paper.
    units: LSTM width (256 in the paper).
    layers: stacked LSTM layers (2 in the paper).
    seed: initializer seed (every method starts from the same weights).
    mixed_precision: "float32" (bfloat16 is not measured for this model).
  """
  if vocab_size < 2 or layers < 1 or units < 1 or embedding_dim < 1:
    raise ValueError(f"char_lstm needs vocab_size >= 2 and positive sizes, "
                     f"got {vocab_size}, {embedding_dim}, {units}, {layers}")
  hidden, output = precision.layer_dtypes(mixed_precision)
  init = lambda k: tf.keras.initializers.GlorotUniform(seed=seed + k)
  orth = lambda k: tf.keras.initializers.Orthogonal(seed=seed + 100 + k)
  model = [tf.keras.layers.InputLayer(input_shape=(unroll,), dtype=tf.int32),
           tf.keras.layers.Embedding(
               vocab_size, embedding_dim, dtype=hidden,
               embeddings_initializer=tf.keras.initializers.RandomUniform(
                   -0.05, 0.05, seed=seed))]
  for k in range(layers):
    model.append(tf.keras.layers.LSTM(
        units, return_sequences=True, kernel_initializer=init(k + 1),
        recurrent_initializer=orth(k), dtype=hidden))
  model.append(tf.keras.layers.Dense(vocab_size, kernel_initializer=init(9),
                                     dtype=output))
  return tf.keras.Sequential(model, name="char_lstm")
