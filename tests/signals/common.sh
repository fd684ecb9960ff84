# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by the signal tests: a real Prometheus (Debian's) on loopback with its
# own port and data directory, and fake_api.py (faults, and an exporter whose
# value the test sets). Everything started here is stopped by PID on exit.
#
#   start_fake NAME [--tls CERT KEY]   -> FAKE_PORT_<NAME>, value file $T/value
#   start_prometheus TARGET...         -> PROM_URL (scrapes every 1s; its query log in $T/query.log)
#   wait_for DESC SECONDS CMD...       retries CMD until it succeeds
# For the lanes-agent tests (with tests/net/common.sh sourced first):
#   node_tables                        the inference class, node, NIC and [agent]
#   write_agent_toml < SIGNALS-AND-WINDOWS  -> $T/lanes.toml: that text, the
#                                      training (busy_window "busy") and inference
#                                      classes, the namespace's node and NIC, and
#                                      [agent] writing $METRICS
#   start_agent                        -> $AGENT (PID); returns once its metrics
#                                      show a fresh value of signal "demand"
#   stop_agent                         SIGTERM; fails unless it exits 0
# With IN_NS set (e.g. "nsenter --net=/run/netns/X"), the servers run in that
# network namespace. A `cleanup` function defined before (tests/net/common.sh)
# runs after ours.
set -u
IN_NS=${IN_NS:-}
BUILDDIR=${LANES_BUILDDIR:-.}
SRCDIR=${LANES_SRCDIR:-.}
LANESCTL=$BUILDDIR/lanesctl/lanesctl
[ -x "$LANESCTL" ] || { echo "FAIL: $LANESCTL not built"; exit 1; }
command -v prometheus >/dev/null || { echo "FAIL: prometheus not installed (Debian: apt-get install prometheus)"; exit 1; }
command -v python3 >/dev/null || { echo "FAIL: python3 not installed"; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../stop_pid.sh"
T=$(mktemp -d /tmp/lsig$$.XXXXXX)
STARTED_PIDS=""
fail() { echo "FAIL: $*"; [ -f "$T/agent.log" ] && tail -20 "$T/agent.log"; exit 1; }
cleanup_signals() {
  for pid in $STARTED_PIDS; do stop_pid "$pid" 10 2>/dev/null; done
  rm -rf "$T"
  if declare -F cleanup >/dev/null; then cleanup; fi
}
trap cleanup_signals EXIT
trap 'exit 1' INT TERM
echo 0 >"$T/value"

wait_for() {  # DESC SECONDS CMD...
  local desc=$1 secs=$2 i
  shift 2
  for ((i = 0; i < secs * 10; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "timed out after ${secs}s waiting for $desc"
}

start_fake() {  # NAME [--tls CERT KEY]
  local name=$1
  shift
  $IN_NS python3 "$SRCDIR/tests/signals/fake_api.py" --port-file "$T/port.$name" --value-file "$T/value" "$@" \
    2>>"$T/fake.$name.log" &
  STARTED_PIDS="$STARTED_PIDS $!"
  wait_for "fake API $name" 10 test -s "$T/port.$name"
  printf -v "FAKE_PORT_$name" '%s' "$(cat "$T/port.$name")"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start_prometheus() {  # TARGET... (host:port of /metrics endpoints)
  local port targets="" t
  port=$(free_port)
  for t in "$@"; do targets="$targets'$t',"; done
  cat >"$T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
  query_log_file: $T/query.log
scrape_configs:
  - job_name: lanes-test
    static_configs:
      - targets: [${targets%,}]
YML
  mkdir -p "$T/prom-data"
  $IN_NS prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom-data" \
    --web.listen-address="127.0.0.1:$port" --log.level=warn >"$T/prometheus.log" 2>&1 &
  STARTED_PIDS="$STARTED_PIDS $!"
  PROM_URL=http://127.0.0.1:$port
  PROM_PID=$!
  wait_for "prometheus to be ready" 60 $IN_NS curl -sf -m 10 "$PROM_URL/-/ready"
}

# The value of a PromQL expression as Prometheus itself answers it.
prom_query() { $IN_NS curl -sf -m 10 --get "$PROM_URL/api/v1/query" --data-urlencode "query=$1"; }

# --- lanes-agent on the namespace's node (tests/net/common.sh) ---------------
AGENT_BIN=$BUILDDIR/agent/lanes-agent
PROM_DIR=$T/textfile
METRICS=$PROM_DIR/lanes_agent.prom

# The inference class, the namespace's node and NIC, and the agent's
# textfile: the end of every agent lanes.toml.
node_tables() {
  cat <<TOML
[classes.inference]
rate = "100Mbit"
ceil = "1Gbit"
[nodes]
state_dir = "$STATE"
cgroup_root = "$CGROOT"
[[nodes.nic]]
device = "$DEV"
link_speed = "10Gbit"
[agent]
textfile_dir = "$PROM_DIR"
TOML
}

write_agent_toml() {  # < the [signals.*] and [windows.*] tables
  {
    echo 'default_class = "training"'
    cat
    cat <<TOML
[classes.training]
rate = "100Mbit"
ceil = "1Gbit"
busy_window = "busy"
busy_ceil = "200Mbit"
TOML
    node_tables
  } >"$T/lanes.toml"
}

start_agent() {
  [ -x "$AGENT_BIN" ] || fail "$AGENT_BIN not built"
  $NA "$AGENT_BIN" --config "$T/lanes.toml" --node n1 2>"$T/agent.log" &
  AGENT=$!
  STARTED_PIDS="$STARTED_PIDS $AGENT"
  wait_for "agent metrics" 20 test -s "$METRICS"
  wait_for "a fresh demand value" 30 grep -q 'lanes_agent_signal_fresh{signal="demand"} 1' "$METRICS"
}

# SIGTERM, then at most 30 s for the agent to restore the ceils and exit
# (tests/stop_pid.sh); a hang is a failure that says so.
stop_agent() {
  stop_pid "$AGENT" 30 || fail "agent exit $? after SIGTERM (137: still running 30 s after it): $(tail -5 "$T/agent.log")"
}
