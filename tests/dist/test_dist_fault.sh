#!/bin/sh
# A rank killed with SIGKILL in the middle of a distributed run ends the whole run within 30 s:
# mpirun returns non-zero, and a surviving rank prints one line naming the dead one (mpirun
# names it too); no rank is left waiting in a collective. Usage: test_dist_fault.sh MPIEXEC INKRAY [DEVICE [RANKS]] (default cpu, 3 ranks;
# on a machine with a GPU per rank, gpu 2 kills a rank of a run compositing through NCCL).
# Exit 77 (skipped) without an mpiexec.
mpiexec=$1 inkray=$2 device=${3:-cpu} ranks=${4:-3}
[ -n "$mpiexec" ] && [ -x "$mpiexec" ] || { echo "no mpiexec: skipped"; exit 77; }
if [ "$device" = gpu ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  [ "${gpus:-0}" -ge "$ranks" ] || { echo "fewer than $ranks GPUs: skipped"; exit 77; }
fi
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
# Rank 1 writes its PID before becoming inkray (exec keeps the PID).
timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" \
  sh -c 'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-$PMI_RANK}}; [ "$r" = 1 ] && echo $$ > "$0/rank1.pid"; exec "$@"' "$dir" \
  "$inkray" --headless --device "$device" --threads 1 --size 64x64 --frames 1000000 --warmup 0 --quiet \
  builtin:sphere:32 >"$dir/out.log" 2>&1 &
runner=$!
i=0
until grep -q '^isovalue' "$dir/out.log" 2>/dev/null && [ -s "$dir/rank1.pid" ]; do
  i=$((i + 1))
  if [ $i -gt 600 ] || ! kill -0 $runner 2>/dev/null; then
    echo "FAIL: the run did not reach its frames"; cat "$dir/out.log"; kill $runner 2>/dev/null; exit 1
  fi
  sleep 0.1
done
sleep 1 # well into the frames
kill -9 "$(cat "$dir/rank1.pid")"
start=$(date +%s)
i=0
while kill -0 $runner 2>/dev/null; do
  i=$((i + 1))
  if [ $i -gt 300 ]; then
    echo "FAIL: still running 30 s after rank 1 was killed"; cat "$dir/out.log"; kill $runner; exit 1 # timeout passes it on to mpirun
  fi
  sleep 0.1
done
wait $runner
rc=$?
cat "$dir/out.log"
echo "run ended $(( $(date +%s) - start )) s after rank 1 was killed, exit $rc"
[ $rc -ne 0 ] || { echo "FAIL: exit 0"; exit 1; }
[ $rc -ne 124 ] || { echo "FAIL: killed by the test's timeout"; exit 1; }
lines=$(grep -Ec '^inkray: rank [0-9]+: rank 1 \(pid [0-9]+ on this host\) died' "$dir/out.log")
[ "$lines" -eq 1 ] || { echo "FAIL: $lines lines of a surviving rank name rank 1 (expected one)"; exit 1; }
echo "ok"
