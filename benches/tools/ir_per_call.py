#!/usr/bin/env python3
"""Instructions per timed call, from a callgrind profile of rank 0 of rma-bench.

    ir_per_call.py PROFILE SHIM_FUNCTION

PROFILE: a callgrind.out file written with --dump-instr=yes --compress-strings=no
--compress-pos=no (see ir_per_call.sh). SHIM_FUNCTION: the shim entry point made once
per timed iteration (rma_mpi_put for h_put, rma_mpi_accumulate for h_acc and
h_msgrate, rma_mpi_get, rma_mpi_fetch_and_op); its call count is the number of
iterations. Prints the iterations and, per iteration, the instructions executed in
rma's own code (the rma-bench binary, which holds every rma crate, and the C shim)
and, by function, where they are; and the instructions the MPI library executes for
the call and the flush themselves (what the shim's entry points for them call). Instruction counts do not depend on the machine's
speed phases, so two builds compare exactly; what the MPI library executes is the same
for rma and for the C program making the same MPI calls.
"""
import collections
import re
import sys


def main():
    path, per = sys.argv[1], sys.argv[2]
    ob = fn = cfn = None
    own = collections.Counter()
    mpi = 0
    iters = 0
    after_calls = False
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("ob="):
            ob = line[3:]
        elif line.startswith("fn="):
            fn = line[3:]
        elif line.startswith("cfn="):
            cfn = line[4:]
        elif line.startswith("calls="):
            after_calls = True
            if cfn == per and "rma-bench" in ob:
                iters += int(line.split()[0][len("calls="):])
        elif re.match(r"^0x[0-9a-f]+ ", line):
            if after_calls:  # the inclusive cost of the call just named: not ours
                after_calls = False
                # the per-call shim entry points calling into the MPI library (not
                # MPI_Init and the collectives, whose cost spreads over the run)
                if "rma_mpi_shim" in ob and fn in (per, "rma_mpi_win_flush"):
                    mpi += int(line.split()[2])
                continue
            if "rma-bench" in ob or "rma_mpi_shim" in ob:
                own[fn] += int(line.split()[2])
    if not iters:
        sys.exit(f"no call to {per} from rma-bench in {path}")
    print(f"iterations {iters}")
    print(f"rma's own instructions per iteration: {sum(own.values()) / iters:.1f}")
    print(f"the MPI library's, for the call and its flush: {mpi / iters:.1f}")
    for f, c in own.most_common(8):
        if c / iters >= 0.5:
            print(f"  {c / iters:7.1f}  {f[:110]}")


if __name__ == "__main__":
    main()
