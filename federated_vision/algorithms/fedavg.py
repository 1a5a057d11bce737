"""FedAvg, FedAvgM and FedSGD: one round, three defaults.

* fedavg: McMahan et al. 2017, Algorithm 1: E local epochs of SGD with
  batch size B on each selected client, the mean of the deltas weighted by
  examples, a server step (default: SGD with eta_s = 1, plain averaging).
* fedavgm: FedAvg with server momentum (Hsu, Qi & Brown 2019, Sec. 3): the
  same round with the heavy-ball `sgdm` server optimizer by default.
* fedsgd: McMahan et al. 2017, Sec. 2: FedAvg with B = inf and E = 1
  whatever the flags say (it reads neither; one full-batch gradient step per
  client, `methods.client_spec`).

The round is `compose.build_fedavg_process` of the method's client work
(its local objective's per-client work, `local.build_client_work`) and
server optimizer, or, through client groups, `client_groups.GroupedMethod`
of the same objective. `build` is that round for any algorithm whose round
is FedAvg's: declaring it covers the algorithm by client groups and the
mixing strategies. Importing this module does not import TensorFlow.
"""

from federated_vision import methods


def build(config, inputs, parts):
  """FedAvg's round with the method's client work and server optimizer;
  through client groups when `parts.group_size` > 1."""
  del config
  if parts.group_size > 1:
    from federated_vision.learning import client_groups  # pylint: disable=g-import-not-at-top
    from federated_vision.learning import local  # pylint: disable=g-import-not-at-top
    objective = parts.objective or methods.LocalObjective(local.model_loss)
    return client_groups.GroupedMethod(
        inputs.model_fn, parts.client_optimizer, parts.server_optimizer,
        group_size=parts.group_size, objective=objective.fn,
        label_counts=objective.label_counts, message=objective.message), {}
  from federated_vision.learning import compose  # pylint: disable=g-import-not-at-top
  return compose.build_fedavg_process(inputs.model_fn, parts.client_work,
                                      parts.server_optimizer), {}


def build_fedavg(model_fn, client_optimizer, server_optimizer=None, *,
                 client_work=None, model_aggregator=None,
                 client_weighting=None, loop_implementation=None):
  """Federated Averaging (McMahan et al. 2017) as a composed TFF process.

  Args:
    model_fn: no-arg function returning a fresh
      `tff.learning.models.VariableModel` (`models.build_tff_model_fn`).
    client_optimizer: the clients' optimizer, e.g.
      `tff.learning.optimizers.build_sgdm(learning_rate=0.1)`.
    server_optimizer: applied to the mean delta; SGD(1.0) when None.
    client_work: replaces the model-delta client work (e.g. FedIR's); it
      must follow TFF's rule for a client whose update is non-finite.
    model_aggregator: a weighted aggregation factory (default mean), or an
      unweighted one (e.g. `tff.learning.dp_aggregator`) with UNIFORM
      `client_weighting` (`compose.as_weighted_factory`).
    client_weighting: NUM_EXAMPLES (default) or UNIFORM.
    loop_implementation: the clients' loop (`local.DEFAULT_LOOP`); the
      results do not depend on it.

  Returns:
    A `tff.learning.templates.LearningProcess` whose `client_work`
    measurements include `clients_dropped_non_finite`.
  """
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from federated_vision.learning import compose  # pylint: disable=g-import-not-at-top
  from federated_vision.learning import local  # pylint: disable=g-import-not-at-top
  if not callable(model_fn):
    raise TypeError(f"model_fn must be a no-arg callable, got {model_fn!r}")
  compose.check_optimizer("client_optimizer", client_optimizer)
  weighting = client_weighting or tff.learning.ClientWeighting.NUM_EXAMPLES
  compose.as_weighted_factory(model_aggregator, weighting)  # Checked first.
  if client_work is None:
    client_work = local.build_client_work(
        model_fn, client_optimizer, client_weighting=weighting,
        loop_implementation=loop_implementation)
  return compose.build_fedavg_process(
      model_fn, client_work, server_optimizer,
      model_aggregator=model_aggregator, client_weighting=weighting)


def build_server_momentum_optimizer(learning_rate: float = 1.0,
                                    momentum: float = 0.9):
  """SGD with momentum on the pseudo-gradient (Hsu et al. 2019, eq. 2):
  v <- momentum v + delta; w <- w - learning_rate v (effective learning
  rate learning_rate / (1 - momentum))."""
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  if not learning_rate > 0:
    raise ValueError(f"server_learning_rate must be > 0, got {learning_rate}")
  if not 0 <= momentum < 1:
    raise ValueError(f"server_momentum must be in [0, 1), got {momentum}")
  return tff.learning.optimizers.build_sgdm(
      learning_rate=learning_rate, momentum=momentum if momentum > 0 else None)


def build_fedavgm(model_fn, client_optimizer, server_learning_rate=1.0,
                  server_momentum=0.9, **kwargs):
  """FedAvg with server momentum (Hsu, Qi & Brown 2019); `build_fedavg`'s
  other arguments in `kwargs`. With momentum 0 and rate 1 it is FedAvg."""
  return build_fedavg(
      model_fn, client_optimizer,
      build_server_momentum_optimizer(server_learning_rate, server_momentum),
      **kwargs)


def build_fedsgd(model_fn, learning_rate: float, server_optimizer=None,
                 **kwargs):
  """FedSGD (McMahan et al. 2017): FedAvg whose clients take one SGD step
  of `learning_rate`; feed it `TrainingSpec(batch_size=None, epochs=1)`
  (B = inf, E = 1), so the server takes one gradient step on the selected
  clients' data."""
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  if not learning_rate > 0:
    raise ValueError(f"learning_rate must be > 0, got {learning_rate}")
  return build_fedavg(model_fn,
                      tff.learning.optimizers.build_sgdm(learning_rate),
                      server_optimizer, **kwargs)


_LOCAL = ("client_epochs", "client_batch_size", "client_learning_rate")
methods.register(methods.Algorithm(
    name="fedavg", label="FedAvg", build=build, reads=_LOCAL,
    server_optimizer="sgd", citation="McMahan et al. 2017, Algorithm 1",
    summary="Federated Averaging: E local epochs of SGD (batch B) per "
            "client, weighted mean of the deltas"))
methods.register(methods.Algorithm(
    name="fedavgm", label="FedAvgM", build=build, reads=_LOCAL,
    server_optimizer="sgdm",
    citation="Hsu, Qi & Brown 2019, Sec. 3 (server momentum)",
    summary="FedAvg with server momentum (heavy-ball sgdm by default)"))
methods.register(methods.Algorithm(
    name="fedsgd", label="FedSGD", build=build,
    reads=("client_learning_rate",),
    # Ours: the strategies train with local B and E, which FedSGD fixes.
    refuses=((methods.MIXING, "FedSGD fixes B = inf and E = 1"),),
    citation="McMahan et al. 2017, Sec. 2 (FedSGD: B = inf, E = 1)",
    summary="one full-batch gradient step per client (B = inf, E = 1)"))
