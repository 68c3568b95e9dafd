#!/bin/bash
# Instructions one MPI call of an unmodified C program executes inside the library,
# per call, counted by callgrind on rank 0: rma's C interface beside Open MPI and
# MPICH, for the OSU one-sided latency tests (2 ranks). Instruction counts do not
# follow a shared machine's speed phases, unlike timings: use them to compare builds
# and libraries.
#
#   benches/tools/ir_c_call.sh TEST [WINDOW]
#
# TEST: put, get, acc, get_acc, fop or cas (osu_TEST_latency, 8 bytes, MPI_Win_flush
# after each call); WINDOW: allocate (default) or create.
# Environment: OSU_RMA, OSU_OMPI, OSU_MPICH (OSU build folders, as for
# osu_onesided.sh; a missing one drops its row), RMA_LIBS (NAME=DIR pairs of
# librma_capi.so folders, default rma=target/release), RMARUN.
# Needs valgrind and python3.
#
# Prints, per library, the instructions per iteration inside the call and inside the
# flush (callgrind's inclusive counts of the MPI functions, divided by the
# iterations). OSU's own loop and MPI_Wtime are not counted.
set -euo pipefail
t=${1:?test: put get acc get_acc fop cas}
w=${2:-allocate}
here=$(cd "$(dirname "$0")/../.." && pwd)
rmarun=${RMARUN:-$here/target/release/rmarun}
libs=${RMA_LIBS:-rma=$here/target/release}
iters=2000
case $t in
  put) call=MPI_Put ;; get) call=MPI_Get ;; acc) call=MPI_Accumulate ;;
  get_acc) call=MPI_Get_accumulate ;; fop) call=MPI_Fetch_and_op ;;
  cas) call=MPI_Compare_and_swap ;;
  *) echo "unknown test $t" >&2; exit 2 ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export IR_OUT IR_PROG IR_ARGS="-m 8:8 -w $w -s flush -i $iters -x 0"
wrap='
  if [ "${RMA_RANK:-${OMPI_COMM_WORLD_RANK:-$PMI_RANK}}" = 0 ]; then
    exec valgrind -q --tool=callgrind --callgrind-out-file="$IR_OUT" $IR_PROG $IR_ARGS
  else
    exec $IR_PROG $IR_ARGS
  fi'
count() { # name
  python3 - "$IR_OUT" "$call" "$iters" "$1" <<'EOF'
import subprocess, sys, re
prof, call, iters, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
txt = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", prof],
                     capture_output=True, text=True).stdout
def incl(fn):
    best = 0
    for line in txt.splitlines():
        line = re.sub(r" \[[^\]]*\]$", "", line.rstrip())
        m = re.match(r"\s*([\d,]+)\s.*\s(\S+)$", line)
        if m and m.group(2).split(":")[-1] in (fn, "P" + fn):
            best = max(best, int(m.group(1).replace(",", "")))
    return best
c, f = incl(call), incl("MPI_Win_flush")
print(f"{name}: {call} {c / iters:.0f} instructions per call, MPI_Win_flush {f / iters:.0f}, "
      f"together {(c + f) / iters:.0f}")
EOF
}
for l in $libs; do
  IR_OUT=$out/${l%%=*} IR_PROG=$OSU_RMA/c/mpi/one-sided/osu_${t}_latency \
    LD_LIBRARY_PATH=${l#*=} "$rmarun" -n 2 sh -c "$wrap" >/dev/null 2>&1
  IR_OUT=$out/${l%%=*} count "${l%%=*}"
done
if [ -d "${OSU_OMPI:-/nonexistent}" ]; then
  IR_OUT=$out/ompi IR_PROG=$OSU_OMPI/c/mpi/one-sided/osu_${t}_latency \
    mpirun.openmpi -np 2 sh -c "$wrap" >/dev/null 2>&1
  IR_OUT=$out/ompi count "Open MPI"
fi
if [ -d "${OSU_MPICH:-/nonexistent}" ]; then
  IR_OUT=$out/mpich IR_PROG=$OSU_MPICH/c/mpi/one-sided/osu_${t}_latency \
    mpiexec.mpich -n 2 sh -c "$wrap" >/dev/null 2>&1
  IR_OUT=$out/mpich count "MPICH"
fi
