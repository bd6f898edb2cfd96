#!/usr/bin/env bash
# Measurements behind docs/render.md's analysis of the renderers, on the GPU at hand (needs ncu):
# SIMD efficiency (threads active per warp instruction), registers, occupancy and throughput of
# the single kernel, the persistent kernel, the plain caster and the multi pipeline's stage
# kernels, for one view of builtin:fractal:256 at 1024x1024; then the lanes active per texture
# instruction (the march's samples, refinement and normals: the intersection phase) of the single
# and persistent kernels, from Nsight Compute's per-instruction counters.
# Usage: scripts/render-probe.sh [OUT_DIR]   Environment: INKRAY_BUILD_DIR (default ./build)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${INKRAY_BUILD_DIR:-$root/build}
out=${1:-$root/out/render-probe}
mkdir -p "$out"
bench=("$build/tests/render/render_bench" builtin:fractal:256 127.5 --frames 1 --warmup 0 --views 1)
metrics=smsp__thread_inst_executed_per_inst_executed.ratio,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__throughput.avg.pct_of_peak_sustained_active,gpu__time_duration.sum
ncu --metrics "$metrics" -k 'regex:single_kernel|persistent_kernel|plain_caster|walk_' --csv --page raw \
  "${bench[@]}" --only plain,single,persistent/ink-compact,multi/ink-collate >"$out/kernels.csv" 2>&1
python3 - "$out/kernels.csv" <<'PY'
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
i = next((k for k, l in enumerate(lines) if l.startswith('"ID"')), None)
if i is None: sys.exit("render-probe: no ncu table (see " + sys.argv[1] + ")")
rows = list(csv.reader(lines[i:])); h = rows[0]
cols = ['Kernel Name', 'smsp__thread_inst_executed_per_inst_executed.ratio', 'launch__registers_per_thread',
        'sm__warps_active.avg.pct_of_peak_sustained_active', 'l1tex__throughput.avg.pct_of_peak_sustained_active',
        'gpu__time_duration.sum']
idx = [h.index(c) for c in cols if c in h]
print("kernel | threads per warp instruction | registers | warps active % | L1/TEX % of peak | ns")
for r in rows[2:]:
    print(" | ".join(r[j].split('(')[0][:40] for j in idx))
PY
for k in single_kernel persistent_kernel; do
  ncu --section SourceCounters -k "regex:$k" -c 1 -f -o "$out/source-$k" "${bench[@]}" --only single,persistent/ink-compact \
    >"$out/source-$k.log" 2>&1
  ncu -i "$out/source-$k.ncu-rep" --page source --csv --print-source sass >"$out/source-$k.csv" 2>&1
  python3 - "$out/source-$k.csv" "$k" <<'PY'
import csv, re, sys
lines = open(sys.argv[1], errors='replace').read().splitlines()
i = next((k for k, l in enumerate(lines) if l.startswith('"Address"')), None)
if i is None: sys.exit(f"render-probe: no source table for {sys.argv[2]}")
rows = list(csv.reader(lines[i:])); h = rows[0]
ie, te, src = h.index('Instructions Executed'), h.index('Thread Instructions Executed'), h.index('Source')
a = [0.0] * 4
for r in rows[1:]:
    if len(r) != len(h): continue
    try: x, y = float(r[ie].replace(',', '') or 0), float(r[te].replace(',', '') or 0)
    except ValueError: continue
    a[0] += x; a[1] += y
    if re.search(r'\bTEX', r[src]): a[2] += x; a[3] += y
print(f"{sys.argv[2]}: {a[1] / max(a[0], 1):.1f} of 32 lanes per instruction, {a[3] / max(a[2], 1):.1f} per texture instruction")
PY
done
