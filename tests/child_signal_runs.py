"""A chain of train_main invocations on one directory, each sent SIGINT at
one moment around its first checkpoint write, then one left to finish; run
as a child of a test (tests/test_train_main.py), so the signals hit this
process, never pytest. Each invocation runs in this process
(`in_process.run`: its exit status and stderr are the binary's), with the
method built once for all (`built_method_memo`), as a user would press
Ctrl-C and then run the same command again.

    python tests/child_signal_runs.py <repo> '<json {"args": [...],
        "moments": [...]}>'

prints one line `RUN <json {"moment", "code", "stderr", "stdout"}>` per
invocation as it ends. Moments (when SIGINT is sent, relative to the first
`Checkpoints.save` of the invocation):
  "at the write"          as the save starts
  "as the write's task ends"  from the event loop just after TFF's save
                          coroutine returned (the moment asyncio.run's own
                          SIGINT handler dropped the signal)
  "after the write"       as the save returns
  "+<seconds> s"          from a timer started as the save starts
  "SIGKILL"               none: once the save returned, it prints KILL_ME
                          and waits for the test to SIGKILL this process
"""

import asyncio
import json
import os
import signal
import sys
import threading
import time

REPO, SPEC = sys.argv[1], json.loads(sys.argv[2])
sys.path[:0] = [REPO, os.path.join(REPO, "tests")]

import built_method_memo  # pylint: disable=g-import-not-at-top,wrong-import-position
import in_process  # pylint: disable=g-import-not-at-top,wrong-import-position
from federated_vision.training import checkpoints  # pylint: disable=g-import-not-at-top,wrong-import-position


def _interrupt():
  os.kill(os.getpid(), signal.SIGINT)


class _Hook:
  """Patches `Checkpoints.save` to send SIGINT at `moment` of its first
  call in an invocation."""

  def __init__(self):
    self.moment, self.armed, self.running = None, False, False
    self.timer = None
    real = checkpoints.Checkpoints.save
    hook = self

    def save(ckpt, state, version):
      if not hook.armed:
        return real(ckpt, state, version)
      hook.armed = False
      moment = hook.moment
      if moment == "at the write":
        _interrupt()
      elif moment.startswith("+"):
        hook.timer = threading.Timer(float(moment[1:].split()[0]), hook.late)
        hook.timer.start()
      elif moment == "as the write's task ends":
        manager_save = ckpt._manager.save  # pylint: disable=protected-access

        async def save_then_interrupt(*args):
          ckpt._manager.save = manager_save  # pylint: disable=protected-access
          await manager_save(*args)
          asyncio.get_running_loop().call_soon(_interrupt)
        ckpt._manager.save = save_then_interrupt  # pylint: disable=protected-access
      real(ckpt, state, version)
      if moment == "after the write":
        _interrupt()
      elif moment == "SIGKILL":
        os.write(1, b"KILL_ME\n")  # Past the run's own (captured) stdout.
        time.sleep(600)  # The test's SIGKILL ends this process here.
    checkpoints.Checkpoints.save = save

  def late(self):
    if self.running:  # Never after the invocation returned.
      _interrupt()


def main():
  hook, built = _Hook(), {}
  signal.signal(signal.SIGINT, signal.default_int_handler)
  for moment in SPEC["moments"]:
    hook.moment, hook.armed, hook.running = moment, True, True
    with built_method_memo.methods_built_once(built):
      proc = in_process.run("experiments.train_main", *SPEC["args"])
    hook.running = False
    if hook.timer is not None:
      hook.timer.cancel()
      hook.timer.join()
    print("RUN", json.dumps({"moment": moment, "code": proc.returncode,
                             "stderr": proc.stderr[-3000:],
                             "stdout": proc.stdout}), flush=True)


if __name__ == "__main__":
  main()
