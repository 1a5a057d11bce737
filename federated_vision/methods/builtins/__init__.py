"""The built-in method components, each declared in its own module exactly
as a user's module declares its own (`methods.register`); importing this
package registers them all."""

from federated_vision.methods.builtins import fedavg  # pylint: disable=unused-import
from federated_vision.methods.builtins import server_optimizers  # pylint: disable=unused-import
from federated_vision.methods.builtins import fedir  # pylint: disable=unused-import
from federated_vision.methods.builtins import fedprox  # pylint: disable=unused-import
from federated_vision.methods.builtins import fedvc  # pylint: disable=unused-import
from federated_vision.methods.builtins import mixing_strategies  # pylint: disable=unused-import
