"""Model registry: name -> Keras builder + the input families it fits.

It lives with the tasks (a task = data + model) and, like them, imports no
TensorFlow until a model is built; the Keras models are in
`federated_vision.models`.

A model is one `register_model(ModelSpec(...))` call. A `ModelSpec` says
which input families it fits (a task's `family`: "digits" 8x8x1, "mnist"
28x28x1, "cifar" 24x24x3 crops, "inaturalist"/"landmarks" SxSx3 images) and
which `ModelConfig` fields it reads besides `model`; a field it does not read
must stay at its default (`validate_model_config` says so, naming the field).

--mixed_precision=bfloat16 (`ModelConfig.mixed_precision`) is accepted only
for a model whose `ModelSpec.bfloat16_cpu_ratio` (bfloat16 / float32 CPU
seconds of a TFF round, measured in the worker) shows a speed-up
(`check_mixed_precision`); every model reads the field (float32 for most).
"""

import dataclasses
import math
import os
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

from federated_vision import config_fields
from federated_vision.errors import ConfigError, bad, one_line
from federated_vision.registry import Registry

# --mixed_precision values (`federated_vision.models.precision`).
MIXED_PRECISIONS = ("float32", "bfloat16")
# bfloat16 is accepted below this measured CPU ratio (ours: a clear speed-up
# on a shared machine, not noise).
BFLOAT16_MAX_CPU_RATIO = 0.9


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  """Model settings; field names are the flags of the experiment binaries.

  Attributes:
    model: registry name, or None for the task's default model.
    weight_decay: wd * sum(w**2) / 2 per kernel the model decays
      (`federated_vision.models.weight_decay`; 0 = no regularizer).
    mobilenet_alpha: mobilenet_v2_gn width multiplier.
    gn_groups: mobilenet_v2_gn maximum GroupNorm groups per layer.
    bottleneck_dim: mobilenet_v2_gn bottleneck width; None = the task's
      default (64 for Landmarks, Hsu et al. 2020), 0 = none.
    pretrained_weights: mobilenet_v2_gn local Keras .h5 ImageNet weights.
    trainable_last_layers: mobilenet_v2_gn: train only the last k layers.
    mixed_precision: 'float32', or 'bfloat16' (layers compute in bfloat16,
      variables float32; only for models measured faster,
      `check_mixed_precision`). It changes results, so it is recorded.
  """
  model: Optional[str] = config_fields.option(
      None, lambda: f"Model: {' | '.join(model_names())} (default per "
      "--dataset: digits_cnn, mnist_cnn, cifar_cnn, mobilenet_v2_gn). "
      "mnist_* need mnist data, cifar_cnn cifar data, mobilenet_v2_gn "
      "inaturalist/landmarks.")
  weight_decay: float = config_fields.option(
      0.0, "Weight decay wd: the loss gains wd * sum(w**2)/2 (tf.nn.l2_loss) "
      "per decayed kernel: cifar_cnn its two hidden dense layers (TF "
      "CIFAR-10 tutorial), mobilenet_v2_gn every non-depthwise conv and "
      "dense kernel (slim's training_scope), mnist_cnn every kernel (0 = "
      "none).", lower_bound=0.0)
  # MobileNetV2-GroupNorm (Hsu, Qi & Brown 2020).
  mobilenet_alpha: float = config_fields.option(
      1.0, "mobilenet_v2_gn width multiplier (ImageNet weights exist for "
      "0.35, 0.5, 0.75, 1.0, 1.3, 1.4).")
  gn_groups: int = config_fields.option(
      32, "mobilenet_v2_gn: maximum GroupNorm groups per layer.",
      lower_bound=1)
  bottleneck_dim: Optional[int] = config_fields.option(
      None, "mobilenet_v2_gn: width of the linear bottleneck before the "
      "classifier (default: 64 for landmarks, none otherwise; 0 = none).",
      lower_bound=0)
  pretrained_weights: Optional[str] = config_fields.option(
      None, "mobilenet_v2_gn: a local Keras MobileNetV2 .h5 weights file of "
      "the same alpha (ImageNet initialisation; nothing is downloaded).")
  trainable_last_layers: Optional[int] = config_fields.option(
      None, "mobilenet_v2_gn: train only the last k weighted layers (2 = the "
      "paper's last-two-layers setting); default: all.", lower_bound=1)
  mixed_precision: str = config_fields.option(
      "float32", lambda: "float32, or bfloat16: layers compute in bfloat16 "
      "(8-bit mantissa; variables and logits float32), for the models "
      "measured faster with it in the TFF worker "
      f"({', '.join(bfloat16_model_names()) or 'none'}); it changes results "
      "(recorded in experiment.json).", enum_values=list(MIXED_PRECISIONS))


# Builder: (config, resolved settings, num_classes, input_shape, seed) -> model.
Builder = Callable[[ModelConfig, Mapping[str, object], int, Tuple[int, ...],
                    int], object]


def _no_checks(config: ModelConfig, resolved: Mapping[str, object]) -> None:
  del config, resolved


@dataclasses.dataclass(frozen=True)
class ModelSpec:
  """One registered model.

  Attributes:
    name: registry name (the --model value).
    families: input families (`Task.family`) the model fits.
    build: `(config, resolved, num_classes, input_shape, seed) -> keras.Model`
      (uncompiled, logits out); `resolved` holds `resolve`'s settings.
    fields: `ModelConfig` fields the model reads besides `model`.
    resolve: `(config, task model defaults) -> dict` of derived settings
      recorded with the run (e.g. mobilenet's bottleneck_dim).
    validate: `(config, resolved incl. image_size) -> None`, raising
      `ConfigError`.
    bfloat16_cpu_ratio: CPU seconds of a TFF round (Python + worker) with
      --mixed_precision=bfloat16 over float32, measured in the worker
      (`benchmarks/bench_round_time.py --mixed_precision=compare`); None =
      not measured. bfloat16 is accepted only below
      `BFLOAT16_MAX_CPU_RATIO`, and then `build` must honour
      `config.mixed_precision`.
  """
  name: str
  families: Tuple[str, ...]
  build: Builder
  fields: Tuple[str, ...] = ()
  resolve: Callable[[ModelConfig, Mapping[str, object]], Dict[str, object]] = (
      lambda config, defaults: {})
  validate: Callable[[ModelConfig, Mapping[str, object]], None] = _no_checks
  bfloat16_cpu_ratio: Optional[float] = None


_MODELS: Registry[ModelSpec] = Registry("model", "model")
# The fields a model may or may not read (`ModelSpec.fields`); every model
# reads `model` and `mixed_precision`.
MODEL_FIELDS = frozenset(f.name for f in dataclasses.fields(ModelConfig)) - {
    "model", "mixed_precision"}


def register_model(spec: ModelSpec) -> ModelSpec:
  """Adds `spec` (a name may be registered once)."""
  unknown = set(spec.fields) - MODEL_FIELDS
  if unknown:
    raise ValueError(f"model {spec.name!r}: fields {sorted(unknown)} are not "
                     "ModelConfig fields (besides model)")
  return _MODELS.add(spec.name, spec)


def get_model(name: str) -> ModelSpec:
  return _MODELS.get(name)


def model_names(family: Optional[str] = None) -> Tuple[str, ...]:
  """Registered models (fitting `family`, if given), in registration order."""
  return _MODELS.names(lambda s: family is None or family in s.families)


def validate_model_config(config: ModelConfig, family: str, dataset: str,
                          resolved: Mapping[str, object],
                          given: Sequence[str] = ()) -> None:
  """Checks `config` for a model of `family` (`resolved` has its name).

  Args:
    config: the model settings.
    family: the task's input family.
    dataset: the task name (for messages).
    resolved: at least {"model": name}, plus `ModelSpec.resolve`'s settings
      and the task's image_size.
    given: fields set explicitly (on the command line); one the model does
      not read is an error.

  Raises:
    ConfigError: naming the field.
  """
  spec = get_model(resolved["model"])
  if family not in spec.families:
    raise bad("model", spec.name, f"does not fit --dataset={dataset}; use one "
              f"of {', '.join(model_names(family))}")
  if config.weight_decay < 0 or not math.isfinite(config.weight_decay):
    raise bad("weight_decay", config.weight_decay, "must be a finite number >= 0")
  if config.weight_decay > 0 and "weight_decay" not in spec.fields:
    users = [n for n in model_names(family)
             if "weight_decay" in get_model(n).fields]
    raise bad("weight_decay", config.weight_decay, f"--model={spec.name} has no "
              f"weight decay; use {' or '.join(users) or 'another model'}, or 0")
  unused = unused_model_fields(spec.name)
  for name in given:
    if name in unused:
      raise ConfigError(f"--{name}: {unused[name]}", name)
  check_mixed_precision(config, spec.name)
  spec.validate(config, resolved)


def check_mixed_precision(config: ModelConfig, name: str) -> None:
  """Refuses an unknown --mixed_precision, and bfloat16 for a model not
  measured faster with it in the TFF worker (`ModelSpec.bfloat16_cpu_ratio`).

  Raises:
    ConfigError: one line naming --mixed_precision, the model and the
      measurement.
  """
  value = config.mixed_precision
  if value not in MIXED_PRECISIONS:
    raise bad("mixed_precision", value,
              f"must be one of {', '.join(MIXED_PRECISIONS)}")
  if value == "float32":
    return
  ratio = get_model(name).bfloat16_cpu_ratio
  if ratio is None:
    raise bad("mixed_precision", value, f"not measured for {name} in the TFF "
              "worker (benchmarks/bench_round_time.py), refused")
  if not ratio < BFLOAT16_MAX_CPU_RATIO:
    raise bad("mixed_precision", value, f"no speed-up for {name} in the TFF "
              f"worker (measured {ratio:.2f}x the float32 CPU time), refused")


def bfloat16_model_names() -> Tuple[str, ...]:
  """The models that accept --mixed_precision=bfloat16 (measured faster)."""
  return _MODELS.names(lambda s: s.bfloat16_cpu_ratio is not None and
                       s.bfloat16_cpu_ratio < BFLOAT16_MAX_CPU_RATIO)


def unused_model_fields(name: str) -> Dict[str, str]:
  """{ModelConfig field: why} of the fields model `name` does not read."""
  spec = get_model(name)
  out = {}
  for field in sorted(MODEL_FIELDS - set(spec.fields)):
    users = _MODELS.names(lambda s, field=field: field in s.fields)
    out[field] = f"only used with --model={'|'.join(users)}"
  return out



def build_keras_model_fn(config: ModelConfig, resolved: Mapping[str, object],
                         num_classes: int, input_shape: Sequence[int],
                         seed: int) -> Callable[[], object]:
  """A no-arg builder of the model (same seed, same initial weights)."""
  spec = get_model(resolved["model"])
  check_mixed_precision(config, spec.name)  # Never built and ignored.
  shape = tuple(int(d) for d in input_shape)
  return lambda: spec.build(config, resolved, num_classes, shape, seed)


# --- The models of the papers. ----------------------------------------------

def _digits_cnn(config, resolved, num_classes, input_shape, seed):
  del resolved, input_shape
  from federated_vision.models import digits  # pylint: disable=g-import-not-at-top
  return digits.create_digits_cnn(num_classes, seed,
                                  mixed_precision=config.mixed_precision)


def _mnist_2nn(config, resolved, num_classes, input_shape, seed):
  del resolved
  from federated_vision.models import mnist  # pylint: disable=g-import-not-at-top
  return mnist.create_2nn(num_classes, input_shape, seed=seed,
                          mixed_precision=config.mixed_precision)


def _mnist_cnn(config, resolved, num_classes, input_shape, seed):
  del resolved
  from federated_vision.models import mnist  # pylint: disable=g-import-not-at-top
  return mnist.create_cnn(num_classes, input_shape,
                          weight_decay=config.weight_decay, seed=seed,
                          mixed_precision=config.mixed_precision)


def _cifar_cnn(config, resolved, num_classes, input_shape, seed):
  del resolved
  from federated_vision.models import cifar  # pylint: disable=g-import-not-at-top
  return cifar.create_cifar_cnn(num_classes, input_shape,
                                weight_decay=config.weight_decay, seed=seed,
                                mixed_precision=config.mixed_precision)


def _celeba_cnn(config, resolved, num_classes, input_shape, seed):
  del resolved, input_shape
  from federated_vision.models import celeba  # pylint: disable=g-import-not-at-top
  return celeba.create_celeba_cnn(num_classes, seed,
                                  mixed_precision=config.mixed_precision)


MOBILENET_MIN_SIZE = 32


def _mobilenet_kwargs(config, resolved, num_classes, input_shape, seed):
  return dict(input_shape=input_shape, num_classes=num_classes,
              alpha=config.mobilenet_alpha, groups=config.gn_groups,
              bottleneck_dim=resolved["bottleneck_dim"],
              pretrained_weights=config.pretrained_weights,
              trainable_last_layers=config.trainable_last_layers,
              weight_decay=config.weight_decay, seed=seed)


def _mobilenet(config, resolved, num_classes, input_shape, seed):
  from federated_vision.models import mobilenet_v2  # pylint: disable=g-import-not-at-top
  return mobilenet_v2.create_mobilenet_v2_gn(
      **_mobilenet_kwargs(config, resolved, num_classes, input_shape, seed))


def _mobilenet_resolve(config: ModelConfig, defaults: Mapping[str, object]):
  """bottleneck_dim: 0 = none; None = the task's default (Landmarks: 64)."""
  if config.bottleneck_dim is None:
    return {"bottleneck_dim": defaults.get("bottleneck_dim")}
  return {"bottleneck_dim": config.bottleneck_dim or None}


def _mobilenet_validate(config: ModelConfig, resolved: Mapping[str, object]):
  if not (config.mobilenet_alpha > 0 and math.isfinite(config.mobilenet_alpha)):
    raise bad("mobilenet_alpha", config.mobilenet_alpha,
              "must be a finite number > 0")
  if (config.pretrained_weights is not None
      and not os.path.isfile(config.pretrained_weights)):
    raise bad("pretrained_weights", config.pretrained_weights, "no such file")
  size = resolved.get("image_size")
  if size is not None and size < MOBILENET_MIN_SIZE:
    raise bad("image_size", size,
              f"mobilenet_v2_gn needs >= {MOBILENET_MIN_SIZE}")
  if config.trainable_last_layers is not None:
    from federated_vision.models import mobilenet_v2  # pylint: disable=g-import-not-at-top
    n = mobilenet_v2.num_weighted_layers(resolved["bottleneck_dim"])
    if config.trainable_last_layers > n:
      raise bad("trainable_last_layers", config.trainable_last_layers,
                f"must be <= {n} (the model's weighted layers)")


def check_pretrained_weights(config: ModelConfig, resolved, num_classes: int,
                             input_shape, seed: int) -> None:
  """Builds mobilenet_v2_gn once when a weights file is given, so a bad file
  fails before training, naming the field (not inside TFF)."""
  if resolved["model"] != "mobilenet_v2_gn" or config.pretrained_weights is None:
    return
  try:
    _mobilenet(config, resolved, num_classes, tuple(input_shape), seed)
  except FileNotFoundError:
    raise bad("pretrained_weights", config.pretrained_weights,
              "no such file") from None
  except ValueError as e:
    msg = one_line(e)
    name = ("pretrained_weights" if "pretrained_weights" in msg else
            "trainable_last_layers" if "trainable_last_layers" in msg else
            "mobilenet_alpha" if msg.startswith("alpha") else
            "gn_groups" if msg.startswith("groups") else "model")
    value = resolved["model"] if name == "model" else getattr(config, name)
    raise bad(name, value, msg) from None


REALWORLD_FAMILIES = ("inaturalist", "landmarks")
# bfloat16_cpu_ratio: median bfloat16 / float32 CPU seconds of a FedAvg round
# in the TFF worker, `bench_round_time --mixed_precision=compare` on this
# 2-core AVX512-BF16 machine (loaded by other processes; docs/performance.md,
# "bfloat16").
register_model(ModelSpec("digits_cnn", ("digits",), _digits_cnn,
                         bfloat16_cpu_ratio=0.97))
register_model(ModelSpec("mnist_2nn", ("mnist",), _mnist_2nn,
                         bfloat16_cpu_ratio=0.95))
register_model(ModelSpec("mnist_cnn", ("mnist",), _mnist_cnn, ("weight_decay",),
                         bfloat16_cpu_ratio=0.95))
register_model(ModelSpec("cifar_cnn", ("cifar",), _cifar_cnn, ("weight_decay",),
                         bfloat16_cpu_ratio=0.79))
register_model(ModelSpec("celeba_cnn", ("celeba",), _celeba_cnn,
                         bfloat16_cpu_ratio=0.84))
register_model(ModelSpec(
    "mobilenet_v2_gn", REALWORLD_FAMILIES + ("celeba",), _mobilenet,
    ("weight_decay", "mobilenet_alpha", "gn_groups", "bottleneck_dim",
     "pretrained_weights", "trainable_last_layers"),
    resolve=_mobilenet_resolve, validate=_mobilenet_validate,
    bfloat16_cpu_ratio=1.01))
