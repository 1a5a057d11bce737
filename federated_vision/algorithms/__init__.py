"""Learning processes: FedAvg, FedAvgM, FedSGD, FedIR; FedVC (data side)."""

from federated_vision.algorithms.fedavg import build_fedavg
from federated_vision.algorithms.fedavg import build_fedavgm
from federated_vision.algorithms.fedavg import build_fedsgd
from federated_vision.algorithms.fedavg import build_server_momentum_optimizer
from federated_vision.algorithms.fedir import build_fedir
from federated_vision.algorithms.fedir import build_fedir_client_work
from federated_vision.algorithms.fedvc import build_fedvc
from federated_vision.algorithms.fedvc import virtual_clients
