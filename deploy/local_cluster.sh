#!/usr/bin/env bash
# Runs a detdb cluster of N nodes on this machine, for trying cluster mode by
# hand and for tests that need real processes talking over real sockets.
#
#   deploy/local_cluster.sh up N [--partitions_per_node=K] [--netns] [--insecure] [--prometheus] [--dir=DIR] [-- detdb flags...]
#   deploy/local_cluster.sh down   [--dir=DIR]
#   deploy/local_cluster.sh status [--dir=DIR]
#   deploy/local_cluster.sh logs [-f] [I] [--dir=DIR]
#   deploy/local_cluster.sh cut I J  / heal I J   [--dir=DIR]     (--netns clusters only)
#   deploy/local_cluster.sh kill [I...] [--dir=DIR]    SIGKILL nodes (default: all)
#   deploy/local_cluster.sh start [I...] [--dir=DIR]   restart them with their data (default: all not running)
#
# Every node logs its input to DIR/data<i> (--data_dir; emptied by `up`), so
# `kill` + `start` of every node is a crash and a recovery: the nodes replay
# their logs, agree on the last epoch durable everywhere and go on; `kill I`
# + `start I` of one node while the others run is a rejoin: node I replays
# its log and catches up from the others, which keep running
# (docs/DURABILITY.md, "Rejoining a running cluster").
#
# `up` builds detdb and detdb-ctl if they are missing, picks free ports on
# 127.0.0.1, writes DIR/cluster.pbtxt (proto/cluster.proto: node i serves
# partitions i*K .. i*K+K-1), starts every node in the background (its own
# session; output in DIR/node<i>.log, pid in DIR/node<i>.pid) and waits until
# `detdb-ctl wait_ready` sees all of them ready. The last line it prints (the
# only line on stdout) is the config's absolute path, so a test can do
#   cfg=$(deploy/local_cluster.sh up 3)
# Every node also serves /metrics and /healthz on its http_port (in the
# config; docs/OPERATING.md), on 127.0.0.1 (--netns: on its namespace's
# address, the config's http_host). With --prometheus, `up` then starts Debian's
# `prometheus` scraping every node every 5 s (DIR/prometheus.yml, data in
# DIR/prometheus, pid in DIR/prometheus.pid; `down` stops it) and prints its
# address (on stderr).
# If a node does not come up, it prints the end of every log, stops what it
# started and exits 1. `down` stops only the processes `up` recorded (SIGTERM,
# then SIGKILL after 10 s) and is safe to run twice.
#
# CURVE (docs/SECURITY.md) is on by default: `up` writes a key pair per node
# and one for clients into DIR/keys (detdb-ctl keygen; secret keys and the
# allowlist mode 0600), puts the nodes' public keys in the config and starts
# every node with its secret key and the allowlist. detdb-ctl, detdb-cli and
# detdb-bench find DIR/keys/client.key beside the config by themselves.
# --insecure turns CURVE off (e.g. for benchmarks; the nodes log it).
#
# --netns (root only) is for tests that cut the links between "hosts": node i
# runs in network namespace detdb-n<i> with address 10.77.0.<i+1>/24 on a
# veth plugged into bridge detdb-br0 (10.77.0.254) of the root namespace, and
# `cut I J` / `heal I J` drop / restore all traffic between nodes I and J
# (a blackhole route to the other's address in each namespace). `down`
# deletes the namespaces, veths and bridge that `up --netns` created.
#
# Environment:
#   DETDB_CLUSTER_DIR   cluster folder (default /tmp/detdb-cluster-$USER); --dir wins
#   DETDB_BIN_DIR       folder holding detdb and detdb-ctl (default build/release/deploy);
#                       when set, nothing is built
#   DETDB_EPOCH_US      epoch_us of the config (default 1000)
#   DETDB_BASE_PORT     first port to try instead of a random one in 20000..59000
#   DETDB_READY_TIMEOUT_S  how long `up` waits for the nodes (default 60)
#   DETDB_REBUILD=1     run the (incremental) build even if the binaries exist
set -euo pipefail
shopt -s nullglob

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROG="deploy/local_cluster.sh"

BIN_DIR="${DETDB_BIN_DIR:-$ROOT/build/release/deploy}"
EPOCH_US="${DETDB_EPOCH_US:-1000}"
READY_TIMEOUT_S="${DETDB_READY_TIMEOUT_S:-60}"
STOP_TIMEOUT_S=10
MAX_NODES=64          # node ids are 0..63 (client/cluster_config.cc)
MAX_PARTITIONS=1024

# --netns names and addresses. Interface names must stay under 16 bytes.
NS_PREFIX="detdb-n"   # namespace of node i: detdb-n<i>
VETH_HOST="detdb-h"   # root-namespace end of node i's veth, a bridge port
VETH_NODE="detdb-p"   # node i's end, inside detdb-n<i>
BRIDGE="detdb-br0"
SUBNET="10.77.0"      # node i: 10.77.0.<i+1>/24
BRIDGE_IP="$SUBNET.254"
NETNS_BASE_PORT=41000 # each namespace has its own ports: no need to search

say() { printf 'local_cluster: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

usage() {
  cat <<EOF
usage: $PROG COMMAND [options]

  up N [--partitions_per_node=K] [--netns] [--insecure] [--prometheus] [--dir=DIR] [-- extra detdb flags...]
        build if needed, write DIR/cluster.pbtxt for N nodes (K partitions each,
        default 1), start them, wait until all are ready; prints the config's
        absolute path last. Refuses while a cluster of DIR still runs.
        --prometheus: also start prometheus scraping every node's /metrics and
        print its address. CURVE on (keys in DIR/keys) unless --insecure (docs/SECURITY.md).
  down [--dir=DIR]
        stop the nodes this script started (SIGTERM, SIGKILL after ${STOP_TIMEOUT_S} s),
        delete the network namespaces of an --netns cluster. Idempotent.
  status [--dir=DIR]
        per node: pid and whether it runs; then \`detdb-ctl info\`.
  logs [-f] [I] [--dir=DIR]
        last 50 lines of every node's log (or node I's); -f follows them.
  cut I J | heal I J [--dir=DIR]
        (--netns clusters, root) drop / restore all traffic between nodes I and J.
  kill [I...] [--dir=DIR]
        SIGKILL nodes I... (default: every running node): a crash.
  start [I...] [--dir=DIR]
        restart nodes I... (default: every node not running) with the flags
        and data of \`up\` (they recover their input logs), wait until all are ready.
  help  this text.

--netns (root): node i runs in network namespace ${NS_PREFIX}<i> at $SUBNET.<i+1>,
linked by a veth to bridge $BRIDGE ($BRIDGE_IP); meant for tests that cut links
between "hosts" with cut/heal.

DIR defaults to \${DETDB_CLUSTER_DIR:-/tmp/detdb-cluster-\$USER}. Environment:
DETDB_BIN_DIR (binaries; default build/release/deploy), DETDB_EPOCH_US (default
1000), DETDB_BASE_PORT, DETDB_READY_TIMEOUT_S (default 60), DETDB_REBUILD=1.
EOF
}

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
# in_range VALUE MIN [MAX]: VALUE is a whole number in MIN..MAX.
in_range() { is_uint "$1" && [ "$1" -ge "$2" ] && { [ $# -lt 3 ] || [ "$1" -le "$3" ]; }; }

# ---------------------------------------------------------------------------
# Arguments. Options may come before or after the command's own arguments;
# everything after `--` goes to every detdb node (up only).

CMD=""
ARGS=()
EXTRA=()
DIR="${DETDB_CLUSTER_DIR:-/tmp/detdb-cluster-${USER:-$(id -un)}}"
NETNS=0
INSECURE=0
PROMETHEUS=0
FOLLOW=0
PPN=1
PPN_GIVEN=0

parse_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --) shift; EXTRA=("$@"); break ;;
      --dir=*) DIR="${1#--dir=}" ;;
      --dir) [ $# -ge 2 ] || die "--dir needs a value"; DIR="$2"; shift ;;
      --partitions_per_node=*) PPN="${1#--partitions_per_node=}"; PPN_GIVEN=1 ;;
      --partitions_per_node) [ $# -ge 2 ] || die "--partitions_per_node needs a value"; PPN="$2"; PPN_GIVEN=1; shift ;;
      --netns) NETNS=1 ;;
      --insecure) INSECURE=1 ;;
      --prometheus) PROMETHEUS=1 ;;
      -f|--follow) FOLLOW=1 ;;
      -h|--help) CMD="help" ;;
      -*) die "unknown option '$1' (flags for detdb go after '--'; see '$PROG help')" ;;
      *) if [ -z "$CMD" ]; then CMD="$1"; else ARGS+=("$1"); fi ;;
    esac
    shift
  done
  [ -n "$DIR" ] || die "empty cluster folder (--dir / DETDB_CLUSTER_DIR)"
  DIR="$(realpath -m -- "$DIR")"
  CONFIG="$DIR/cluster.pbtxt"
  KEYS="$DIR/keys"                  # CURVE keys (`up` without --insecure)
  NETNS_FILE="$DIR/netns.created"   # what `up --netns` created, one "kind name" a line
  DETDB="$(realpath -m -- "$BIN_DIR")/detdb"
  CTL="$(realpath -m -- "$BIN_DIR")/detdb-ctl"

  if [ ${#EXTRA[@]} -gt 0 ] && [ "$CMD" != "up" ]; then die "'-- flags' only go with 'up'"; fi
  if [ "$PPN_GIVEN" = 1 ] && [ "$CMD" != "up" ]; then die "--partitions_per_node only goes with 'up'"; fi
  if [ "$FOLLOW" = 1 ] && [ "$CMD" != "logs" ]; then die "-f only goes with 'logs'"; fi
  return 0
}

# ---------------------------------------------------------------------------
# Processes.

# True if process PID exists and is not a zombie.
proc_alive() {
  local stat=""
  is_uint "$1" || return 1
  { IFS= read -r stat || true; } 2>/dev/null < "/proc/$1/stat" || return 1
  stat="${stat##*) }"               # past "pid (comm) "; comm may hold anything
  [ -n "$stat" ] && [ "${stat%% *}" != Z ]
}

# True if /proc/PID/cmdline has an argument named .../detdb (the binary, or
# the path handed to setsid, nohup or `ip netns exec` on the way there) and
# --config=$CONFIG.
cmdline_is_node() {
  local arg has_bin=0 has_cfg=0
  while IFS= read -r -d '' arg; do
    [ "${arg##*/}" = "detdb" ] && has_bin=1
    [ "$arg" = "--config=$CONFIG" ] && has_cfg=1
  done 2>/dev/null < "/proc/$1/cmdline" || true
  [ "$has_bin" = 1 ] && [ "$has_cfg" = 1 ]
}

# True if PID is alive and runs a detdb node of this folder's config. A
# recycled pid, a zombie or another cluster's detdb is not ours. cmdline is
# empty for a moment while a process execs (setsid -> nohup -> detdb), so a
# live process that does not match is looked at a few more times.
is_our_node() {
  local pid="$1" try
  for try in 1 2 3 4 5 6 7 8 9 10; do
    proc_alive "$pid" || return 1
    cmdline_is_node "$pid" && return 0
    [ "$try" = 10 ] || sleep 0.02
  done
  return 1
}

# Pids that this very `up` started: until they exec detdb their cmdline is
# this script's, so for them being alive is enough.
STARTED_PIDS=()
is_started() {
  local p
  for p in ${STARTED_PIDS[@]+"${STARTED_PIDS[@]}"}; do
    [ "$p" = "$1" ] && { proc_alive "$1"; return; }
  done
  return 1
}
owns() { is_started "$1" || is_our_node "$1"; }

# Pid recorded for node I, or empty.
recorded_pid() {
  local f="$DIR/node$1.pid" pid=""
  [ -f "$f" ] && pid="$(head -n 1 -- "$f" 2>/dev/null || true)"
  if is_uint "$pid"; then printf '%s' "$pid"; fi
}

# Node ids that have a pid file, in numeric order.
recorded_nodes() {
  local f i
  for f in "$DIR"/node*.pid; do
    i="${f##*/node}"; i="${i%.pid}"
    is_uint "$i" && printf '%s\n' "$i"
  done | sort -n
}

# Number of nodes in the config (one `nodes { ... }` line each), 0 if none.
config_nodes() {
  [ -f "$CONFIG" ] || { echo 0; return; }
  grep -c '^nodes {' -- "$CONFIG" || true
}

# Stops every node with a pid file in DIR: SIGTERM, then SIGKILL for those
# still running after STOP_TIMEOUT_S. Removes the pid files.
stop_nodes() {
  local i pid waited=0 alive=() left=()
  for i in $(recorded_nodes); do
    pid="$(recorded_pid "$i")"
    if [ -n "$pid" ] && owns "$pid"; then
      say "stopping node $i (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      alive+=("$i:$pid")
    fi
  done
  while [ ${#alive[@]} -gt 0 ] && [ "$waited" -lt $((STOP_TIMEOUT_S * 10)) ]; do
    sleep 0.1
    waited=$((waited + 1))
    left=()
    for i in "${alive[@]}"; do
      # Only alive: a pid recycled within these seconds is caught below.
      if proc_alive "${i#*:}"; then left+=("$i"); fi
    done
    alive=(${left[@]+"${left[@]}"})
  done
  for i in ${alive[@]+"${alive[@]}"}; do
    pid="${i#*:}"
    if owns "$pid"; then
      say "node ${i%%:*} (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT_S} s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  rm -f -- "$DIR"/node*.pid
}

# Prints the node ids of DIR's cluster that run, one a line.
running_nodes() {
  local i pid
  for i in $(recorded_nodes); do
    pid="$(recorded_pid "$i")"
    if [ -n "$pid" ] && is_our_node "$pid"; then printf '%s\n' "$i"; fi
  done
}

print_log_tails() {
  local i n f
  n="$(config_nodes)"
  for ((i = 0; i < n; i++)); do
    f="$DIR/node$i.log"
    [ -f "$f" ] || continue
    printf '==> %s <==\n' "$f" >&2
    tail -n 50 -- "$f" >&2 || true
  done
}

# Serializes up/down/cut/heal on one folder. The lock fd (9) is closed in
# every process started below so a node never holds it.
lock_dir() {
  command -v flock >/dev/null || return 0
  { : >> "$DIR/.lock"; } 2>/dev/null || die "cannot write in $DIR (another user's cluster?)"
  exec 9>>"$DIR/.lock"
  flock -w 120 9 || die "$DIR is locked by another $PROG for over 120 s"
}

# ---------------------------------------------------------------------------
# Build.

ensure_binaries() {
  if [ -x "$DETDB" ] && [ -x "$CTL" ] && [ "${DETDB_REBUILD:-0}" != 1 ]; then return 0; fi
  if [ -n "${DETDB_BIN_DIR:-}" ]; then
    [ -x "$DETDB" ] && [ -x "$CTL" ] && return 0
    die "DETDB_BIN_DIR=$DETDB_BIN_DIR holds no executable detdb and detdb-ctl"
  fi
  say "building detdb and detdb-ctl (cmake --preset release)"
  (
    cd "$ROOT"
    command -v cmake >/dev/null || deploy/install-deps.sh
    cmake --preset release >/dev/null && cmake --build --preset release --target detdb detdb-ctl
  ) >&2 || die "build failed"
  if [ ! -x "$DETDB" ] || [ ! -x "$CTL" ]; then die "the build made no $DETDB and $CTL"; fi
}

# ---------------------------------------------------------------------------
# Ports and config.

# True if nothing on this machine has a TCP socket on PORT (listening or
# connected, TIME-WAIT included) and nothing answers on 127.0.0.1:PORT.
port_free() {
  local p="$1" used=""
  if command -v ss >/dev/null; then
    used="$(ss -Htan "sport = :$p" 2>/dev/null || true)"
    [ -z "$used" ] || return 1
  fi
  # shellcheck disable=SC2016  # $1 expands in the inner bash
  if timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$p" 2>/dev/null; then return 1; fi
  return 0
}

# Sets PORTS to COUNT free ports, scanning up from a random base in
# 20000..59000 (or DETDB_BASE_PORT).
PORTS=()
pick_ports() {
  local count="$1" p
  if [ -n "${DETDB_BASE_PORT:-}" ]; then
    in_range "$DETDB_BASE_PORT" 1024 65000 || die "DETDB_BASE_PORT must be a port in 1024..65000"
    p="$DETDB_BASE_PORT"
  else
    p=$(( (RANDOM * 32768 + RANDOM) % 39001 + 20000 ))
  fi
  PORTS=()
  while [ ${#PORTS[@]} -lt "$count" ]; do
    [ "$p" -le 65535 ] || die "found only ${#PORTS[@]} of $count free ports"
    if port_free "$p"; then PORTS+=("$p"); fi
    p=$((p + 1))
  done
}

# CURVE keys for N nodes and a client in $KEYS (none with --insecure).
make_keys() {
  local n="$1" i
  rm -rf -- "$KEYS"
  [ "$INSECURE" = 0 ] || { say "--insecure: CURVE is off, anyone who reaches the ports can talk to the nodes"; return 0; }
  mkdir -p -- "$KEYS"
  chmod 700 -- "$KEYS"
  for ((i = 0; i < n; i++)); do "$CTL" keygen "$KEYS/node$i" > /dev/null; done
  "$CTL" keygen "$KEYS/client" > /dev/null
  (umask 077; cat -- "$KEYS/client.pub" > "$KEYS/allowlist")
  say "CURVE on: keys in $KEYS (clients: --curve_key_file=$KEYS/client.key, found by default beside the config)"
}

# Writes the config for N nodes, K partitions each. Node i's host is
# 127.0.0.1 (ports from PORTS) or, with --netns, its namespace's address.
write_config() {
  local n="$1" k="$2" i p host peer client http parts tmp
  tmp="$CONFIG.tmp.$$"
  {
    printf '# detdb cluster (proto/cluster.proto), written by %s up %s on %s\n' "$PROG" "$n" "$(date -u +%FT%TZ)"
    printf 'num_partitions: %d\n' $((n * k))
    printf 'epoch_us: %d\n' "$EPOCH_US"
    for ((i = 0; i < n; i++)); do
      if [ "$NETNS" = 1 ]; then
        host="$SUBNET.$((i + 1))"
        peer=$((NETNS_BASE_PORT + 2 * i)); client=$((peer + 1)); http=$((NETNS_BASE_PORT + 1000 + i))
      else
        host="127.0.0.1"
        peer="${PORTS[3 * i]}"; client="${PORTS[3 * i + 1]}"; http="${PORTS[3 * i + 2]}"
      fi
      parts=""
      for ((p = i * k; p < (i + 1) * k; p++)); do parts+=" partitions: $p"; done
      if [ -f "$KEYS/node$i.pub" ]; then parts+=" curve_public_key: \"$(cat -- "$KEYS/node$i.pub")\""; fi
      parts+=" http_port: $http"
      # /metrics binds 127.0.0.1 unless told otherwise: in a namespace that is
      # unreachable from the host, so --netns binds the namespace's address
      # (a private bridge; docs/SECURITY.md).
      if [ "$NETNS" = 1 ]; then parts+=" http_host: \"$host\""; fi
      printf 'nodes { id: %d host: "%s" peer_port: %d client_port: %d%s }\n' "$i" "$host" "$peer" "$client" "$parts"
    done
  } > "$tmp"
  mv -f -- "$tmp" "$CONFIG"
}

# ---------------------------------------------------------------------------
# Network namespaces (--netns).

need_netns_tools() {
  [ "$(id -u)" -eq 0 ] || die "--netns creates network namespaces, veths and a bridge: run as root (e.g. sudo $PROG ...)"
  command -v ip >/dev/null || die "--netns needs the 'ip' command (Debian: apt-get install iproute2)"
  ip netns list >/dev/null 2>&1 || die "'ip netns' does not work here (no network namespace support?)"
}

ns_exists() { [ -e "/var/run/netns/$1" ] || ip netns list 2>/dev/null | grep -q "^$1\( \|$\)"; }
link_exists() { ip link show dev "$1" >/dev/null 2>&1; }

# Appends "KIND NAME" to NETNS_FILE before creating it, so a failure halfway
# leaves nothing that netns_teardown does not know about.
record() { printf '%s %s\n' "$1" "$2" >> "$NETNS_FILE"; }

# Deletes what NETNS_FILE lists, newest first, then the file. Deleting a
# namespace deletes the veth end inside it and with it the other end.
netns_teardown() {
  [ -f "$NETNS_FILE" ] || return 0
  need_netns_tools
  local kind name
  while read -r kind name; do
    case "$kind" in
      netns) if ns_exists "$name"; then ip netns del "$name" || say "could not delete namespace $name"; fi ;;
      link) if link_exists "$name"; then ip link del "$name" || say "could not delete link $name"; fi ;;
    esac
  done < <(tac -- "$NETNS_FILE")
  rm -f -- "$NETNS_FILE"
  say "deleted the network namespaces, veths and bridge of $DIR"
}

netns_setup() {
  local n="$1" i ns
  # Names are global to the machine: another folder's --netns cluster, or
  # anything else using them or the subnet, must not be touched.
  link_exists "$BRIDGE" && die "bridge $BRIDGE exists and $DIR did not create it: another --netns cluster runs? ('$PROG down --dir=THAT_DIR', or 'ip link del $BRIDGE')"
  for ((i = 0; i < n; i++)); do
    ns_exists "$NS_PREFIX$i" && die "network namespace $NS_PREFIX$i exists and $DIR did not create it ('ip netns del $NS_PREFIX$i' if it is stale)"
    link_exists "$VETH_HOST$i" && die "link $VETH_HOST$i exists and $DIR did not create it"
  done
  if [ -n "$(ip -4 -o addr show to "$SUBNET.0/24" 2>/dev/null)" ]; then
    die "an interface of this machine already has an address in $SUBNET.0/24"
  fi
  if [ "$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || echo 0)" = 1 ] &&
     iptables -S FORWARD 2>/dev/null | grep -q '^-P FORWARD DROP'; then
    say "warning: bridged traffic goes through iptables FORWARD (bridge-nf-call-iptables=1), whose policy is DROP (Docker?): nodes may not reach each other"
  fi

  : > "$NETNS_FILE"
  record link "$BRIDGE"
  ip link add "$BRIDGE" type bridge forward_delay 0
  ip addr add "$BRIDGE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  for ((i = 0; i < n; i++)); do
    ns="$NS_PREFIX$i"
    record netns "$ns"
    ip netns add "$ns"
    record link "$VETH_HOST$i"
    ip link add "$VETH_HOST$i" type veth peer name "$VETH_NODE$i"
    ip link set "$VETH_NODE$i" netns "$ns"
    ip link set "$VETH_HOST$i" master "$BRIDGE"
    ip link set "$VETH_HOST$i" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$SUBNET.$((i + 1))/24" dev "$VETH_NODE$i"
    ip -n "$ns" link set "$VETH_NODE$i" up
  done
  say "created namespaces ${NS_PREFIX}0..${NS_PREFIX}$((n - 1)) ($SUBNET.1..$SUBNET.$n) on bridge $BRIDGE ($BRIDGE_IP)"
}

# ---------------------------------------------------------------------------
# Commands.

UP_DONE=0
CTL_PID=""
# EXIT trap of `up`: unless the cluster came up, show the logs and undo
# everything (nodes, namespaces).
up_abort() {
  local rc="$1"
  [ "$UP_DONE" = 1 ] && return 0
  trap - EXIT INT TERM HUP
  if [ -n "$CTL_PID" ]; then kill "$CTL_PID" 2>/dev/null || true; fi
  print_log_tails
  say "the cluster did not come up; stopping what was started"
  stop_nodes
  netns_teardown || true
  [ "$rc" -ne 0 ] || rc=1
  exit "$rc"
}

# --prometheus: Debian's prometheus scraping every node's /metrics (the
# config's host:http_port of every node).
start_prometheus() {
  local n="$1" i targets="" pid port
  command -v prometheus >/dev/null || die "--prometheus: 'prometheus' is not installed (Debian: apt-get install prometheus)"
  stop_prometheus   # one left from an earlier `up` of this folder
  rm -rf -- "$DIR/prometheus"   # the last cluster's series: a new cluster starts empty
  for ((i = 0; i < n; i++)); do
    targets+="$(sed -n "s/^nodes { id: $i host: \"\([^\"]*\)\".* http_port: \([0-9]*\).*/'\1:\2'/p" "$CONFIG"), "
  done
  cat > "$DIR/prometheus.yml" <<EOF
# written by $PROG up --prometheus
global:
  scrape_interval: 5s
scrape_configs:
  - job_name: detdb
    static_configs:
      - targets: [${targets%, }]
EOF
  pick_ports 1
  port="${PORTS[0]}"
  setsid nohup prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/prometheus" \
    --web.listen-address="127.0.0.1:$port" > "$DIR/prometheus.log" 2>&1 < /dev/null 9>&- &
  pid=$!
  disown "$pid"
  printf '%s\n' "$pid" > "$DIR/prometheus.pid"
  sleep 1
  proc_alive "$pid" || { tail -n 20 "$DIR/prometheus.log" >&2; die "prometheus exited (log: $DIR/prometheus.log)"; }
  say "prometheus (pid $pid) scrapes ${targets%, } every 5 s: http://127.0.0.1:$port"
}

# Stops the prometheus of --prometheus, if its pid file names a prometheus.
stop_prometheus() {
  local f="$DIR/prometheus.pid" pid=""
  [ -f "$f" ] || return 0
  pid="$(head -n 1 -- "$f" 2>/dev/null || true)"
  if is_uint "$pid" && proc_alive "$pid" && grep -q prometheus "/proc/$pid/comm" 2>/dev/null; then
    say "stopping prometheus (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
  fi
  rm -f -- "$f"
}

cmd_up() {
  [ ${#ARGS[@]} -eq 1 ] || die "usage: $PROG up N [--partitions_per_node=K] [--netns] [--insecure] [--prometheus] [--dir=DIR] [-- detdb flags...]"
  local n="${ARGS[0]}" k="$PPN" i pid rc
  in_range "$n" 1 "$MAX_NODES" || die "N must be a number of nodes in 1..$MAX_NODES, not '$n'"
  in_range "$k" 1 || die "--partitions_per_node must be a positive number, not '$k'"
  [ $((n * k)) -le "$MAX_PARTITIONS" ] || die "N*K = $((n * k)) partitions: at most $MAX_PARTITIONS"
  in_range "$EPOCH_US" 1 || die "DETDB_EPOCH_US must be a positive number of microseconds, not '$EPOCH_US'"
  in_range "$READY_TIMEOUT_S" 1 || die "DETDB_READY_TIMEOUT_S must be a positive number"
  if [ "$NETNS" = 1 ]; then need_netns_tools; fi

  mkdir -p -- "$DIR"
  lock_dir
  local running
  running="$(running_nodes | tr '\n' ' ')"
  if [ -n "$running" ]; then
    die "a cluster of $DIR still runs (nodes: ${running% }); stop it first: $PROG down --dir=$DIR"
  fi
  rm -f -- "$DIR"/node*.pid "$DIR"/node*.log "$DIR"/node*.cmd  # stale pids; the last cluster's logs
  rm -rf -- "$DIR"/data[0-9]*      # the last cluster's input logs: a new cluster starts empty
  netns_teardown                   # leftovers of an --netns cluster that died

  ensure_binaries

  trap 'up_abort $?' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP

  if [ "$NETNS" = 1 ]; then
    netns_setup "$n"
  else
    pick_ports $((3 * n))
  fi
  make_keys "$n"
  write_config "$n" "$k"
  say "wrote $CONFIG: $n node(s), $((n * k)) partition(s), epoch_us $EPOCH_US"

  local node_cmd
  for ((i = 0; i < n; i++)); do
    node_cmd=("$DETDB" "--config=$CONFIG" "--node_id=$i" "--data_dir=$DIR/data$i")
    if [ "$INSECURE" = 0 ]; then
      node_cmd+=("--curve_secret_key_file=$KEYS/node$i.key" "--curve_allowlist_file=$KEYS/allowlist")
    elif [ "$NETNS" = 1 ]; then
      node_cmd+=("--allow_insecure_nonloopback")   # 10.77.0.x is beyond loopback
    fi
    node_cmd+=(${EXTRA[@]+"${EXTRA[@]}"})
    if [ "$NETNS" = 1 ]; then node_cmd=(ip netns exec "$NS_PREFIX$i" "${node_cmd[@]}"); fi
    printf '%s\0' "${node_cmd[@]}" > "$DIR/node$i.cmd"   # for `start`
    # setsid: the node gets its own session, so a Ctrl-C in this terminal
    # does not reach it. Neither setsid (not a group leader here) nor
    # `ip netns exec` forks, so $! is the detdb process itself.
    setsid nohup "${node_cmd[@]}" > "$DIR/node$i.log" 2>&1 < /dev/null 9>&- &
    STARTED_PIDS+=("$!")
    disown "$!"                    # no "Killed" job report if it is stopped
    printf '%s\n' "$!" > "$DIR/node$i.pid"
  done
  say "started $n node(s); waiting up to ${READY_TIMEOUT_S} s until all are ready"

  # wait_ready in the background, so a node that dies ends the wait at once.
  "$CTL" --config="$CONFIG" wait_ready --timeout_s="$READY_TIMEOUT_S" >&2 9>&- &
  CTL_PID=$!
  while kill -0 "$CTL_PID" 2>/dev/null; do
    for ((i = 0; i < n; i++)); do
      pid="${STARTED_PIDS[i]}"
      if ! proc_alive "$pid"; then
        say "node $i (pid $pid) exited during startup"
        exit 1
      fi
    done
    sleep 0.2
  done
  rc=0
  wait "$CTL_PID" || rc=$?
  CTL_PID=""
  [ "$rc" -eq 0 ] || { say "detdb-ctl wait_ready failed (exit $rc)"; exit 1; }

  if [ "$PROMETHEUS" = 1 ]; then start_prometheus "$n"; fi
  UP_DONE=1
  trap - EXIT INT TERM HUP
  say "cluster of $n node(s) ready in $DIR (logs: $PROG logs --dir=$DIR; stop: $PROG down --dir=$DIR)"
  printf '%s\n' "$CONFIG"
}

cmd_down() {
  [ ${#ARGS[@]} -eq 0 ] || die "usage: $PROG down [--dir=DIR]"
  if [ ! -d "$DIR" ]; then say "no cluster folder $DIR: nothing to stop"; return 0; fi
  lock_dir
  if [ -z "$(recorded_nodes)" ] && [ ! -f "$NETNS_FILE" ] && [ ! -f "$DIR/prometheus.pid" ]; then
    say "no node of $DIR is recorded as started: nothing to stop"
    return 0
  fi
  stop_nodes
  stop_prometheus
  netns_teardown
  say "stopped the cluster of $DIR"
}

cmd_status() {
  [ ${#ARGS[@]} -eq 0 ] || die "usage: $PROG status [--dir=DIR]"
  local n i pid any=0 all=1 rc=0
  n="$(config_nodes)"
  if [ "$n" -eq 0 ]; then echo "no cluster config in $DIR"; return 1; fi
  echo "cluster $CONFIG ($n node(s)$([ -f "$NETNS_FILE" ] && echo ", --netns"))"
  for ((i = 0; i < n; i++)); do
    pid="$(recorded_pid "$i")"
    if [ -z "$pid" ]; then
      echo "node $i: not running (no pid file)"; all=0
    elif is_our_node "$pid"; then
      echo "node $i: pid $pid running"; any=1
    else
      echo "node $i: pid $pid not running"; all=0
    fi
  done
  if [ "$any" = 1 ]; then
    if [ -x "$CTL" ]; then
      "$CTL" --config="$CONFIG" info || rc=$?
      [ "$rc" -eq 0 ] || { echo "detdb-ctl info: exit $rc (a node is unreachable)"; all=0; }
    else
      echo "($CTL missing: no node info)"
    fi
  fi
  [ "$all" = 1 ]
}

cmd_logs() {
  [ ${#ARGS[@]} -le 1 ] || die "usage: $PROG logs [-f] [I] [--dir=DIR]"
  local files=()
  if [ ${#ARGS[@]} -eq 1 ]; then
    is_uint "${ARGS[0]}" || die "node id must be a number, not '${ARGS[0]}'"
    [ -f "$DIR/node${ARGS[0]}.log" ] || die "no log of node ${ARGS[0]} in $DIR"
    files=("$DIR/node${ARGS[0]}.log")
  else
    local i n
    n="$(config_nodes)"
    for ((i = 0; i < n; i++)); do
      if [ -f "$DIR/node$i.log" ]; then files+=("$DIR/node$i.log"); fi
    done
    [ ${#files[@]} -gt 0 ] || die "no node log in $DIR"
  fi
  if [ "$FOLLOW" = 1 ]; then exec tail -n 50 -F -- "${files[@]}"; fi
  local f
  for f in "${files[@]}"; do
    printf '==> %s <==\n' "$f"
    tail -n 50 -- "$f"
  done
}

# cut/heal I J: blackhole routes, in I's namespace to J's address and in J's
# to I's (the /32 wins over the bridge's /24), so nothing passes either way;
# open TCP connections stall as if the cable were pulled.
cmd_link() {
  local what="$1" a b n
  [ ${#ARGS[@]} -eq 2 ] || die "usage: $PROG $what I J [--dir=DIR]"
  a="${ARGS[0]}"; b="${ARGS[1]}"
  [ -f "$NETNS_FILE" ] || die "$DIR has no --netns cluster ('$PROG up N --netns'); $what needs one"
  need_netns_tools
  n="$(config_nodes)"
  if ! in_range "$a" 0 $((n - 1)) || ! in_range "$b" 0 $((n - 1)); then die "nodes must be in 0..$((n - 1)), not '$a' '$b'"; fi
  [ "$a" != "$b" ] || die "cannot $what node $a from itself"
  if ! ns_exists "$NS_PREFIX$a" || ! ns_exists "$NS_PREFIX$b"; then die "namespace $NS_PREFIX$a or $NS_PREFIX$b is missing"; fi
  lock_dir
  local from to
  for from in "$a" "$b"; do
    to="$a"; [ "$from" != "$a" ] || to="$b"
    if [ "$what" = cut ]; then
      ip -n "$NS_PREFIX$from" route replace blackhole "$SUBNET.$((to + 1))/32"
    else
      ip -n "$NS_PREFIX$from" route del blackhole "$SUBNET.$((to + 1))/32" 2>/dev/null || true
    fi
  done
  if [ "$what" = cut ]; then say "cut: no traffic between node $a and node $b"
  else say "healed: node $a and node $b reach each other again"; fi
}

# kill [I...]: SIGKILL (a crash: nothing is flushed or synced).
cmd_kill() {
  local ids=("${ARGS[@]+"${ARGS[@]}"}") i pid
  [ -d "$DIR" ] || die "no cluster folder $DIR"
  lock_dir
  if [ ${#ids[@]} -eq 0 ]; then mapfile -t ids < <(running_nodes); fi
  for i in "${ids[@]+"${ids[@]}"}"; do
    is_uint "$i" || die "node id must be a number, not '$i'"
    pid="$(recorded_pid "$i")"
    if [ -n "$pid" ] && is_our_node "$pid"; then
      kill -KILL "$pid" 2>/dev/null || true
      say "node $i (pid $pid): SIGKILL"
    else
      say "node $i is not running"
    fi
  done
}

# start [I...]: restarts nodes with the command `up` recorded (their data
# dirs included) and waits until every node of the cluster is ready.
cmd_start() {
  local ids=("${ARGS[@]+"${ARGS[@]}"}") i pid n node_cmd=() rc
  n="$(config_nodes)"
  [ "$n" -gt 0 ] || die "no cluster config in $DIR ('$PROG up N' first)"
  lock_dir
  if [ ${#ids[@]} -eq 0 ]; then
    for ((i = 0; i < n; i++)); do
      pid="$(recorded_pid "$i")"
      if [ -z "$pid" ] || ! is_our_node "$pid"; then ids+=("$i"); fi
    done
  fi
  [ ${#ids[@]} -gt 0 ] || { say "every node runs already"; return 0; }
  for i in "${ids[@]}"; do
    in_range "$i" 0 $((n - 1)) || die "node must be in 0..$((n - 1)), not '$i'"
    pid="$(recorded_pid "$i")"
    if [ -n "$pid" ] && is_our_node "$pid"; then die "node $i still runs (pid $pid); '$PROG kill $i' first"; fi
    [ -f "$DIR/node$i.cmd" ] || die "no recorded command for node $i (was it started by '$PROG up'?)"
    mapfile -d '' -t node_cmd < "$DIR/node$i.cmd"
    printf '==== restart %s ====\n' "$(date -u +%FT%TZ)" >> "$DIR/node$i.log"
    setsid nohup "${node_cmd[@]}" >> "$DIR/node$i.log" 2>&1 < /dev/null 9>&- &
    disown "$!"
    printf '%s\n' "$!" > "$DIR/node$i.pid"
    say "node $i restarted (pid $!)"
  done
  rc=0
  "$CTL" --config="$CONFIG" wait_ready --timeout_s="$READY_TIMEOUT_S" >&2 9>&- || rc=$?
  [ "$rc" -eq 0 ] || die "the cluster is not ready after ${READY_TIMEOUT_S} s (see '$PROG logs')"
  say "cluster of $n node(s) ready"
}

main() {
  parse_args "$@"
  case "$CMD" in
    kill) cmd_kill ;;
    start) cmd_start ;;
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    logs) cmd_logs ;;
    cut|heal) cmd_link "$CMD" ;;
    ""|help) usage ;;
    *) usage >&2; die "unknown command '$CMD'" ;;
  esac
}

main "$@"
