#!/bin/bash
# Instructions rma's own code executes per call + flush of one handle scenario of
# rma-bench over Open MPI (osc/rdma, MPI at THREAD_SINGLE), counted by callgrind on
# rank 0. Deterministic, unlike timings on a shared machine: use it to compare two
# builds, or rma against the MPI library's own instructions for the same calls.
#
#   benches/tools/ir_per_call.sh SCENARIO [RMA_BENCH]
#
# SCENARIO: h_put, h_acc, h_get, h_fop or h_msgrate. RMA_BENCH: the rma-bench binary
# (default target/release/rma-bench, built with --features mpi). Needs valgrind and
# Open MPI (cargo xtask setup; apt-get install valgrind).
set -euo pipefail
t=${1:?scenario}
bin=${2:-target/release/rma-bench}
case $t in
  h_put) per=rma_mpi_put ;;
  h_get) per=rma_mpi_get ;;
  h_acc | h_msgrate) per=rma_mpi_accumulate ;;
  h_fop) per=rma_mpi_fetch_and_op ;;
  *) echo "unknown scenario $t" >&2; exit 2 ;;
esac
out=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RMA_MPI_THREAD=single
mpirun.openmpi --oversubscribe -np 2 --bind-to core sh -c "
  if [ \$OMPI_COMM_WORLD_RANK = 0 ]; then
    exec valgrind -q --tool=callgrind --dump-instr=yes --compress-strings=no \
      --compress-pos=no --callgrind-out-file=$out/profile $bin -x --only $t -t 0.2 -r 2
  else
    exec $bin -x --only $t -t 0.2 -r 2
  fi" >/dev/null
python3 "$(dirname "$0")/ir_per_call.py" "$out/profile" "$per"
rm -rf "$out"
