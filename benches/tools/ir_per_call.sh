#!/bin/bash
# Instructions rma's own code executes per call + flush of one handle scenario of
# rma-bench over Open MPI (osc/rdma, MPI at THREAD_SINGLE; IR_MPI=mpich: over MPICH),
# counted by callgrind on rank 0, beside the instructions the MPI library executes for
# the call and the flush.
# Instruction counts do not follow the machine's speed phases, unlike timings on a
# shared machine: use it to compare two builds, or rma with the library.
#
#   benches/tools/ir_per_call.sh SCENARIO [RMA_BENCH]
#
# SCENARIO: h_put, h_acc, h_get, h_fop or h_msgrate (through a target handle), or put,
# acc, get, fop or msgrate (the runtime-checked window calls). RMA_BENCH: the rma-bench binary,
# default target/release/rma-bench from the repository root; build it with
#   cargo build --release -p rma-benches --features mpi --bin rma-bench
# Needs Debian's Open MPI (mpirun.openmpi; cargo xtask setup) or MPICH (mpiexec.mpich),
# valgrind and python3 (apt-get install valgrind), and 2 CPUs (the ranks are bound to
# cores).
#
# "rma's own" counts every instruction of the rma-bench binary and the C shim in the
# run divided by the timed iterations, so it includes the run's fixed costs (start-up,
# window creation, calibration), spread over the iterations: under 1% of the figure,
# and varying that much between runs (the iterations are timed, not counted).
set -euo pipefail
t=${1:?scenario (h_put, h_acc, h_get, h_fop, h_msgrate; put, acc, get, fop, msgrate)}
bin=${2:-target/release/rma-bench}
case $t in
  h_put | put) per=rma_mpi_put ;;
  h_get | get) per=rma_mpi_get ;;
  h_acc | h_msgrate | acc | msgrate) per=rma_mpi_accumulate ;;
  h_fop | fop) per=rma_mpi_fetch_and_op ;;
  *) echo "unknown scenario $t" >&2; exit 2 ;;
esac
[ -x "$bin" ] || { echo "$bin: not built (see the comment at the top)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RMA_MPI_THREAD=single
export IR_BIN=$bin IR_OUT=$out/profile IR_SCENARIO=$t
case ${IR_MPI:-openmpi} in
  openmpi) launch=(mpirun.openmpi --oversubscribe -np 2 --bind-to core) ;;
  mpich) launch=(mpiexec.mpich -n 2 -bind-to core) ;;
  *) echo "IR_MPI: openmpi or mpich" >&2; exit 2 ;;
esac
"${launch[@]}" sh -c '
  if [ "${OMPI_COMM_WORLD_RANK:-$PMI_RANK}" = 0 ]; then
    exec valgrind -q --tool=callgrind --dump-instr=yes --compress-strings=no \
      --compress-pos=no --callgrind-out-file="$IR_OUT" "$IR_BIN" -x --only "$IR_SCENARIO" -t 0.2 -r 2
  else
    exec "$IR_BIN" -x --only "$IR_SCENARIO" -t 0.2 -r 2
  fi' >/dev/null
python3 "$(dirname "$0")/ir_per_call.py" "$out/profile" "$per"
