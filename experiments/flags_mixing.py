"""Flags of the `mixing` section (`methods.mixing.MixingSettings`; Augenstein
et al.); the CelebA task declares its --celeba_cache_dir (`tasks.celeba`)."""

from absl import flags

from federated_vision.methods import mixing as mixing_lib


def define_flags() -> None:
  """Mixing strategies, their hyper-parameters and the mixing data sets."""
  d = mixing_lib.MixingSettings()
  flags.DEFINE_list("mixing", list(d.mixing), "Mixing federated and "
                    "centralized data (Augenstein et al.), strategies run "
                    "side by side: "
                    f"{','.join(mixing_lib.strategy_names())} (and any "
                    "registered from --extra_modules). Each method runs once "
                    "per strategy as '<method>+<strategy>'. Needs a task with a "
                    "mixing scenario (--dataset=digits with "
                    "--missing_classes, celeba). Empty = no mixing.")
  flags.DEFINE_float("merge_weight", d.merge_weight, "parallel: weight a of "
                     "the federated model in w = a w_fed + (1 - a) "
                     "w_central.", lower_bound=0.0, upper_bound=1.0)
  flags.DEFINE_integer("central_steps", d.central_steps, "parallel: K SGD "
                       "steps on centralized batches per round.",
                       lower_bound=1)
  flags.DEFINE_integer("central_batch_size", d.central_batch_size,
                       "parallel / gradient_transfer: centralized batch "
                       "size.", lower_bound=1)
  flags.DEFINE_float("central_learning_rate", d.central_learning_rate,
                     "parallel: learning rate of the K centralized steps "
                     "(default: --client_learning_rate).")
  flags.DEFINE_integer("central_examples_per_client",
                       d.central_examples_per_client, "example_transfer: M "
                       "centralized examples sent to each selected client per "
                       "round.", lower_bound=0)
  flags.DEFINE_float("gradient_weight", d.gradient_weight, "gradient_transfer: "
                     "lambda, local steps use g_k + lambda g_c.")
  flags.DEFINE_string("missing_classes", d.missing_classes, "--dataset=digits "
                      "with --mixing: classes every client loses to the "
                      "server, e.g. 8,9 (the default).")
