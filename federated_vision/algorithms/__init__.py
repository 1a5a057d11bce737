"""Learning processes and their parts: FedAvg's composition (`fedavg`), the
client works of the variants (`fedir`, `fedprox`), data-side sampling
(`fedvc`, `sampling`), server optimizers, client groups, mixing strategies
and SCAFFOLD; each module cites its paper. The method components that
declare them live in `federated_vision.methods`."""

from federated_vision.algorithms.fedavg import build_fedavg
from federated_vision.algorithms.fedavg import build_fedavgm
from federated_vision.algorithms.fedavg import build_fedsgd
from federated_vision.algorithms.fedavg import build_server_momentum_optimizer
