# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by tests/net/common.sh and tests/signals/common.sh.
#
#   stop_pid PID [SECONDS]   SIGTERM a child of this shell, wait at most
#                            SECONDS (default 30) for it to exit (a zombie
#                            has exited), then SIGKILL it, saying so on
#                            stderr. Returns its exit status, 137 when it had
#                            to be killed: a hang fails the test that says
#                            so, instead of waiting for the test's time limit.
stop_pid() {
  local pid=$1 secs=${2:-30} i st=""
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < secs * 10; i++)); do
    read -r _ _ st _ 2>/dev/null <"/proc/$pid/stat" || break
    [ "$st" = Z ] && break
    sleep 0.1
  done
  if [ "$st" != Z ] && [ -e "/proc/$pid" ]; then
    echo "stop_pid: $pid still running ${secs} s after SIGTERM: SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 137
  fi
  wait "$pid"
}
