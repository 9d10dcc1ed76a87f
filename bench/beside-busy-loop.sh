#!/usr/bin/env bash
# beside-busy-loop.sh busy|quiet COMMAND [ARG...]: runs COMMAND, with `busy` beside
# a single-threaded busy loop at the lowest CPU priority there is (SCHED_IDLE: it
# runs only when nothing else wants a CPU), and exits with COMMAND's status.
# `quiet` runs COMMAND through the same steps without the loop, so that the two
# differ only by the loop. Used by providers-vs-make.sh to measure how much a
# process-spawning workload slows down when another CPU is merely busy: on
# virtual machines that cost is much larger than the CPU time the loop takes.
set -u
mode=$1
shift
loop=
if [[ "$mode" == busy ]]; then
    chrt --idle 0 sh -c 'while :; do :; done' &
    loop=$!
elif [[ "$mode" != quiet ]]; then
    echo "beside-busy-loop.sh: the first argument is busy or quiet, not $mode" >&2
    exit 2
fi
"$@"
status=$?
if [[ -n "$loop" ]]; then
    kill "$loop"
    wait "$loop" 2>/dev/null
fi
exit "$status"
