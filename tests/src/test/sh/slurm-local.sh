#!/usr/bin/env bash
# A real one-node Slurm (Debian's slurm-wlm 22.05) on localhost for the end-to-end tests.
#
#   slurm-local.sh start DIR   installs the packages when missing (apt-get, as root, bounded), starts a munged
#                              of its own (as the munge user, its socket in DIR), slurmctld -D and
#                              slurmd -D -N localhost with DIR/slurm.conf on free ports, waits until
#                              sinfo shows the node idle; prints SLURM_CONF=DIR/slurm.conf on stdout.
#   slurm-local.sh stop DIR    cancels every job of this cluster and waits (bounded) for the queue to empty,
#                              stops what start started (by the pids it wrote under DIR), kills what
#                              steps of this cluster left (slurmstepd, tasks) and removes DIR.
#
# Exit status of start: 0 running; 77 cannot run here (the reason on the last line of stderr, for
# the test's skip message); anything else: it should have run and did not (the test fails).
set -uo pipefail

skip() { echo "slurm-local: $*" >&2; exit 77; }
fail() { echo "slurm-local: $*" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start() {
  local dir=$1
  mkdir -p "$dir"/{state,spool,log}
  if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null \
      || ! command -v sbatch >/dev/null; then
    [[ $(id -u) == 0 ]] || skip "slurmctld, slurmd, munge or slurm-client missing and not root to install them"
    command -v apt-get >/dev/null || skip "slurmctld, slurmd, munge or slurm-client missing and no apt-get"
    if ! DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q slurmctld slurmd slurm-client munge \
        >"$dir/log/apt.log" 2>&1; then
      DEBIAN_FRONTEND=noninteractive timeout 120 apt-get update -q >>"$dir/log/apt.log" 2>&1
      DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q slurmctld slurmd slurm-client munge \
          >>"$dir/log/apt.log" 2>&1 || skip "apt-get install slurmctld slurmd slurm-client munge failed: $(tail -n 1 "$dir/log/apt.log")"
    fi
  fi
  [[ $(id -u) == 0 ]] || skip "slurmd must run as root (it starts jobs as their users)"

  # munge: one of this cluster's own, its socket in DIR, as the munge user: runs side by side (a CI run and a
  # developer's) never stop each other's munged, nor a system one.
  [[ -f /etc/munge/munge.key ]] || { mungekey --create >/dev/null 2>&1 || create-munge-key -f >/dev/null 2>&1; }
  chown munge:munge /etc/munge/munge.key 2>/dev/null; chmod 400 /etc/munge/munge.key
  chmod 711 "$dir"
  mkdir -p "$dir/munge" && chown munge:munge "$dir/munge" && chmod 711 "$dir/munge"
  local sock=$dir/munge/munge.sock
  runuser -u munge -- munged --socket="$sock" --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
      --seed-file="$dir/munge/munged.seed" || fail "munged did not start (log: $dir/munge/munged.log)"
  for _ in $(seq 50); do (munge --socket="$sock" -n </dev/null | unmunge --socket="$sock" >/dev/null 2>&1) && break; sleep 0.1; done
  cat "$dir/munge/munged.pid" >"$dir/munged.pid" 2>/dev/null
  (munge --socket="$sock" -n </dev/null | unmunge --socket="$sock" >/dev/null 2>&1) || fail "munged does not answer"

  local ctl_port slurmd_port cpus mem
  ctl_port=$(free_port); slurmd_port=$(free_port)
  cpus=$(nproc); mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
  cat >"$dir/slurm.conf" <<CONF
ClusterName=xlactest
SlurmctldHost=localhost
SlurmctldPort=$ctl_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
MinJobAge=300
KillWait=5
NodeName=localhost CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  export SLURM_CONF=$dir/slurm.conf
  setsid slurmctld -D -f "$dir/slurm.conf" >"$dir/log/slurmctld.out" 2>&1 </dev/null &
  echo $! >"$dir/slurmctld.child"
  setsid slurmd -D -N localhost -f "$dir/slurm.conf" >"$dir/log/slurmd.out" 2>&1 </dev/null &
  echo $! >"$dir/slurmd.child"
  local state=
  for _ in $(seq 120); do
    state=$(sinfo -h -N -o '%T' 2>/dev/null | head -n 1)
    [[ "$state" == idle ]] && break
    [[ "$state" == down* || "$state" == drain* ]] && scontrol update NodeName=localhost State=RESUME >/dev/null 2>&1
    sleep 0.5
  done
  if [[ "$state" != idle ]]; then
    tail -n 5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 2>/dev/null
    fail "the node is not idle after 60 s (sinfo: ${state:-no answer}); logs in $dir/log"
  fi
  echo "SLURM_CONF=$dir/slurm.conf"
}

stop() {
  local dir=$1 f pid env vars
  # Every job of this cluster first (it is the tests' alone), so that no task outlives it; then its daemons.
  if [[ -f "$dir/slurm.conf" && -f "$dir/slurmctld.child" ]]; then
    SLURM_CONF=$dir/slurm.conf timeout 30 scancel --quiet --partition=debug >/dev/null 2>&1
    for _ in $(seq 60); do
      [[ -z "$(SLURM_CONF=$dir/slurm.conf timeout 10 squeue -h -o %i 2>/dev/null)" ]] && break
      sleep 0.5
    done
  fi
  for f in slurmd.child slurmctld.child munged.pid; do
    [[ -f "$dir/$f" ]] || continue
    pid=$(cat "$dir/$f")
    [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null
  done
  for f in slurmd.child slurmctld.child munged.pid; do
    [[ -f "$dir/$f" ]] || continue
    pid=$(cat "$dir/$f")
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    rm -f "$dir/$f"
  done
  # What a step of this cluster left (its environment names this slurm.conf): slurmstepd and the tasks under it.
  for env in /proc/[0-9]*/environ; do
    pid=${env#/proc/}; pid=${pid%/environ}
    vars=$(tr '\0' '\n' <"$env") || continue
    grep -qx "SLURM_CONF=$dir/slurm.conf" <<<"$vars" || continue
    [[ $(cat "/proc/$pid/comm") == slurmstepd ]] || grep -q '^SLURM_JOB_ID=' <<<"$vars" || continue
    kill -KILL "$pid"
  done 2>/dev/null
  [[ -f "$dir/slurm.conf" ]] && rm -rf "$dir"
}

case "${1:-}" in
  start) start "${2:?DIR}" ;;
  stop) stop "${2:?DIR}" ;;
  *) echo "usage: slurm-local.sh start|stop DIR" >&2; exit 2 ;;
esac
