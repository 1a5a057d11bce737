"""Scenarios for mixing federated and centralized data (Augenstein et al.).

A scenario is a federated data set whose clients under-represent part of the
inference distribution, plus a centralized set the server holds that covers
it, plus evaluation groups of classes to report separately:

* `digits_scenario`: scikit-learn's digits partitioned over clients, with
  every client's examples of `missing_classes` removed and held by the server
  (so the server holds exactly those examples, each tagged with its source
  client for the oracle). Runs here in minutes on real data.
* CelebA smiles: `federated_vision.data.celeba.load_scenario`.

`CentralizedData` (the server's examples, gathered in-graph by index) is the
type every strategy of `mixing.strategies` consumes.
"""

import hashlib
import math
import os
from typing import (Callable, Dict, Mapping, NamedTuple, Optional, Sequence,
                    Tuple)

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.data import client_data as client_data_lib
from federated_vision.data import in_graph_client_data
from federated_vision.data import digits
from federated_vision.data import partition as partition_lib
from federated_vision.evaluation import keras_eval

Element = Dict[str, tf.Tensor]
GatherFn = Callable[[tf.Tensor], Element]


class CentralizedData(NamedTuple):
  """Examples the server holds.

  Attributes:
    name: e.g. 'digits_missing_8_9' or 'celeba_unsmiling'.
    num_examples: N > 0.
    element_spec: raw element spec, identical to the federated data's raw
      elements (so example transfer can mix them), e.g. {'x', 'y'}.
    gather_fn: int64 indices [k] -> raw rows {key: [k, ...]} in that order;
      a serializable TF function (graph constants, files or SQL reads).
    train_map_fn: `(element, seed[2]) -> {'x', 'y'}` as
      `FederatedDataset.train_map_fn` (the same function for both sets).
    labels: [N] int64 class of every example (counts, reports).
    source_clients: [N] id of the client each example came from (the
      oracle's recombination), or None when unknown.
  """
  name: str
  num_examples: int
  element_spec: Mapping[str, tf.TensorSpec]
  gather_fn: GatherFn
  train_map_fn: Callable[[Element, tf.Tensor], Element]
  labels: np.ndarray
  source_clients: Optional[Sequence[str]] = None

  def validate(self) -> "CentralizedData":
    if self.num_examples <= 0:
      raise ValueError(f"centralized data {self.name!r} is empty")
    if np.shape(self.labels) != (self.num_examples,):
      raise ValueError(f"centralized data {self.name!r}: labels must have "
                       f"shape ({self.num_examples},), got {np.shape(self.labels)}")
    if (self.source_clients is not None
        and len(self.source_clients) != self.num_examples):
      raise ValueError(f"centralized data {self.name!r}: source_clients must "
                       f"have {self.num_examples} entries, got "
                       f"{len(self.source_clients)}")
    return self


def array_centralized_data(
    name: str, arrays: Mapping[str, np.ndarray],
    train_map_fn: Callable[[Element, tf.Tensor], Element],
    source_clients: Optional[Sequence[str]] = None,
    storage_dir: Optional[str] = None,
    max_inline_bytes: int = in_graph_client_data.MAX_INLINE_BYTES,
) -> CentralizedData:
  """`CentralizedData` over in-memory arrays (must include an int 'y').

  Arrays up to `max_inline_bytes` are graph constants; larger ones are written
  once under `storage_dir` and read by the graph.
  """
  arrays = {k: np.asarray(v) for k, v in arrays.items()}
  if "y" not in arrays:
    raise ValueError(f"centralized data {name!r} needs a 'y' array")
  lengths = {len(v) for v in arrays.values()}
  if len(lengths) != 1:
    raise ValueError(f"centralized data {name!r}: arrays must have equal "
                     f"lengths, got { {k: len(v) for k, v in arrays.items()} }")
  spec = {k: tf.TensorSpec(v.shape[1:], tf.as_dtype(v.dtype))
          for k, v in arrays.items()}
  nbytes = sum(v.nbytes for v in arrays.values())
  if nbytes <= max_inline_bytes:
    def gather_fn(indices):
      return {k: tf.gather(tf.constant(v), indices) for k, v in arrays.items()}
  else:
    if storage_dir is None:
      raise ValueError(f"centralized data {name!r} takes {nbytes} bytes "
                       f"(> {max_inline_bytes}); give storage_dir")
    paths = _write_arrays(arrays, storage_dir)

    def gather_fn(indices):
      return {k: tf.gather(tf.ensure_shape(
          tf.io.parse_tensor(tf.io.read_file(paths[k]), spec[k].dtype),
          [None] + spec[k].shape.as_list()), indices) for k in arrays}
  return CentralizedData(
      name=name, num_examples=int(lengths.pop()), element_spec=spec,
      gather_fn=gather_fn, train_map_fn=train_map_fn,
      labels=arrays["y"].astype(np.int64),
      source_clients=None if source_clients is None else list(source_clients),
  ).validate()


def _write_arrays(arrays: Mapping[str, np.ndarray], storage_dir: str):
  digest = hashlib.sha1()
  for k in sorted(arrays):
    digest.update(k.encode())
    digest.update(np.ascontiguousarray(arrays[k]).data)
  root = os.path.join(storage_dir, "central_" + digest.hexdigest()[:16])
  paths = {k: os.path.join(root, f"{k}.tensor") for k in arrays}
  if not os.path.exists(os.path.join(root, "COMPLETE")):
    os.makedirs(root, exist_ok=True)
    for k, v in arrays.items():
      tf.io.write_file(paths[k], tf.io.serialize_tensor(v))
    with open(os.path.join(root, "COMPLETE"), "w") as f:
      f.write("ok\n")
  return paths


def bytes_per_example(element_spec: Mapping[str, tf.TensorSpec]) -> int:
  """Bytes of one raw example as stored and sent (sum over its tensors)."""
  total = 0
  for key, spec in element_spec.items():
    if not spec.shape.is_fully_defined() or spec.dtype == tf.string:
      raise ValueError(f"element {key!r} has no fixed byte size ({spec})")
    total += int(np.prod(spec.shape.as_list(), dtype=np.int64)) * spec.dtype.size
  return total


class FunctionClientData(in_graph_client_data.InGraphClientData):
  """A ClientData from an in-graph dataset function and known client sizes.

  `dataset_fn` must accept plain client ids and round keys (see
  `federated_vision.data.client_data`).
  """

  def __init__(self, client_ids: Sequence[str], sizes: Mapping[str, int],
               dataset_fn: Callable[[tf.Tensor], tf.data.Dataset],
               spec: Mapping[str, tf.TensorSpec]):
    self._client_ids = list(client_ids)
    self._sizes = dict(sizes)
    if set(self._sizes) != set(self._client_ids):
      raise ValueError("sizes must give the size of every client")
    self._dataset_fn = dataset_fn
    self._spec = dict(spec)


class MixingScenario(NamedTuple):
  """Federated data + the server's centralized data + evaluation groups.

  Attributes:
    name: scenario name.
    federated: the clients' data (`FederatedDataset`; its test set covers the
      whole inference distribution).
    central: the server's examples, same raw elements as `federated`.
    groups: evaluation groups, name -> classes, e.g. {'missing': [8, 9],
      'present': [0, ..., 7]} or {'smiling': [1], 'unsmiling': [0]}.
    info: metadata for result files.
  """
  name: str
  federated: client_data_lib.FederatedDataset
  central: CentralizedData
  groups: Mapping[str, Sequence[int]]
  info: Mapping[str, object] = {}


def _parse_classes(missing_classes, num_classes: int) -> Tuple[int, ...]:
  if isinstance(missing_classes, str):
    try:
      missing_classes = [int(c) for c in missing_classes.split(",") if c.strip()]
    except ValueError:
      raise ValueError(f"missing_classes must be comma-separated integers, "
                       f"got {missing_classes!r}") from None
  classes = tuple(sorted(set(int(c) for c in missing_classes)))
  if not classes or classes[0] < 0 or classes[-1] >= num_classes \
      or len(classes) == num_classes:
    raise ValueError(f"missing_classes must be a non-empty proper subset of "
                     f"[0, {num_classes}), got {missing_classes!r}")
  return classes


def digits_scenario(missing_classes="8,9", num_clients: int = 10,
                    alpha: float = 1.0, seed: int = 0) -> MixingScenario:
  """Digits with `missing_classes` removed from every client, held centrally.

  The training part of `digits.load_arrays` is partitioned over
  `num_clients` equal-size clients with q_k ~ Dir(alpha p) (as
  `digits.load_federated`); then every example of `missing_classes` leaves
  its client for the server's set, tagged with its source client. Clients
  left without examples are dropped from the federated set (the oracle brings
  them back). The test set is the full, stratified digits test set.

  Args:
    missing_classes: e.g. '8,9' or (8, 9).
    num_clients: K before removal.
    alpha: Dirichlet concentration.
    seed: partition seed.

  Returns:
    A `MixingScenario` with groups 'missing' and 'present'.
  """
  missing = _parse_classes(missing_classes, digits.NUM_CLASSES)
  x_tr, y_tr, x_te, y_te = digits.load_arrays()
  if not 0 < num_clients <= len(y_tr):
    raise ValueError(f"num_clients must be in [1, {len(y_tr)}], got {num_clients}")
  sizes = [len(y_tr) // num_clients] * num_clients
  partition = partition_lib.dirichlet_partition_with_sizes(
      y_tr, sizes, alpha, seed=seed)
  is_missing = np.isin(y_tr, missing)
  kept, removed, sources = {}, [], []
  for cid, idx in partition.items():
    idx = np.asarray(idx, np.int64)
    out = idx[is_missing[idx]]
    removed.append(out)
    sources.extend([cid] * len(out))
    if (~is_missing[idx]).any():
      kept[cid] = idx[~is_missing[idx]]
  removed = np.concatenate(removed)
  tag = "_".join(str(c) for c in missing)
  name = f"digits_missing_{tag}"
  info = {"source": "sklearn.datasets.load_digits", "num_clients": num_clients,
          "alpha": alpha, "seed": seed, "missing_classes": list(missing),
          "centralized_examples": int(len(removed)),
          "federated_examples": int(sum(len(i) for i in kept.values()))}
  federated = digits.from_arrays(name, x_tr, y_tr, x_te, y_te, kept,
                                 digits.NUM_CLASSES, info=info)
  central = array_centralized_data(
      f"{name}_centralized", {"x": x_tr[removed], "y": y_tr[removed]},
      federated.train_map_fn, source_clients=sources)
  present = [c for c in range(digits.NUM_CLASSES) if c not in missing]
  return MixingScenario(name, federated, central,
                        {"missing": list(missing), "present": present}, info)


# --- evaluation per class and per group --------------------------------------

def group_metrics(logits: np.ndarray, labels: np.ndarray, num_classes: int,
                  groups: Mapping[str, Sequence[int]]) -> Dict[str, float]:
  """Loss, accuracy, accuracy per class and per group of classes.

  Returns {'loss', 'accuracy', 'accuracy_class_<c>' for every class,
  'accuracy_<group>' for every group}; a group's accuracy pools its
  examples; a class or group without examples gets NaN.
  """
  logits = np.asarray(logits, np.float64)
  labels = np.asarray(labels, np.int64).reshape(-1)
  if logits.shape != (len(labels), num_classes):
    raise ValueError(f"logits must have shape ({len(labels)}, {num_classes}), "
                     f"got {logits.shape}")
  shifted = logits - logits.max(axis=1, keepdims=True)
  log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
  correct = logits.argmax(axis=1) == labels
  out = {"loss": float(-log_p[np.arange(len(labels)), labels].mean())
                 if len(labels) else math.nan,
         "accuracy": float(correct.mean()) if len(labels) else math.nan}

  def acc(mask):
    return float(correct[mask].mean()) if mask.any() else math.nan
  for c in range(num_classes):
    out[f"accuracy_class_{c}"] = acc(labels == c)
  for name, classes in groups.items():
    out[f"accuracy_{name}"] = acc(np.isin(labels, list(classes)))
  return out


def build_group_evaluate_fn(keras_model_fn: Callable[[], tf.keras.Model],
                            eval_dataset: tf.data.Dataset, num_classes: int,
                            groups: Mapping[str, Sequence[int]]):
  """Centralized evaluation reporting per-class and per-group accuracy.

  Like `keras_eval.build_keras_evaluate_fn` (model weights -> metrics
  dict with 'loss' and 'accuracy'), plus the keys of `group_metrics`; its
  Keras model is built lazily too (`evaluation.keras_eval`).
  """
  models = []

  def evaluate(model_weights: tff.learning.models.ModelWeights):
    if not models or keras_eval.built_as_v1(models[0]):
      models[:] = [keras_model_fn()]
    model = models[0]
    model_weights.assign_weights_to(model)
    logits, labels = [], []
    for batch in eval_dataset:
      logits.append(model(batch["x"], training=False).numpy())
      labels.append(batch["y"].numpy().reshape(-1))
    return group_metrics(np.concatenate(logits), np.concatenate(labels),
                         num_classes, groups)
  return evaluate
