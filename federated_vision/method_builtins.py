"""The built-in algorithms and variants, and what they construct once.

Algorithms: fedavg (McMahan et al. 2017, Algorithm 1), fedavgm (Hsu, Qi &
Brown 2019, Section 3: server momentum), fedsgd (McMahan et al. 2017,
Section 2: B = inf, E = 1), scaffold (Karimireddy et al. 2020, Algorithm 1,
option II: per-client control variates). Variants: fedir (Hsu, Qi & Brown
2020, Section 5.2, client work), fedprox (Li et al. 2020, eq. 2, client
work), fedvc (Hsu, Qi & Brown 2020, Section 5.3, data side).

The parts every builder shares are built in one place each: the server
optimizer (`server_optimizer`, an algorithm's `server_optimizer` entry), the
client SGD from --client_learning_rate (`client_sgd`) and FedIR's target
p(y) (`fedir_target`). Importing this module does not import TensorFlow.
"""

from typing import Dict, Optional, Sequence

from federated_vision.errors import ConfigError, bad
from federated_vision.method_components import (
    CLIENT_WORK, DATA_SIDE, Algorithm, MethodConfig, MethodInputs, Variant,
    fedsgd_client_spec, register_algorithm, register_variant)


def server_settings(optimizer: str, learning_rate: float,
                    momentum: float = 0.0) -> Dict[str, object]:
  """Recorded server-optimizer settings, with the effective learning rate
  eta_s / (1 - beta) of SGD with momentum (Hsu et al. 2019)."""
  return {"server_optimizer": optimizer, "server_learning_rate": learning_rate,
          "server_momentum": momentum,
          "effective_server_learning_rate": learning_rate / (1.0 - momentum)}


def server_optimizer(momentum: bool):
  """`config -> (optimizer, settings)`: SGD(eta_s) (FedAvg, McMahan et al.
  2017) or SGD with momentum beta (FedAvgM, Hsu et al. 2019, eq. 2)."""
  def build(config: MethodConfig):
    import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
    from federated_vision.algorithms import fedavg  # pylint: disable=g-import-not-at-top
    lr, beta = config.server_learning_rate, config.server_momentum
    if momentum:
      return (fedavg.build_server_momentum_optimizer(lr, beta),
              server_settings("sgdm", lr, beta))
    return tff.learning.optimizers.build_sgdm(lr), server_settings("sgd", lr)
  return build


def client_sgd(config: MethodConfig):
  """The client SGD of --client_learning_rate (every built-in's)."""
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  return tff.learning.optimizers.build_sgdm(config.client_learning_rate)


def fedir_target(config: MethodConfig,
                 inputs: MethodInputs) -> Optional[Sequence[float]]:
  """FedIR's p(y): None (uniform) or the server's test label distribution
  (--fedir_target=test; ConfigError without test labels)."""
  if config.fedir_target != "test":
    return None
  from federated_vision.algorithms import fedir  # pylint: disable=g-import-not-at-top
  if inputs.test_labels_fn is None:
    raise bad("fedir_target", "test", "needs the server's test labels")
  return fedir.estimate_target_distribution(inputs.test_labels_fn(),
                                            inputs.num_classes)


# --- Built-in algorithms and variants. ---------------------------------------

def _fedavg_family(momentum: bool, fedsgd: bool = False):
  """FedAvg (McMahan et al. 2017), FedAvgM (Hsu et al. 2019), FedSGD."""
  def builder(config, inputs, client_work):
    from federated_vision.algorithms import fedavg  # pylint: disable=g-import-not-at-top
    server, settings = server_optimizer(momentum)(config)
    if fedsgd:
      process = fedavg.build_fedsgd(inputs.model_fn,
                                    config.client_learning_rate, server,
                                    client_work=client_work)
    else:
      process = fedavg.build_fedavg(inputs.model_fn, client_sgd(config),
                                    server, client_work=client_work)
    settings.update(client_optimizer="sgd",
                    client_learning_rate=config.client_learning_rate)
    return process, settings
  return builder


def _fedir(config: MethodConfig, inputs: MethodInputs):
  """FedIR's importance-weighted client work (Hsu, Qi & Brown 2020).

  q_k is client k's class distribution over its whole local data, as in the
  paper, read once per client from the counts `training_loop.
  build_training_process` adds to its batches (`client_label_counts=True`):
  not counted over the round's batches, which under FedVC are a resample of
  N_VC examples (a noisy estimate of q_k) and would need a second pass.
  """
  return _fedir_work(config, inputs, client_label_counts=True)


def _fedir_mixing(config: MethodConfig, inputs: MethodInputs):
  """FedIR in a mixing strategy's method: the same client work, but q_k is
  counted over the round's batches (ours: the data the client trains on
  that round, which under example transfer includes the transferred
  centralized examples; the mixing strategies' FedIR always counted so)."""
  work, settings = _fedir_work(config, inputs, client_label_counts=False)
  return {"client_work": work}, settings


def _fedir_work(config: MethodConfig, inputs: MethodInputs,
                client_label_counts: bool):
  """FedIR's client work from the client SGD and p(y) (`fedir_target`)."""
  from federated_vision.algorithms import fedir  # pylint: disable=g-import-not-at-top
  work = fedir.build_fedir_client_work(
      inputs.model_fn, client_sgd(config), inputs.num_classes,
      target_distribution=fedir_target(config, inputs),
      client_label_counts=client_label_counts)
  return work, {"fedir_target": config.fedir_target}


def _fedprox(config: MethodConfig, inputs: MethodInputs):
  """FedProx (Li et al. 2020): gradient + mu (w - w_server), TFF 0.87's
  `proximal_client_work` (what `tff.learning.algorithms.
  build_weighted_fed_prox` composes)."""
  from federated_vision.runtime import learning_internals  # pylint: disable=g-import-not-at-top
  work = learning_internals.build_proximal_client_work(
      inputs.model_fn, client_sgd(config), config.fedprox_mu)
  return work, {"fedprox_mu": config.fedprox_mu}


def _fedvc(config: MethodConfig, inputs: MethodInputs, spec, sampler):
  """FedVC's virtual clients (`algorithms.fedvc.virtual_clients`)."""
  del sampler
  from federated_vision.algorithms import fedvc  # pylint: disable=g-import-not-at-top
  spec, sampler = fedvc.virtual_clients(
      spec, inputs.client_ids, inputs.client_sizes, inputs.clients_per_round,
      config.virtual_client_size, inputs.seed)
  return spec, sampler, _fedvc_settings(config)


def _fedvc_settings(config: MethodConfig) -> Dict[str, object]:
  return {"sampler": "size_proportional", "N_VC": config.virtual_client_size}


def _fedvc_mixing(config: MethodConfig, inputs: MethodInputs):
  """FedVC in a mixing strategy's method: nothing beyond its data side
  (`_fedvc`, which `methods.build_method` applies to the clients of the
  strategy's data)."""
  del inputs
  return {}, _fedvc_settings(config)


register_algorithm(Algorithm("fedavg", _fedavg_family(momentum=False),
                             server_optimizer=server_optimizer(False)))
register_algorithm(Algorithm("fedavgm", _fedavg_family(momentum=True),
                             server_optimizer=server_optimizer(True)))
# FedSGD composes with no mixing strategy (ours: the strategies train with
# local B and E, which FedSGD fixes to inf and 1): no server_optimizer entry.
register_algorithm(Algorithm("fedsgd", _fedavg_family(False, fedsgd=True),
                             fedsgd_client_spec))


# SCAFFOLD (Karimireddy et al. 2020, Algorithm 1, option II): its own process
# with a control variate per client (algorithms/scaffold.py); no mixing
# strategy (no server_optimizer entry), no client groups, no variant.
def _scaffold(config: MethodConfig, inputs: MethodInputs, client_work):
  from federated_vision.algorithms import scaffold  # pylint: disable=g-import-not-at-top
  return scaffold.build_method(config, inputs, client_work,
                               server_optimizer(False))


def _scaffold_check(config: MethodConfig) -> None:
  if config.variants:
    raise ConfigError(f"--methods: {config.name}: scaffold takes no variant "
                      "(its corrected local SGD is its client work, and a "
                      "client keeps one control variate)", "methods")


register_algorithm(Algorithm("scaffold", _scaffold, check=_scaffold_check,
                             client_state_models=1))
register_variant(Variant("fedir", CLIENT_WORK, _fedir, _fedir_mixing))
register_variant(Variant("fedprox", CLIENT_WORK, _fedprox))
register_variant(Variant("fedvc", DATA_SIDE, _fedvc, _fedvc_mixing))


