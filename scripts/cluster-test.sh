#!/usr/bin/env bash
# make cluster-test: the Slurm scripts of docs/cluster on a real Slurm.
#
# It installs Debian's slurm-wlm and munge when they are missing, starts a
# munged, a slurmctld and a slurmd of its own as root in a temporary folder
# (own key, socket, ports, state and spool; no system service is touched),
# a single node of 2 CPUs, and runs docs/cluster/slurm-sweep.sbatch and
# docs/cluster/slurm-capacity.sbatch as a user would, with tasks frozen
# after their first record and then
#
#   sweep task 1, capacity task 0   killed (SIGKILL: a lost node, no .partial)
#   sweep task 2                    timed out (its time limit cut to a minute)
#   sweep task 3, capacity task 2   scancel --signal=TERM
#   sweep task 4, capacity task 1   requeued (scontrol requeue), started again at once
#
# among stale files of an earlier study in the results folder. The merge
# must fail naming the tasks to rerun; the capacity final run must write a
# plain run's document all the same; then the command that started each
# study, run again as it is, must resume it, and the merged sweep and the
# capacity document must be byte for byte what one process writes. The
# sweep is submitted from a folder of its own with its trace and results
# given as relative paths (the results elsewhere), the capacity study with
# the scripts' default --cpus-per-task on the 2-CPU node. Everything is
# stopped and removed on exit (KEEP=1 keeps the folder).
#
# It needs root and apt (or the packages installed): without them it says
# "cluster-test: SKIPPED: why" and exits 0, unless SERVESIM_CLUSTER_TEST=require.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
log() { printf 'cluster-test: %s\n' "$*"; }
skip() {
  if [ "${SERVESIM_CLUSTER_TEST:-}" = require ]; then
    log "FAILED: cannot run: $*" >&2
    exit 1
  fi
  log "SKIPPED: $*"
  exit 0
}
die() {
  log "FAILED: $*" >&2
  exit 1
}

[ "$(id -u)" = 0 ] || skip "not root (slurmctld and slurmd run as root here, SlurmUser=root)"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null || ! command -v sbatch >/dev/null; then
  command -v apt-get >/dev/null || skip "slurm-wlm and munge are not installed, and there is no apt-get to install them"
  t0=$(date +%s)
  log "installing slurm-wlm and munge from the distribution"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge; } >/tmp/cluster-test-apt.log 2>&1; then
    tail -n 5 /tmp/cluster-test-apt.log >&2
    skip "apt-get could not install slurm-wlm and munge (see /tmp/cluster-test-apt.log)"
  fi
  log "installed in $(($(date +%s) - t0)) s"
fi
log "$(slurmctld -V), $(munged -V 2>&1 | head -n 1)"

work=$(mktemp -d /tmp/servesim-cluster.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  local status=$?
  if [ -f "$work/slurm.conf" ] && [ -n "${SLURM_CONF:-}" ]; then
    scancel --quiet --full --signal=KILL --user=root >/dev/null 2>&1 || true
  fi
  # The daemons by the pids they wrote, then anything left that runs with
  # this test's configuration (job steps, their children): by pid, never
  # by name.
  local f pid
  for f in slurmd slurmctld munge/munged; do
    [ -f "$work/$f.pid" ] && pid=$(cat "$work/$f.pid") && kill "$pid" 2>/dev/null
  done
  sleep 1
  for pid in $(grep -lsz "SLURM_CONF=$work/slurm.conf" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3) ${pids[@]+"${pids[@]}"}; do
    [ "$pid" != $$ ] && kill -KILL "$pid" 2>/dev/null
  done
  for f in slurmd slurmctld munge/munged; do
    [ -f "$work/$f.pid" ] && kill -KILL "$(cat "$work/$f.pid")" 2>/dev/null
  done
  if [ $status -ne 0 ]; then
    log "logs of the failed run:" >&2
    for f in "$work"/submit/*.log "$work"/capacity/*.log; do
      [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; } >&2
    done
    tail -n 15 "$work/log/slurmctld.log" >&2 2>/dev/null
  fi
  if [ "${KEEP:-}" = 1 ]; then
    log "kept $work"
  else
    rm -rf "$work"
  fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free TCP port on the loopback.
free_port() {
  local port
  for _ in $(seq 50); do
    port=$((20000 + RANDOM % 20000))
    (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
  die "no free port"
}

# munge: its own key, socket and files.
mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/log" "$work/bin" "$work/freeze" "$work/frozen"
chmod 700 "$work/munge"
head -c 1024 /dev/urandom >"$work/munge/munge.key"
chmod 400 "$work/munge/munge.key"
munged --force --socket="$work/munge.socket" --key-file="$work/munge/munge.key" --pid-file="$work/munge/munged.pid" \
  --seed-file="$work/munge/seed" --log-file="$work/log/munged.log" || die "munged did not start"

ctld_port=$(free_port) slurmd_port=$(free_port)
cat >"$work/slurm.conf" <<EOF
ClusterName=servesimtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge.socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
KillWait=30
MinJobAge=3600
NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=4096 State=UNKNOWN
PartitionName=batch Nodes=node1 Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm.conf
slurmctld -f "$SLURM_CONF" -i || die "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N node1 || die "slurmd did not start"
for _ in $(seq 60); do
  sinfo -h -o %T 2>/dev/null | grep -qx idle && break
  sleep 0.5
done
sinfo -h -o %T | grep -qx idle || die "the node did not come up: $(sinfo 2>&1)"
log "slurm up on ports $ctld_port and $slurmd_port in $work"

# servesim, and a stand-in for it on PATH that runs it unchanged but, when
# $work/freeze/<the -o file's name> exists, stops it with SIGSTOP once its
# temporary output holds a first record (or, when the file says "start",
# once it exists: the first evaluation under way), running it in slices
# of a few milliseconds until then and looking only while it is stopped,
# so that it never completes unseen, and writes its pid to
# $work/frozen/<name>.
real=$work/bin/servesim.real
(cd "$repo" && CGO_ENABLED=0 go build -o "$real" ./cmd/servesim) || die "go build failed"
cat >"$work/bin/servesim" <<EOF
#!/bin/bash
out= prev=
for a in "\$@"; do [ "\$prev" = -o ] && out=\$a; prev=\$a; done
base=\${out##*/}
if [ -n "\$out" ] && [ -e "$work/freeze/\$base" ]; then
  lines=1
  [ "\$(cat "$work/freeze/\$base")" = start ] && lines=0
  rm -f "$work/freeze/\$base"
  pid=\$\$
  (
    seen=0
    while sleep 0.003; do
      kill -STOP \$pid 2>/dev/null || exit 0
      for f in "\${out%/*}/.\$base.tmp"*; do
        if [ -f "\$f" ] && [ "\$(wc -l <"\$f")" -ge \$lines ]; then
          seen=\$((seen + 1))
          if [ \$lines = 1 ] || [ \$seen = 3 ]; then
            echo \$pid >"$work/frozen/\$base"
            exit 0
          fi
        fi
      done
      kill -CONT \$pid
    done
  ) &
fi
exec "$real" "\$@"
EOF
chmod +x "$work/bin/servesim"
export PATH=$work/bin:$PATH

# The inputs: the Azure code trace and the L4 profile from the shared data
# when it is there, else servesim's embedded ones.
shared=${SERVESIM_SHARED:-$repo/../shared}
shared=$(cd "$shared" 2>/dev/null && pwd || printf '%s' "$shared")
mkdir -p "$work/submit/data" "$work/results" "$work/capacity"
if [ -f "$shared/data/azure2023/AzureLLMInferenceTrace_code.csv" ]; then
  cp "$shared/data/azure2023/AzureLLMInferenceTrace_code.csv" "$work/submit/data/code.csv"
  sweep_trace=data/code.csv # relative: taken from the submit folder
  cap_trace=$work/submit/data/code.csv
  cp "$shared/data/l4_measured_aggregate/l4_profile.csv" "$shared/data/l4_measured_aggregate/profile_manifest.json" "$work/submit/data/"
  cap_profile=$work/submit/data/l4_profile.csv
else
  log "no shared data at $shared: the embedded trace and profile"
  sweep_trace=embedded cap_trace=embedded cap_profile=embedded
fi

# What one process writes: the scripts' own grid and study.
eval "$(sed -n '/^grid=(/,/)$/p' "$repo/docs/cluster/slurm-sweep.sbatch")"
trace=$cap_trace profile=$cap_profile
eval "$(sed -n '/^study=(/,/)$/p' "$repo/docs/cluster/slurm-capacity.sbatch")"
whole_trace=$sweep_trace
[ "$sweep_trace" = embedded ] || whole_trace=$work/submit/$sweep_trace
"$real" sweep --quiet --trace "$whole_trace" "${grid[@]}" -o "$work/whole.jsonl" 2>"$work/whole.err" || die "the whole sweep failed: $(cat "$work/whole.err")"
"$real" capacity "${study[@]}" -o "$work/plain.json" 2>"$work/plain.err"
plain_status=$?
[ $plain_status -le 1 ] || die "the plain capacity run failed: $(cat "$work/plain.err")"

# Stale files of an earlier study (another grid): an extra shard, a partial
# file that task 5 must pass over; a capacity record and partial file.
"$real" sweep --quiet --max-elapsed 20 --controller max,min --shard 1/2 -o "$work/results/shard-9.jsonl"
cp "$work/results/shard-9.jsonl" "$work/results/shard-5.jsonl.partial"
"$real" capacity --max-elapsed 60 --max-replicas 4 --shard 1/1 -o "$work/capacity/capacity-7.jsonl"
cp "$work/capacity/capacity-7.jsonl" "$work/capacity/capacity-3.jsonl.partial"

# job_state JOB: the state of a job or array task.
job_state() { scontrol show job "$1" -o 2>/dev/null | tr ' ' '\n' | sed -n 's/^JobState=//p' | head -n 1; }
# wait_for WHAT SECONDS TEST...: until TEST succeeds.
wait_for() {
  local what=$1 seconds=$2
  shift 2
  for _ in $(seq $((seconds * 5))); do
    "$@" && return 0
    sleep 0.2
  done
  die "waited ${seconds} s for $what"
}
frozen() { [ -s "$work/frozen/$1" ]; }
# done_job JOB: every task of the job has ended.
done_job() { ! squeue -h -j "$1" -o %i 2>/dev/null | grep -q .; }
# task_ended JOB: the job or task is in a final state.
task_ended() { case $(job_state "$1") in COMPLETED | FAILED | TIMEOUT | CANCELLED | NODE_FAIL | PREEMPTED | OUT_OF_MEMORY) return 0 ;; esac; return 1; }

# requeue TASK: scontrol requeue; Slurm then holds the task about two
# minutes (Reason=BeginTime), which StartTime=now cuts short.
requeue() {
  scontrol requeue "$1" || die "scontrol requeue $1"
  wait_for "$1 to be requeued" 60 sh -c "scontrol show job $1 -o | grep -q 'JobState=PENDING.*Reason=BeginTime'"
  scontrol update JobId="$1" StartTime=now || die "scontrol update JobId=$1 StartTime=now"
}

# term TASK NAME LOG: scancel --signal=TERM, which sends no SIGCONT: the
# task's servesim, stopped, gets one once the signal is there (its log
# says the step was cancelled). Slurm 22.05 signals the task at once but
# answers "Job can not be altered now, try again later" while other tasks
# of its array are pending, and scancel tries again and again: it is
# given a few seconds.
term() {
  timeout 3 scancel --signal=TERM "$1" 2>/dev/null
  wait_for "$1 to get SIGTERM" 30 grep -q "STEP .* CANCELLED AT" "$3"
  kill -CONT "$(cat "$work/frozen/$2")"
}

# Phase 1: both studies, with their tasks killed, timed out, requeued and
# sent SIGTERM.
for f in shard-1 shard-2 shard-3 shard-4; do touch "$work/freeze/$f.jsonl"; done
# The capacity tasks hold two sizes: they are stopped with the first under
# way, which a SIGTERM lets finish (a .partial of one record).
for f in capacity-0 capacity-1 capacity-2; do echo start >"$work/freeze/$f.jsonl"; done
sweep_job=$(cd "$work/submit" && SERVESIM_TRACE=$sweep_trace SERVESIM_RESULTS=../results sbatch --parsable "$repo/docs/cluster/slurm-sweep.sbatch") ||
  die "sbatch of the sweep failed"
cap_job=$(cd "$work/capacity" && SERVESIM_TRACE=$cap_trace SERVESIM_PROFILE=$cap_profile SERVESIM_RESULTS=. sbatch --parsable --cpus-per-task=1 "$repo/docs/cluster/slurm-capacity.sbatch") ||
  die "sbatch of the capacity study failed"
log "phase 1: sweep job $sweep_job (8 tasks), capacity job $cap_job (4 tasks)"

# The time limit first: it takes a minute from the task's start.
wait_for "sweep task 2 to freeze" 300 frozen shard-2.jsonl
scontrol update JobId="${sweep_job}_2" TimeLimit=1 || die "scontrol update TimeLimit"
wait_for "sweep task 1 to freeze" 300 frozen shard-1.jsonl
kill -KILL "$(cat "$work/frozen/shard-1.jsonl")"
wait_for "sweep task 3 to freeze" 300 frozen shard-3.jsonl
term "${sweep_job}_3" shard-3.jsonl "$work/submit/servesim-sweep-${sweep_job}_3.log"
wait_for "sweep task 4 to freeze" 300 frozen shard-4.jsonl
requeue "${sweep_job}_4"
wait_for "capacity task 0 to freeze" 300 frozen capacity-0.jsonl
kill -KILL "$(cat "$work/frozen/capacity-0.jsonl")"
wait_for "capacity task 1 to freeze" 300 frozen capacity-1.jsonl
requeue "${cap_job}_1"
wait_for "capacity task 2 to freeze" 300 frozen capacity-2.jsonl
term "${cap_job}_2" capacity-2.jsonl "$work/capacity/servesim-capacity-${cap_job}_2.log"
log "phase 1: tasks killed, requeued and sent SIGTERM; waiting for the time limit of sweep task 2"
wait_for "the sweep's tasks" 240 done_job "$sweep_job"
wait_for "the capacity tasks" 120 done_job "$cap_job"

# What each task became.
expect_state() { [ "$(job_state "$1")" = "$2" ] || die "$1 is $(job_state "$1"), expected $2"; }
expect_state "${sweep_job}_1" FAILED
expect_state "${sweep_job}_2" TIMEOUT
expect_state "${sweep_job}_3" FAILED
expect_state "${sweep_job}_4" COMPLETED
expect_state "${cap_job}_0" FAILED
expect_state "${cap_job}_1" COMPLETED
expect_state "${cap_job}_2" FAILED
for f in results/shard-2 results/shard-3 capacity/capacity-2; do
  [ -s "$work/$f.jsonl.partial" ] || die "no $f.jsonl.partial: a task stopped by SIGTERM keeps its records"
done
[ -f "$work/results/shard-1.jsonl" ] || [ -f "$work/results/shard-1.jsonl.partial" ] && die "a killed task left a shard file"
task_log=$work/submit/servesim-sweep-${sweep_job}_4.log
grep -q 'restart 0' "$task_log" && grep -q 'restart 1' "$task_log" || die "the requeued task's log was not appended to: $(cat "$task_log")"
grep -q 'requeued: Slurm held this task about two minutes' "$task_log" || die "the requeued task does not say why it waited"
grep -q 'runs taken from .*shard-4.jsonl.partial' "$task_log" || die "the requeued task did not resume: $(cat "$task_log")"
grep -q 'sizes taken from .*capacity-1.jsonl.partial' "$work/capacity/servesim-capacity-${cap_job}_1.log" ||
  die "the requeued capacity task did not resume: $(cat "$work/capacity/servesim-capacity-${cap_job}_1.log")"
grep -q 'not resumed, this shard runs its cells again and replaces it: --resume .*shard-5.jsonl.partial' "$work/submit/servesim-sweep-${sweep_job}_5.log" ||
  die "task 5 did not pass over the stale partial file"
[ -f "$work/results/shard-5.jsonl.partial" ] && die "task 5 left the stale partial file"

# queued LOG: the job the task whose log is LOG queued (the merge, the final run).
queued() { sed -n 's/^servesim-[a-z]*: queued the [a-z ]*, job \([0-9]*\):.*/\1/p' "$1" | tail -n 1; }

# The merge ran (afterany) and failed naming the tasks to rerun.
merge_job=$(queued "$work/submit/servesim-sweep-${sweep_job}_0.log")
[ -n "$merge_job" ] || die "task 0 did not queue the merge: $(cat "$work/submit/servesim-sweep-${sweep_job}_0.log")"
wait_for "the merge" 60 task_ended "${merge_job}_0"
merge_log=$work/submit/servesim-sweep-merge-$merge_job.log
expect_state "${merge_job}_0" FAILED
grep -q "the shards of tasks 1,2,3 are missing" "$merge_log" || die "the merge does not name the missing tasks: $(cat "$merge_log")"
grep -q "sbatch --array=1,2,3 .*slurm-sweep.sbatch" "$merge_log" || die "the merge does not give the command: $(cat "$merge_log")"

# The capacity final run ran all the same and wrote the plain run's document.
final_job=$(queued "$work/capacity/servesim-capacity-${cap_job}_0.log")
[ -n "$final_job" ] || die "task 0 did not queue the final run: $(cat "$work/capacity/servesim-capacity-${cap_job}_0.log")"
wait_for "the final run" 180 task_ended "${final_job}_0"
final_log=$work/capacity/servesim-capacity-final-$final_job.log
grep -q "tasks 0,2 did not complete" "$final_log" || die "the final run does not name the tasks: $(cat "$final_log")"
cmp -s "$work/plain.json" "$work/capacity/capacity.json" || die "phase 1: capacity.json differs from the plain run's"
[ -f "$work/capacity/capacity-3.jsonl.partial" ] && die "capacity task 3 left the stale partial file"
log "phase 1: merge failed naming tasks 1,2,3; capacity.json is the plain run's"

# Phase 2: the command that started each study, again as it is (the
# capacity study now with the script's 2 CPUs a task on the 2-CPU node).
rm -f "$work/capacity/capacity.json"
sweep_job2=$(cd "$work/submit" && SERVESIM_TRACE=$sweep_trace SERVESIM_RESULTS=../results sbatch --parsable "$repo/docs/cluster/slurm-sweep.sbatch") ||
  die "sbatch of the sweep failed"
cap_job2=$(cd "$work/capacity" && SERVESIM_TRACE=$cap_trace SERVESIM_PROFILE=$cap_profile SERVESIM_RESULTS=. sbatch --parsable "$repo/docs/cluster/slurm-capacity.sbatch") ||
  die "sbatch of the capacity study failed"
log "phase 2: sweep job $sweep_job2, capacity job $cap_job2: the same commands"
wait_for "the sweep's tasks" 180 done_job "$sweep_job2"
for ((i = 0; i < 8; i++)); do expect_state "${sweep_job2}_$i" COMPLETED; done
grep -q "of the shard's 30 runs taken from .*shard-2.jsonl.partial" "$work/submit/servesim-sweep-${sweep_job2}_2.log" ||
  die "task 2 did not resume: $(cat "$work/submit/servesim-sweep-${sweep_job2}_2.log")"
grep -q "30 of the shard's 30 runs taken from" "$work/submit/servesim-sweep-${sweep_job2}_0.log" || die "task 0 ran again"
grep -q "removing .*/.shard-1.jsonl.tmp[0-9]*, left by a run of this task that was killed" "$work/submit/servesim-sweep-${sweep_job2}_1.log" ||
  die "task 1 did not remove the temporary file its killed run left: $(cat "$work/submit/servesim-sweep-${sweep_job2}_1.log")"
merge_job2=$(queued "$work/submit/servesim-sweep-${sweep_job2}_0.log")
[ -n "$merge_job2" ] || die "task 0 did not queue the merge"
wait_for "the merge" 60 task_ended "${merge_job2}_0"
expect_state "${merge_job2}_0" COMPLETED
cmp "$work/whole.jsonl" "$work/results/sweep.jsonl" || die "the merged sweep differs from the whole grid's"
wait_for "the capacity tasks" 240 done_job "$cap_job2"
final_job2=$(queued "$work/capacity/servesim-capacity-${cap_job2}_0.log")
[ -n "$final_job2" ] || die "task 0 did not queue the final run"
wait_for "the final run" 180 task_ended "${final_job2}_0"
final_log2=$work/capacity/servesim-capacity-final-$final_job2.log
cmp "$work/plain.json" "$work/capacity/capacity.json" || die "phase 2: capacity.json differs from the plain run's"
grep -q "sizes the search used came from --evaluations" "$final_log2" || die "the final run did not read the records"
log "phase 2: the merged sweep is the whole grid's and capacity.json the plain run's, byte for byte"

log "ok in $(($(date +%s) - start)) s"
