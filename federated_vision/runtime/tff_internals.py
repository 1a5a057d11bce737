"""Every use of TFF 0.87's executor and context internals, each with why.

TFF's public API (`tff.backends.native.*`) can only build a context whose
`worker_binary` TFF starts and owns itself (stopped in a `__del__` only, see
`federated_vision.runtime.workers`); it has no public way to build a context
over a worker (gRPC stub) we own, to split a computation across several
workers we own, nor to read or set the default context without installing
TFF's own. So the runtime reaches into `tensorflow_federated.python.core`
here, and only here. Each function says which public API is missing.
"""

import asyncio
import hashlib
import threading
from typing import Callable, List, Sequence

import grpc
from tensorflow_federated.proto.v0 import executor_pb2
from tensorflow_federated.python.core.backends.native import compiler
from tensorflow_federated.python.core.backends.native import mergeable_comp_compiler
from tensorflow_federated.python.core.environments.tensorflow_backend import compiled_computation_transformations
from tensorflow_federated.python.core.environments.tensorflow_backend import tensorflow_tree_transformations
from tensorflow_federated.python.core.environments.tensorflow_frontend import tensorflow_computation
from tensorflow_federated.python.core.impl.compiler import building_blocks
from tensorflow_federated.python.core.impl.compiler import transformation_utils
from tensorflow_federated.python.core.impl.compiler import transformations
from tensorflow_federated.python.core.impl.computation import computation_impl
from tensorflow_federated.python.core.impl.context_stack import context_base
from tensorflow_federated.python.core.impl.context_stack import context_stack_impl
from tensorflow_federated.python.core.impl.context_stack import runtime_error_context
from tensorflow_federated.python.core.impl.execution_contexts import mergeable_comp_execution_context as mergeable
from tensorflow_federated.python.core.impl.execution_contexts import sync_execution_context
from tensorflow_federated.python.core.impl.executor_stacks import executor_factory
from tensorflow_federated.python.core.impl.executor_stacks import python_executor_stacks
from tensorflow_federated.python.core.impl.executors import executors_errors
from tensorflow_federated.python.core.impl.executors import remote_executor
from tensorflow_federated.python.core.impl.executors import remote_executor_grpc_stub
from tensorflow_federated.python.core.impl.executors import remote_executor_stub
from tensorflow_federated.python.core.impl.types import placements

from federated_vision.runtime.worker_errors import WorkerError, WorkerLostError

# Why: TFF's ExecutorGroup stubs and the worker's channel must use TFF's own
# message-size options (no public constant).
GRPC_CHANNEL_OPTIONS = executor_factory._GRPC_CHANNEL_OPTIONS  # pylint: disable=protected-access


def grpc_stub(channel):
  """TFF's stub over `channel` (has `is_ready`); no public constructor."""
  return remote_executor_grpc_stub.RemoteExecutorGrpcStub(channel)


# --- The default context (no public getter, and TFF's only public setters
# --- install contexts TFF builds itself).

def current_context():
  """TFF's current (default, unless inside `install`) execution context."""
  return context_stack_impl.context_stack.current


def set_default_context(context) -> None:
  """Makes `context` TFF's process-wide default."""
  context_stack_impl.context_stack.set_default_context(context)


def install_context(context):
  """A context manager making `context` current for its body."""
  return context_stack_impl.context_stack.install(context)


def is_tff_unmanaged_context(context) -> bool:
  """Whether `context` is TFF's own local C++ context.

  That is the context `import tensorflow_federated` installs
  (`tff.backends.native.set_sync_local_cpp_execution_context`): invoked, it
  starts a `worker_binary` that outlives this process. TFF exposes no way to
  tell it apart, so this looks at the name of its executor stack function
  (`executor_factory.local_cpp_executor_factory.<locals>.stack_fn`).
  """
  factory = getattr(context, "_executor_factory", None)
  stack_fn = getattr(factory, "_executor_stack_fn", None)
  return getattr(stack_fn, "__qualname__", "").startswith(
      "local_cpp_executor_factory.")


def retire_default_context() -> None:
  """Drops TFF's default context while the interpreter is intact.

  Otherwise the import-time context's ServiceManager.__del__ can run during
  interpreter teardown and print an 'AttributeError: NoneType has no
  attribute Popen' traceback. No public API installs TFF's "no context"
  context (`RuntimeErrorContext`).
  """
  set_default_context(runtime_error_context.RuntimeErrorContext())


# --- Compiling a computation for the worker.
#
# Why: TFF's native compiler (`compiler.desugar_and_transform_to_native`, the
# `compiler_fn` of every context here) runs Grappler over each TensorFlow
# block with options it hard-codes; TFF has no way to change them for some
# computations. On the client-work graph of MobileNetV2-GN with a frozen
# backbone (Hsu et al. 2020, §6.2 (b): `--trainable_last_layers=2`) its
# constant folding loops for ~190 CPU-s (the rest of the pass: ~6 CPU-s;
# `perf`: `ConstantFolding::RunOptimizationPass` rebuilding its node map
# pass after pass; docs/performance.md, "Building a last-layers method").
# Blocks registered with `skip_constant_folding` are optimised with TFF's
# options minus constant folding (the worker computes the same numbers:
# tests/runtime/test_runtime_compile.py, and a 2-round
# `--trainable_last_layers=2` run's metrics.csv and checkpoint are
# byte-identical); every other computation goes through TFF's compiler
# unchanged.

_SKIP_CONSTANT_FOLDING = set()  # `_block_key`s of registered blocks.


def _block_key(tensorflow_proto) -> str:
  """A TensorFlow block's key: the hash of its `pb.TensorFlow`."""
  return hashlib.sha256(
      tensorflow_proto.SerializeToString(deterministic=True)).hexdigest()


def _tensorflow_protos(computation_proto):
  """The `pb.TensorFlow` of every TensorFlow block in a `pb.Computation`,
  found by walking the proto (TFF's building blocks, `to_building_block`,
  deserialize every type: ~0.3 CPU-s on a MobileNetV2 round)."""
  kind = computation_proto.WhichOneof("computation")
  if kind == "tensorflow":
    return [computation_proto.tensorflow]
  if kind == "lambda":
    children = [getattr(computation_proto, "lambda").result]
  elif kind == "block":
    children = [local.value for local in computation_proto.block.local]
    children.append(computation_proto.block.result)
  elif kind == "call":
    children = [computation_proto.call.function]
    if computation_proto.call.HasField("argument"):
      children.append(computation_proto.call.argument)
  elif kind == "struct":
    children = [e.value for e in computation_proto.struct.element]
  elif kind == "selection":
    children = [computation_proto.selection.source]
  else:
    children = []
  return [p for child in children for p in _tensorflow_protos(child)]


def _block_keys(computation) -> set:
  """The keys of a `tff.Computation`'s TensorFlow blocks."""
  return {_block_key(p) for p in _tensorflow_protos(
      computation_impl.ConcreteComputation.get_proto(computation))}


def _tensorflow_blocks(building_block):
  """The TensorFlow `CompiledComputation`s inside `building_block`."""
  found = []

  def visit(comp):
    if (isinstance(comp, building_blocks.CompiledComputation)
        and comp.proto.WhichOneof("computation") == "tensorflow"):
      found.append(comp)
    return comp, False

  transformation_utils.transform_postorder(building_block, visit)
  return found


def skip_constant_folding(computation) -> int:
  """Registers `computation`'s TensorFlow blocks: wherever one is compiled
  for a worker (this computation, or a part of it that TFF's mergeable
  compiler cuts for several workers), Grappler skips constant folding on it.
  Returns how many distinct blocks were registered."""
  keys = _block_keys(computation)
  _SKIP_CONSTANT_FOLDING.update(keys)
  return len(keys)


def grappler_config(constant_folding: bool = True):
  """TFF's static Grappler options (`desugar_and_transform_to_native`'s,
  copied: TFF builds them inside that function), constant folding optional."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  config = tf.compat.v1.ConfigProto()
  rewrite = config.graph_options.rewrite_options
  for name in ("memory_optimization", "constant_folding",
               "arithmetic_optimization", "loop_optimization",
               "function_optimization"):
    setattr(rewrite, name, rewrite.AGGRESSIVE)
  if not constant_folding:
    rewrite.constant_folding = rewrite.OFF
  return config


def compile_for_worker(comp):
  """The contexts' `compiler_fn`: TFF's `desugar_and_transform_to_native`,
  except that blocks registered by `skip_constant_folding` are optimised
  without constant folding (the same steps as TFF's
  `transform_to_native_form`, with the Grappler options chosen per block)."""
  if not _SKIP_CONSTANT_FOLDING or _SKIP_CONSTANT_FOLDING.isdisjoint(
      _block_keys(comp)):
    return compiler.desugar_and_transform_to_native(comp)
  full, lean = grappler_config(True), grappler_config(False)

  def optimize(block):
    if not isinstance(block, building_blocks.CompiledComputation):
      return block, False
    lean_block = (block.proto.WhichOneof("computation") == "tensorflow"
                  and _block_key(block.proto.tensorflow)
                  in _SKIP_CONSTANT_FOLDING)
    return compiled_computation_transformations.optimize_tensorflow_comp(
        block, lean if lean_block else full), True

  desugared, _ = tensorflow_tree_transformations.replace_intrinsics_with_bodies(
      comp.to_building_block())
  form = transformations.to_call_dominant(desugared)
  form, _ = transformation_utils.transform_postorder(form, optimize)
  form, _ = (compiled_computation_transformations
             .transform_tf_call_ops_to_disable_grappler(form))
  form, _ = compiled_computation_transformations.transform_tf_add_ids(form)
  return computation_impl.ConcreteComputation(
      computation_proto=form.proto,
      context_stack=context_stack_impl.context_stack)


# --- Contexts over our own workers.

class _ReconnectingExecutorFactory(
    python_executor_stacks.ResourceManagingExecutorFactory):
  """TFF's executor-per-cardinalities cache, emptied when the connection changes.

  TFF keeps the `RemoteExecutor` made for a set of cardinalities and reuses it
  for every later computation with them; it holds the stub of the connection
  it was made over. A worker stopped and started again (the auto-restarting
  default worker) has a new connection, so a kept executor would fail the
  next computation ('closed channel') instead of running it on the restarted
  worker. Here every `create_executor` first asks `get_stub()` for the
  worker's stub (which restarts a stopped auto-restart worker, and raises
  `WorkerLostError` for a stopped pool worker) and drops the kept executors
  when its connection is not theirs.
  """

  def __init__(self, get_stub: Callable[[], "GuardedStub"],
               default_num_clients: int):
    super().__init__(executor_stack_fn=self._stack_fn)
    self._get_stub = get_stub
    self._default_num_clients = default_num_clients
    self._lock = threading.Lock()
    self._stub = None  # The stub the next new executor is made over.
    self._connection = None  # The connection of the kept executors.
    self._made: List[dict] = []  # Their cardinalities (cache keys).

  def _stack_fn(self, cardinalities):
    if cardinalities.get(placements.CLIENTS) is None:
      cardinalities[placements.CLIENTS] = self._default_num_clients
    executor = remote_executor.RemoteExecutor(self._stub, stream_structs=False)
    executor.set_cardinalities(cardinalities)
    return executor

  def create_executor(self, cardinalities):
    with self._lock:
      stub = self._get_stub()
      if stub.connection is not self._connection:
        for made in self._made:
          self.clean_up_executor(made)  # Its dispose finds a lost worker: no-op.
        self._made, self._connection = [], stub.connection
      self._stub = stub
      self._made.append(dict(cardinalities))  # Before `_stack_fn` fills it in.
      return super().create_executor(cardinalities)


def sync_context(get_stub: Callable[[], object], default_num_clients: int = 0):
  """A sync TFF execution context whose executors talk to `get_stub()`.

  Mirrors `tff.backends.native.create_sync_local_cpp_execution_context`
  with its ServiceManager (a worker TFF starts itself) replaced by our
  stub; TFF has no public constructor taking a stub or channel. Executors
  are remade when the worker's connection changes
  (`_ReconnectingExecutorFactory`).
  """
  factory = _ReconnectingExecutorFactory(get_stub, default_num_clients)
  return sync_execution_context.SyncExecutionContext(
      executor_fn=factory,
      compiler_fn=compile_for_worker,
      transform_args=tensorflow_computation.transform_args,
      transform_result=tensorflow_computation.transform_result)


class _ThreadedContext(context_base.AsyncContext):
  """An AsyncContext running a sync context's `invoke` in a thread."""

  def __init__(self, sync_context_):
    self._context = sync_context_

  async def invoke(self, comp, arg):
    return await asyncio.to_thread(self._context.invoke, comp, arg)


def mergeable_context(sync_contexts: Sequence[object]):
  """TFF's `MergeableCompExecutionContext` over one sync context per worker.

  A computation is compiled to mergeable form; its CLIENTS-placed argument
  is split into len(sync_contexts) contiguous slices, one per worker, and the
  partial aggregates are merged. TFF's `RemoteExecutor` blocks its event loop
  on every gRPC call, so each worker's context is invoked in its own thread;
  otherwise the slices would run one after another. (TFF 0.87 exports no
  public builder of this context over given contexts.)
  """
  context = mergeable.MergeableCompExecutionContext(
      async_contexts=[_ThreadedContext(c) for c in sync_contexts],
      compiler_fn=mergeable_comp_compiler.compile_to_mergeable_comp_form)

  def quiet_worker_errors(loop, info):
    # When one worker's slice fails, TFF raises at once and leaves the other
    # slices' tasks to fail later (the pool is stopped): their "exception
    # never retrieved" tracebacks would bury the one line already raised.
    if not isinstance(info.get("exception"), WorkerError):
      loop.default_exception_handler(info)

  # Why private: the context owns its event loop and has no setter for it.
  context._async_runner._event_loop.set_exception_handler(quiet_worker_errors)  # pylint: disable=protected-access
  return context


# --- A stub that turns a lost worker's errors into one line.

_LOST_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
                         grpc.StatusCode.DEADLINE_EXCEEDED})


def _forward(method: str):
  return lambda self, request: self._call(method, request)  # pylint: disable=protected-access


class GuardedStub(remote_executor_stub.RemoteExecutorStub):
  """Turns a lost worker's gRPC errors into a `WorkerLostError`.

  TFF marks UNAVAILABLE retryable and retries the whole call forever; a
  `WorkerError` is not retryable, so the computation stops with one line.
  Subclasses TFF's internal stub interface: `RemoteExecutor` takes nothing
  else and TFF has no public hook for its errors.

  Args:
    worker: the `workers._Worker` (for `loss_message`, `_lost`, `describe`,
      `serves`).
    stub: the worker's `grpc_stub`.
  """

  def __init__(self, worker, stub):
    self._worker = worker
    self._stub = stub

  @property
  def connection(self):
    """The worker's gRPC stub this wraps: a new one at every (re)connect."""
    return self._stub

  def _call(self, method: str, request):
    try:
      return getattr(self._stub, method)(request)
    except ValueError as e:
      if "closed channel" not in str(e):
        raise
      # The worker was marked lost, stopped or restarted since this stub
      # was handed out.
      raise WorkerLostError(self._worker.loss_message(
          "its connection was closed (worker stopped)")) from None
    except (grpc.RpcError, executors_errors.RetryableError) as e:
      code = e.code() if isinstance(e, grpc.Call) else None
      if code in _LOST_CODES or self._worker._lost:  # pylint: disable=protected-access
        raise WorkerLostError(self._worker.loss_message(e)) from None
      if isinstance(e, executors_errors.RetryableError):
        raise WorkerError(f"{self._worker.describe()}: gRPC "
                          f"{getattr(code, 'name', code)}: {e.details()}") from None
      raise

  def _dispose(self, method: str, request, response):
    if not self._worker.serves(self._stub):
      # A closed connection (the worker stopped or restarted since): nothing
      # is left on it, and asking why it closed would wait for the new process.
      return response
    try:
      return self._call(method, request)
    except WorkerLostError:
      return response  # Nothing left to dispose of on a lost worker.

  get_executor = _forward("get_executor")
  create_value = _forward("create_value")
  create_struct = _forward("create_struct")
  create_call = _forward("create_call")
  create_selection = _forward("create_selection")
  compute = _forward("compute")

  def dispose(self, request):
    return self._dispose("dispose", request, executor_pb2.DisposeResponse())

  def dispose_executor(self, request):
    return self._dispose("dispose_executor", request,
                         executor_pb2.DisposeExecutorResponse())

  @property
  def is_ready(self) -> bool:
    return self._stub.is_ready
