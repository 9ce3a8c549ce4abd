#!/usr/bin/env bash
# A real one-host Slurm (munged, slurmctld, slurmd) for the fleet tests and bench-fleet.
#
#   scripts/slurm-local.sh up [DIR]     start the daemons with their state under DIR
#   scripts/slurm-local.sh down [DIR]   stop them
#
# DIR defaults to /tmp/reprokit-slurm. SLURM_PORT (default 16817) is slurmctld's port and
# SLURM_PORT+1 slurmd's, so that clusters of several test runs on one host do not collide.
# `up` prints the SLURM_CONF to export; it installs slurm-wlm and munge when missing (root,
# Debian). The node advertises 2 GRES "gpu" backed by stand-in files, so `--gpus` requests
# schedule as on a GPU cluster while the runs themselves are compile-only. Completed jobs are kept by jobcomp/filetxt, which `sacct -c` reads.
set -euo pipefail
cmd="${1:-up}"
dir="${2:-/tmp/reprokit-slurm}"
conf="$dir/slurm.conf"
port="${SLURM_PORT:-16817}"

down() {
  for pidfile in "$dir"/slurmd.pid "$dir"/slurmctld.pid "$dir"/munged.pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$pidfile"
  done
}

if [ "$cmd" = down ]; then down; exit 0; fi
[ "$cmd" = up ] || { echo "usage: $0 up|down [DIR]" >&2; exit 2; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "slurm-local: installing slurm-wlm munge" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >&2
fi

down
rm -rf "$dir/state" "$dir/spool"
mkdir -p "$dir"/{state,spool,munge,log}
chmod 711 "$dir/munge"
[ -f "$dir/munge/munge.key" ] || { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none; chmod 400 "$dir/munge/munge.key"; }
munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" --force

host=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
cat >"$conf" <<CONF
ClusterName=reprokit
SlurmctldHost=$host
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CryptoType=crypto/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=$port
SlurmdPort=$((port + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
MinJobAge=2
ReturnToService=2
SchedulerParameters=defer_batch=0
MpiDefault=none
MailProg=/bin/true
NodeName=$host CPUs=$cpus RealMemory=$mem Gres=gpu:2 State=UNKNOWN
PartitionName=gpu Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# Two stand-in device files: Slurm counts GRES by their files; nothing opens them.
mkdir -p "$dir/dev" && touch "$dir/dev/gpu0" "$dir/dev/gpu1"
echo "AutoDetect=off
NodeName=$host Name=gpu File=$dir/dev/gpu[0-1]" >"$dir/gres.conf"
export SLURM_CONF="$conf"
slurmctld -f "$conf"
slurmd -f "$conf"
for _ in $(seq 100); do
  if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "export SLURM_CONF=$conf"
    exit 0
  fi
  sleep 0.2
done
echo "slurm-local: the node did not come up; last log lines:" >&2
tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2
exit 1
