#!/usr/bin/env bash
# Fails (and kills them) if TFF worker_binary processes started by this `make`
# invocation outlived it. The Makefile exports FEDERATED_VISION_SESSION; every
# process it starts, TFF workers included, inherits it. Without the variable,
# every TFF worker on the machine counts.
status=0
for pid in $(pgrep -f 'tensorflow_federated/.*worker_binary' || true); do
  if [ -n "${FEDERATED_VISION_SESSION:-}" ] && ! tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null \
      | grep -qx "FEDERATED_VISION_SESSION=${FEDERATED_VISION_SESSION}"; then
    continue  # Someone else's.
  fi
  echo "check_no_workers: TFF worker_binary $pid was left running; killing it" >&2
  kill -KILL "$pid" 2>/dev/null || true
  status=1
done
exit $status
