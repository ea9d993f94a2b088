#!/usr/bin/env bash
# Runs Tandem's three processes on loopback: a target worker, an optional draft worker and the
# coordinator, each on a port the OS picks, with /metrics on another such port.
#
# usage: tandem-local.sh start --target MODEL [--draft MODEL] [--dir RUNDIR] [--threads N]
#                              [--draft-tokens N|auto] [--worker-arg ARG]... [--coordinator-arg ARG]...
#                              [--timeout S] [--tls]
#        tandem-local.sh stop   [--dir RUNDIR] [--timeout S]
#        tandem-local.sh status [--dir RUNDIR]
#
# start waits until every process answers grpc.health.v1 SERVING, then writes to RUNDIR:
#   coordinator.addr (HOST:PORT to give clients), NAME.addr, NAME.metrics (HOST:PORT of
#   /metrics), NAME.pid, NAME.log (stderr), NAME.out (stdout) for NAME in target, draft,
#   coordinator. If anything fails it stops what it started and exits 1 with the log's tail.
# --tls: mutual TLS between the coordinator and the workers, TLS on the coordinator and an API
#   key: certificates from tools/make-dev-certs.sh in RUNDIR/tls (ca.crt for clients), the key
#   in RUNDIR/tls/api-key (clients send "authorization: Bearer KEY"), the coordinator's keys
#   file RUNDIR/tls/api-keys (edit it, then SIGHUP the coordinator to reread it).
# stop sends SIGTERM (the processes drain), waits up to --timeout seconds (default 20), then
#   SIGKILLs what is left. status prints one line per process; exit 0 when all are SERVING.
# Exit 2 on bad arguments. Binaries come from $TANDEM_BIN (default: build/bin of this checkout,
# or $TANDEM_BUILD_DIR/bin); RUNDIR defaults to $TANDEM_RUN_DIR or /tmp/tandem-local-$UID.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${TANDEM_BIN:-${TANDEM_BUILD_DIR:-$root/build}/bin}
python=${TANDEM_PYTHON:-/usr/bin/python3}
health="$root/client/python/tandem_health.py"
rundir=${TANDEM_RUN_DIR:-${TMPDIR:-/tmp}/tandem-local-$(id -u)}
names=(target draft coordinator)
tls_dir=""  # RUNDIR/tls when the stack runs with --tls

die() { echo "tandem-local: $1" >&2; exit "${2:-1}"; }
usage_error() { die "$1 (see --help)" 2; }

# True when PID is alive, not a zombie, and runs a tandem binary (guards against PID reuse).
is_ours() {
  local pid=$1 state
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ "$state" != Z ] || return 1
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q 'tandem-'
}

pid_of() { [ -f "$rundir/$1.pid" ] && cat "$rundir/$1.pid"; }

# Stops the named processes together: SIGTERM, poll up to TIMEOUT seconds, then SIGKILL what
# is left. Removes their pid files.
stop_group() {
  local timeout=$1 name pid i left; shift
  local -a pids=()
  for name in "$@"; do
    pid=$(pid_of "$name") || continue
    if is_ours "$pid"; then
      kill -TERM "$pid" 2>/dev/null
      pids+=("$pid")
    fi
  done
  for ((i = 0; i < timeout * 10; i++)); do
    left=0
    for pid in ${pids[@]+"${pids[@]}"}; do is_ours "$pid" && left=1; done
    [ $left = 1 ] || break
    sleep 0.1
  done
  for pid in ${pids[@]+"${pids[@]}"}; do
    if is_ours "$pid"; then
      echo "tandem-local: pid $pid did not stop within ${timeout}s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null
      for ((i = 0; i < 50; i++)); do is_ours "$pid" || break; sleep 0.1; done
    fi
  done
  for name in "$@"; do rm -f "$rundir/$name.pid"; done
}

# The coordinator first (it drains its streams while the workers still serve), then both
# workers at once.
stop_all() {
  stop_group "$1" coordinator
  stop_group "$1" draft target
}

# Launches NAME with the given command line; its stdout and stderr go to RUNDIR files.
launch() {
  local name=$1; shift
  : >"$rundir/$name.out"
  "$@" </dev/null >"$rundir/$name.out" 2>"$rundir/$name.log" &
  echo $! >"$rundir/$name.pid"
}

fail_with_log() {
  local name=$1 message=$2
  echo "tandem-local: $message" >&2
  if [ -s "$rundir/$name.log" ]; then
    echo "--- last lines of $rundir/$name.log:" >&2
    tail -n 15 "$rundir/$name.log" >&2
  fi
  return 1
}

# Waits for NAME's startup line "... listening on HOST:PORT (metrics on M)"; writes NAME.addr
# and NAME.metrics.
await_startup() {
  local name=$1 timeout=$2 pid line i
  pid=$(pid_of "$name")
  for ((i = 0; i < timeout * 10; i++)); do
    line=$(grep -m1 ' listening on ' "$rundir/$name.out" 2>/dev/null)
    [ -n "$line" ] && break
    is_ours "$pid" || { fail_with_log "$name" "$name exited during startup"; return 1; }
    sleep 0.1
  done
  [ -n "$line" ] || { fail_with_log "$name" "$name printed no startup line in ${timeout}s"; return 1; }
  local addr port
  addr=$(sed -n 's/.* listening on \([^ ]*\) (metrics on \([0-9]*\)).*/\1/p' <<<"$line")
  port=$(sed -n 's/.* listening on \([^ ]*\) (metrics on \([0-9]*\)).*/\2/p' <<<"$line")
  [ -n "$addr" ] || { fail_with_log "$name" "cannot parse $name's startup line: $line"; return 1; }
  echo "$addr" >"$rundir/$name.addr"
  echo "127.0.0.1:${port:-0}" >"$rundir/$name.metrics"
}

# The health checker's TLS flags: the CA and the client certificate (workers require it).
health_tls=()
use_tls_dir() {
  tls_dir=$1
  health_tls=(--tls-ca "$tls_dir/ca.crt" --tls-cert "$tls_dir/client.crt"
              --tls-key "$tls_dir/client.key")
}

# Makes RUNDIR/tls: dev certificates and a random API key (kept when they exist).
make_tls() {
  use_tls_dir "$rundir/tls"
  if [ ! -s "$tls_dir/server.crt" ]; then
    "$root/tools/make-dev-certs.sh" "$tls_dir" 2>/dev/null || die "tools/make-dev-certs.sh failed (is openssl installed?)"
  fi
  if [ ! -s "$tls_dir/api-key" ]; then
    (umask 077; openssl rand -hex 24 >"$tls_dir/api-key") || die "cannot make an API key"
    (umask 077; cp "$tls_dir/api-key" "$tls_dir/api-keys")
  fi
}

# Polls NAME's grpc.health.v1 until SERVING, giving up early when the process exits.
await_serving() {
  local name=$1 timeout=$2 status="" addr pid end
  addr=$(cat "$rundir/$name.addr"); pid=$(pid_of "$name")
  end=$((SECONDS + timeout))
  while [ $SECONDS -lt $end ]; do
    status=$("$python" "$health" --server "$addr" --wait 1 ${health_tls[@]+"${health_tls[@]}"} 2>&1)
    [ "$status" = SERVING ] && return 0
    is_ours "$pid" || { fail_with_log "$name" "$name exited while loading"; return 1; }
  done
  fail_with_log "$name" "$name is not SERVING after ${timeout}s (health: $status)"
}

cmd_start() {
  local target="" draft="" threads=2 draft_tokens="" timeout=60 tls=0
  local -a worker_args=() coordinator_args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --target) [ $# -ge 2 ] || usage_error "--target needs a MODEL"; target=$2; shift 2 ;;
      --draft) [ $# -ge 2 ] || usage_error "--draft needs a MODEL"; draft=$2; shift 2 ;;
      --dir) [ $# -ge 2 ] || usage_error "--dir needs a folder"; rundir=$2; shift 2 ;;
      --threads) [ $# -ge 2 ] || usage_error "--threads needs N"; threads=$2; shift 2 ;;
      --draft-tokens) [ $# -ge 2 ] || usage_error "--draft-tokens needs N|auto"
                      draft_tokens=$2; shift 2 ;;
      --worker-arg) [ $# -ge 2 ] || usage_error "--worker-arg needs ARG"
                    worker_args+=("$2"); shift 2 ;;
      --coordinator-arg) [ $# -ge 2 ] || usage_error "--coordinator-arg needs ARG"
                         coordinator_args+=("$2"); shift 2 ;;
      --timeout) [ $# -ge 2 ] || usage_error "--timeout needs S"; timeout=$2; shift 2 ;;
      --tls) tls=1; shift ;;
      *) usage_error "start: unknown argument '$1'" ;;
    esac
  done
  [ -n "$target" ] || usage_error "start needs --target MODEL"
  [ -e "$target" ] || usage_error "target model '$target' not found"
  [ -z "$draft" ] || [ -e "$draft" ] || usage_error "draft model '$draft' not found"
  [[ "$threads" =~ ^[1-9][0-9]*$ ]] || usage_error "--threads must be a positive integer"
  [[ "$timeout" =~ ^[1-9][0-9]*$ ]] || usage_error "--timeout must be whole seconds >= 1"
  local exe
  for exe in tandem-worker tandem-coordinator; do
    [ -x "$bin/$exe" ] || die "$bin/$exe not found; build it (cmake --build build --target $exe) or set TANDEM_BIN"
  done
  [ -f "$health" ] || die "$health not found"
  [ -x "$python" ] || die "$python not found (set TANDEM_PYTHON to a python3 with grpcio)"

  mkdir -p "$rundir" || die "cannot create $rundir"
  local name
  for name in "${names[@]}"; do
    is_ours "$(pid_of "$name")" && die "$name is already running from $rundir (pid $(pid_of "$name")); run 'tandem-local.sh stop --dir $rundir' first"
    rm -f "$rundir/$name".{pid,addr,metrics,out,log}
  done
  rm -f "$rundir/tls-on"
  local -a worker_tls=() coordinator_tls=()
  if [ $tls = 1 ]; then
    make_tls
    : >"$rundir/tls-on"
    worker_tls=(--tls-cert "$tls_dir/server.crt" --tls-key "$tls_dir/server.key"
                --tls-ca "$tls_dir/ca.crt")
    coordinator_tls=("${worker_tls[@]}" --worker-tls-cert "$tls_dir/client.crt"
                     --worker-tls-key "$tls_dir/client.key" --api-keys-file "$tls_dir/api-keys")
    worker_tls+=(--tls-client-name tandem-coordinator)  # make-dev-certs.sh's client CN
  fi

  # From here on, any failure or signal stops whatever was started.
  local started=0
  trap 'if [ $started = 0 ]; then stop_all 5; fi' EXIT
  trap 'exit 130' INT TERM

  local -a workers=(target)
  launch target "$bin/tandem-worker" --role target --model "$target" --listen 127.0.0.1:0 \
    --metrics-listen 127.0.0.1:0 --threads "$threads" ${worker_tls[@]+"${worker_tls[@]}"} \
    ${worker_args[@]+"${worker_args[@]}"}
  if [ -n "$draft" ]; then
    workers+=(draft)
    launch draft "$bin/tandem-worker" --role draft --model "$draft" --listen 127.0.0.1:0 \
      --metrics-listen 127.0.0.1:0 --threads "$threads" ${worker_tls[@]+"${worker_tls[@]}"} \
      ${worker_args[@]+"${worker_args[@]}"}
  fi
  for name in "${workers[@]}"; do
    await_startup "$name" "$timeout" || exit 1
  done
  for name in "${workers[@]}"; do
    await_serving "$name" "$timeout" || exit 1
  done

  local -a coord=("$bin/tandem-coordinator" --target "$(cat "$rundir/target.addr")"
                  --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0)
  [ -z "$draft" ] || coord+=(--draft "$(cat "$rundir/draft.addr")")
  [ -z "$draft_tokens" ] || coord+=(--draft-tokens "$draft_tokens")
  launch coordinator "${coord[@]}" ${coordinator_tls[@]+"${coordinator_tls[@]}"} \
    ${coordinator_args[@]+"${coordinator_args[@]}"}
  await_startup coordinator "$timeout" || exit 1
  await_serving coordinator "$timeout" || exit 1

  started=1
  trap - EXIT INT TERM
  for name in "${names[@]}"; do
    [ -f "$rundir/$name.pid" ] || continue
    echo "tandem-local: $name pid $(pid_of "$name") on $(cat "$rundir/$name.addr")" \
         "(metrics $(cat "$rundir/$name.metrics"))" >&2
  done
  [ -z "$tls_dir" ] || echo "tandem-local: TLS: trust $tls_dir/ca.crt; API key in $tls_dir/api-key" >&2
  echo "tandem-local: ready; coordinator at $(cat "$rundir/coordinator.addr") (in $rundir/coordinator.addr)" >&2
  cat "$rundir/coordinator.addr"
}

cmd_stop() {
  local timeout=20
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) [ $# -ge 2 ] || usage_error "--dir needs a folder"; rundir=$2; shift 2 ;;
      --timeout) [ $# -ge 2 ] || usage_error "--timeout needs S"; timeout=$2; shift 2 ;;
      *) usage_error "stop: unknown argument '$1'" ;;
    esac
  done
  [[ "$timeout" =~ ^[1-9][0-9]*$ ]] || usage_error "--timeout must be whole seconds >= 1"
  [ -d "$rundir" ] || { echo "tandem-local: nothing to stop ($rundir does not exist)" >&2; return 0; }
  stop_all "$timeout"
  echo "tandem-local: stopped" >&2
}

cmd_status() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) [ $# -ge 2 ] || usage_error "--dir needs a folder"; rundir=$2; shift 2 ;;
      *) usage_error "status: unknown argument '$1'" ;;
    esac
  done
  local name pid state all=0 seen=0
  [ ! -f "$rundir/tls-on" ] || use_tls_dir "$rundir/tls"
  for name in "${names[@]}"; do
    pid=$(pid_of "$name") || continue
    seen=1
    if is_ours "$pid"; then
      state=$("$python" "$health" --server "$(cat "$rundir/$name.addr" 2>/dev/null)" \
              ${health_tls[@]+"${health_tls[@]}"} 2>&1)
    else
      state=stopped
    fi
    [ "$state" = SERVING ] || all=3
    printf '%-12s pid %-8s %-22s metrics %-22s %s\n' "$name" "$pid" \
      "$(cat "$rundir/$name.addr" 2>/dev/null)" "$(cat "$rundir/$name.metrics" 2>/dev/null)" "$state"
  done
  if [ $seen = 0 ]; then
    echo "tandem-local: not running (no pid files in $rundir)"
    return 3
  fi
  return $all
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  status) shift; cmd_status "$@" ;;
  -h|--help|help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
  "") usage_error "expected start, stop or status" ;;
  *) usage_error "unknown command '$1'" ;;
esac
