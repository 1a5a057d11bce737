#!/usr/bin/env bash
# Fails (and kills them) if TFF worker_binary processes outlived a run or the test suite.
left=$(pgrep -f 'tensorflow_federated/.*worker_binary' || true)
if [ -n "$left" ]; then
  echo "check_no_workers: TFF worker_binary processes were left running: $left" >&2
  pkill -KILL -f 'tensorflow_federated/.*worker_binary' || true
  exit 1
fi
exit 0
