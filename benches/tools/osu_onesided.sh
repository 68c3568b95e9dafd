#!/bin/bash
# OSU micro-benchmarks' one-sided tests, side by side: rma's C interface (one or more
# builds of librma_capi.so), Open MPI and MPICH, interleaved round by round so that
# every column sees the same machine phases. Prints one CSV line per run and, at the
# end, a markdown table of medians (µs for latency, MB/s for bandwidth).
#
#   benches/tools/osu_onesided.sh [ROUNDS]
#
# Environment:
#   OSU_RMA, OSU_OMPI, OSU_MPICH  the OSU build folders (their c/mpi/one-sided holds
#       the programs), built unmodified with rma-capi/bin/rmacc, mpicc.openmpi and
#       mpicc.mpich (./configure CC=... CXX=...; make); a folder that is missing
#       drops its column.
#   RMA_LIBS  space-separated NAME=DIR pairs: each a column of rma, run with
#       LD_LIBRARY_PATH=DIR (the folder of a librma_capi.so: compare two builds);
#       default "rma=target/release".
#   RMARUN    rmarun (default target/release/rmarun).
#   ONLY      a regular expression on the row names, to run fewer rows.
# Ranks: 2 (OSU's one-sided tests take exactly 2).
set -euo pipefail
rounds=${1:-3}
here=$(cd "$(dirname "$0")/../.." && pwd)
rmarun=${RMARUN:-$here/target/release/rmarun}
libs=${RMA_LIBS:-rma=$here/target/release}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# row name | program | arguments | message size to read (1: a test of one element,
# fetch_and_op and compare_and_swap, which takes no -m and prints size 1)
rows=(
  "put|osu_put_latency|-w allocate -s flush|8"
  "get|osu_get_latency|-w allocate -s flush|8"
  "acc|osu_acc_latency|-w allocate -s flush|8"
  "get_acc|osu_get_acc_latency|-w allocate -s flush|8"
  "fop|osu_fop_latency|-w allocate -s flush|1"
  "cas|osu_cas_latency|-w allocate -s flush|1"
  "put lock|osu_put_latency|-w allocate -s lock|8"
  "put create|osu_put_latency|-w create -s flush|8"
  "get create|osu_get_latency|-w create -s flush|8"
  "acc create|osu_acc_latency|-w create -s flush|8"
  "get_acc create|osu_get_acc_latency|-w create -s flush|8"
  "fop create|osu_fop_latency|-w create -s flush|1"
  "cas create|osu_cas_latency|-w create -s flush|1"
  "put_bw 8|osu_put_bw|-w allocate -s flush|8"
  "put_bw 1K|osu_put_bw|-w allocate -s flush|1024"
  "put_bw 8K|osu_put_bw|-w allocate -s flush|8192"
  "put_bw 1M|osu_put_bw|-w allocate -s flush|1048576"
  "get_bw 8K|osu_get_bw|-w allocate -s flush|8192"
  "get_bw 1M|osu_get_bw|-w allocate -s flush|1048576"
  "put_bw 1M create|osu_put_bw|-w create -s flush|1048576"
  "get_bw 1M create|osu_get_bw|-w create -s flush|1048576"
)
cols=()
for l in $libs; do cols+=("${l%%=*}"); done
[ -d "${OSU_OMPI:-/nonexistent}" ] && cols+=(ompi)
[ -d "${OSU_MPICH:-/nonexistent}" ] && cols+=(mpich)
run() { # column program args size
  local col=$1 prog=$2 args=$3 size=$4 out
  [ "$size" != 1 ] && args="$args -m $size:$size"
  case $col in
    ompi) out=$(timeout 120 mpirun.openmpi -np 2 "$OSU_OMPI/c/mpi/one-sided/$prog" $args 2>&1) ;;
    mpich) out=$(timeout 120 mpiexec.mpich -n 2 "$OSU_MPICH/c/mpi/one-sided/$prog" $args 2>&1) ;;
    *)
      local dir
      for l in $libs; do [ "${l%%=*}" = "$col" ] && dir=${l#*=}; done
      out=$(LD_LIBRARY_PATH=$dir timeout 120 "$rmarun" -n 2 "$OSU_RMA/c/mpi/one-sided/$prog" $args 2>&1) ;;
  esac
  # the line of the size (rmarun prefixes rank 0's lines with "[0] ")
  echo "$out" | sed 's/^\[0\] //' | awk -v s="$size" '$1 == s { v = $2 } END { print (v == "" ? "fail" : v) }'
}
for r in $(seq 1 "$rounds"); do
  for row in "${rows[@]}"; do
    IFS='|' read -r name prog args size <<<"$row"
    [[ -n ${ONLY:-} && ! $name =~ $ONLY ]] && continue
    for c in "${cols[@]}"; do
      echo "$r,$name,$c,$(run "$c" "$prog" "$args" "$size")"
    done
  done
done | tee /dev/stderr | python3 -c '
import sys, statistics, collections
v = collections.defaultdict(list); order = []; cols = []
for line in sys.stdin:
    r, name, col, x = line.strip().split(",")
    if name not in order: order.append(name)
    if col not in cols: cols.append(col)
    if x != "fail": v[(name, col)].append(float(x))
print("| test | " + " | ".join(cols) + " |")
print("|---|" + "---|" * len(cols))
for n in order:
    cells = []
    for c in cols:
        xs = v.get((n, c))
        cells.append(("%.2f" % statistics.median(xs)) if xs else "fail")
    print("| " + n + " | " + " | ".join(cells) + " |")
'
