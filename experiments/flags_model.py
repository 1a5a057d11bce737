"""Flags of the `model` section (`federated_vision.tasks.models`)."""

from absl import flags

from federated_vision.tasks import models as registry


def define_flags() -> None:
  """Model choice and options."""
  flags.DEFINE_string("model", None, f"Model: "
                      f"{' | '.join(registry.model_names())} (default per "
                      "--dataset: digits_cnn, mnist_cnn, cifar_cnn, "
                      "mobilenet_v2_gn). mnist_* need mnist data, cifar_cnn "
                      "cifar data, mobilenet_v2_gn inaturalist/landmarks.")
  flags.DEFINE_float("weight_decay", 0.0, "Weight decay wd: the loss gains "
                     "wd * sum(w**2)/2 (tf.nn.l2_loss) per decayed kernel: "
                     "cifar_cnn its two hidden dense layers (TF CIFAR-10 "
                     "tutorial), mobilenet_v2_gn every non-depthwise conv "
                     "and dense kernel (slim's training_scope), mnist_cnn "
                     "every kernel (0 = none).", lower_bound=0.0)
  # MobileNetV2-GroupNorm (Hsu, Qi & Brown 2020).
  flags.DEFINE_float("mobilenet_alpha", 1.0, "mobilenet_v2_gn width "
                     "multiplier (ImageNet weights exist for 0.35, 0.5, 0.75, "
                     "1.0, 1.3, 1.4).")
  flags.DEFINE_integer("gn_groups", 32, "mobilenet_v2_gn: maximum GroupNorm "
                       "groups per layer.", lower_bound=1)
  flags.DEFINE_integer("bottleneck_dim", None, "mobilenet_v2_gn: width of the "
                       "linear bottleneck before the classifier (default: 64 "
                       "for landmarks, none otherwise; 0 = none).",
                       lower_bound=0)
  flags.DEFINE_string("pretrained_weights", None, "mobilenet_v2_gn: a local "
                      "Keras MobileNetV2 .h5 weights file of the same alpha "
                      "(ImageNet initialisation; nothing is downloaded).")
  flags.DEFINE_enum("mixed_precision", "float32", list(
      registry.MIXED_PRECISIONS), "float32, or bfloat16: layers compute in "
                    "bfloat16 (8-bit mantissa; variables and logits "
                    "float32), for the models measured faster with it in "
                    "the TFF worker "
                    f"({', '.join(registry.bfloat16_model_names()) or 'none'}"
                    "); it changes results (recorded in experiment.json).")
  flags.DEFINE_integer("trainable_last_layers", None, "mobilenet_v2_gn: train "
                       "only the last k weighted layers (2 = the paper's "
                       "last-two-layers setting); default: all.",
                       lower_bound=1)
