#!/bin/sh
# A rank that never joins the NCCL communicator (INKRAY_DIST_STALL_RANK=1: it hangs before NCCL's
# init, alive, so the launcher notices nothing) ends the run: the other rank's init gives up at
# INKRAY_DIST_TIMEOUT (3 s here), prints one line saying the communicator was not complete, and
# the run ends through MPI_Abort with exit 1, well within 30 s. Usage:
# test_dist_nccl_join.sh MPIEXEC INKRAY. Exit 77 (skipped) without an mpiexec or two GPUs.
mpiexec=$1 inkray=$2
[ -n "$mpiexec" ] && [ -x "$mpiexec" ] || { echo "no mpiexec: skipped"; exit 77; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "${gpus:-0}" -ge 2 ] || { echo "fewer than 2 GPUs: skipped"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
INKRAY_DIST_STALL_RANK=1 INKRAY_DIST_TIMEOUT=3 INKRAY_DIST_COMPOSITE=gpu timeout 60 "$mpiexec" \
  --allow-run-as-root --oversubscribe --bind-to none -x INKRAY_DIST_STALL_RANK -x INKRAY_DIST_TIMEOUT \
  -x INKRAY_DIST_COMPOSITE -np 2 "$inkray" --headless --device gpu --size 64x64 --frames 5 --warmup 0 --quiet \
  builtin:sphere:32 >"$dir/out.log" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
cat "$dir/out.log"
echo "run ended after $took s, exit $rc"
[ $rc -ne 124 ] || { echo "FAIL: still running after 60 s (killed by the test's timeout)"; exit 1; }
[ $rc -eq 1 ] || { echo "FAIL: exit $rc, expected 1"; exit 1; }
[ $took -le 30 ] || { echo "FAIL: took $took s"; exit 1; }
lines=$(grep -Ec '^inkray: rank 0: the NCCL communicator of 2 ranks was not complete within 3 s: a rank did not join' "$dir/out.log")
[ "$lines" -eq 1 ] || { echo "FAIL: $lines lines from rank 0 saying a rank did not join (expected one)"; exit 1; }
echo "ok"
