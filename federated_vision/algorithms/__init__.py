"""The algorithms: one module per method, its maths, its TFF composition and
its declaration (`fedavg`: fedavg, fedavgm, fedsgd; `fedir`, `fedprox`,
`fedvc`, `scaffold`, `feddyn`, `fednova`, `server_optimizers`), and the
machinery they share: `local` (the clients' local step, written once, and
the per-client client work), `client_groups` (the same step, several
clients per TFF slot), `compose` (FedAvg's round composed), `stateful` (an
algorithm's own round with client and server state, the research API) and
`sampling`. Each module cites its paper."""

from federated_vision import methods  # pylint: disable=unused-import  (registers the built-ins first)
from federated_vision.algorithms.fedavg import build_fedavg
from federated_vision.algorithms.fedavg import build_fedavgm
from federated_vision.algorithms.fedavg import build_fedsgd
from federated_vision.algorithms.fedavg import build_server_momentum_optimizer
