#!/usr/bin/env bash
# Node-world calls side by side in one run (issue: rma inside MPI programs): the
# node_shared example's per-call times (fetch_and_op; put + flush), slowest rank of the
# node, under
#   rmarun          the atomic transport (rma's own launcher)
#   mpiexec, rma    a node world split from MPI_COMM_WORLD on rma's shared memory
#   mpiexec, mpi    the same node world kept on the MPI library (SplitType::SharedMpi)
# for MPICH and Open MPI (osc/sm: its osc/rdma refuses windows of split worlds), at
# each rank count given, interleaved over ROUNDS rounds; prints every run's figures
# and the median per configuration.
#
# usage: benches/tools/node_world.sh [ROUNDS] [N] [RANKS...]   (defaults: 3 5000 2 4)
# Build first: cargo build --release -p rma-examples --example node_shared \
#              -p rma-shm --bin rmarun --features rma-win/mpi
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
n=${2:-5000}
shift $(( $# < 2 ? $# : 2 ))
if [ $# -gt 0 ]; then ranks=("$@"); else ranks=(2 4); fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MPIEXEC_TIMEOUT=300
ex=target/release/examples/node_shared
out=$(mktemp)
for r in $(seq "$rounds"); do
  for np in "${ranks[@]}"; do
    run() { # name, command...
      local name=$1; shift
      local line
      line=$("$@" 2>&1 | grep -o 'fetch_and_op [0-9]* ns, put + flush [0-9]* ns' || echo "failed")
      echo "$np $name $line" | tee -a "$out"
    }
    run "rmarun-atomic" target/release/rmarun -n "$np" "$ex" --n "$n"
    run "mpich-node-rma" mpiexec.mpich -n "$np" "$ex" --n "$n"
    run "mpich-node-mpi" mpiexec.mpich -n "$np" "$ex" --n "$n" --transport mpi
    run "openmpi-node-rma" mpirun.openmpi --oversubscribe --mca osc sm -np "$np" "$ex" --n "$n"
    run "openmpi-node-mpi" mpirun.openmpi --oversubscribe --mca osc sm -np "$np" "$ex" --n "$n" --transport mpi
  done
done
echo "--- medians over $rounds rounds (ns per call, slowest rank; $(nproc) cores)"
python3 - "$out" <<'PY'
import sys, statistics, re
rows = {}
for line in open(sys.argv[1]):
    parts = line.split()
    m = re.search(r'fetch_and_op (\d+) ns, put \+ flush (\d+) ns', line)
    key = (int(parts[0]), parts[1])
    rows.setdefault(key, []).append((int(m.group(1)), int(m.group(2))) if m else None)
print(f"{'ranks':>5} {'configuration':<18} {'fetch_and_op':>13} {'put+flush':>10}")
for (np, name), v in sorted(rows.items()):
    ok = [x for x in v if x]
    if not ok:
        print(f"{np:>5} {name:<18} {'failed':>13}"); continue
    f = statistics.median(x[0] for x in ok); p = statistics.median(x[1] for x in ok)
    print(f"{np:>5} {name:<18} {f:>13.0f} {p:>10.0f}")
PY
rm -f "$out"
