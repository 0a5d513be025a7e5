#!/bin/sh
# The chaos run's log flood (issue 40, item 6): a rank that prints as fast
# as its pipe takes it, as the 200 MB in 4 s that once went whole into the
# head's state folder, beside its journal.
#
#   chaos_log_flood.sh [BYTES]
#       As a job's entrypoint: prints "chaos_log_flood: first line", then
#       BYTES bytes (default 200000000) of 64-byte lines, then
#       "chaos_log_flood: last line", and exits 0.
#   chaos_log_flood.sh --job-file NAME RANKS LOG_LIMIT BYTES
#       Prints a job file (working_dir_mode shared, no package) whose RANKS
#       ranks each run the above with BYTES, under log_limit LOG_LIMIT
#       (a size as job files take it: 1Mi).
#
# What must hold once such a job ended (the chaos run checks it): the head
# and every node agent still run; the head's <state>/jobs grew by at most
# RANKS x (LOG_LIMIT + 16 KiB); and `clusterctl logs JOB --rank R` has the
# first line, a "[clusterd: ... of this rank's output dropped here (its log
# limit is ...); the last ... follow]" line, the last line, and ends with
# "[clusterd: this rank's log is cut: ...]".
set -eu

if [ "${1:-}" = "--job-file" ]; then
  if [ $# -ne 5 ]; then
    echo "usage: $0 --job-file NAME RANKS LOG_LIMIT BYTES" >&2
    exit 2
  fi
  self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
  cat <<EOF
name: $2
entrypoint: ["/bin/sh", "$self", "$5"]
working_dir: /tmp
working_dir_mode: shared
num_workers: $3
resources_per_worker: {CPU: 0}
log_limit: $4
EOF
  exit 0
fi

bytes=${1:-200000000}
case "$bytes" in
  '' | *[!0-9]*)
    echo "$0: BYTES must be a whole number, not '$bytes'" >&2
    exit 2
    ;;
esac
echo "chaos_log_flood: first line"
# yes(1) writes as fast as the pipe drains: the rank is never the bottleneck.
yes "chaos_log_flood ..............................................." | head -c "$bytes"
echo
echo "chaos_log_flood: last line"
