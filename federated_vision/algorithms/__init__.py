"""The algorithms, one module per method: its maths, its TFF composition and
its declaration (`fedavg`: fedavg, fedavgm, fedsgd; `fedir`, `fedprox`,
`fedvc`, `scaffold`, `feddyn`, `fednova`; the server optimizers
`server_sgd` and `server_adaptive`), each citing its paper. Every module
here is imported when `federated_vision.methods` is (registering its
components); none imports TensorFlow at import. The
machinery they share is `federated_vision.learning`."""

from federated_vision import methods  # pylint: disable=unused-import  (registers the built-ins in order)
from federated_vision.algorithms.fedavg import build_fedavg
from federated_vision.algorithms.fedavg import build_fedavgm
from federated_vision.algorithms.fedavg import build_fedsgd
from federated_vision.algorithms.fedavg import build_server_momentum_optimizer
