#!/usr/bin/env bash
# scripts/bench_report.py on results the smoke suite did not produce itself: render CSVs of an
# earlier inkray without the paper and plain rows, the render scenes' summary (written here by
# the real scripts/render-scenes.sh around a stand-in render_bench, since no GPU is needed to
# check that its table reaches the report unchanged), and a Python without matplotlib.
#
# Usage: test_bench_report.sh SMOKE_OUT WORK_DIR   (SMOKE_OUT: test_bench_suite_smoke's results)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
smoke=${1:?smoke results folder}
work=${2:?work folder}
command -v python3 >/dev/null || { echo "SKIPPED: no python3"; exit 77; }
[[ -s $smoke/table1.csv ]] || { echo "no smoke results in $smoke (test_bench_suite_smoke first)"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
report() { python3 "$root/scripts/bench_report.py" "$1" >"$1/report-stdout.txt" 2>&1 || { cat "$1/report-stdout.txt"; fail "bench_report.py $1 failed"; }; }

# ---- Old CSVs: only the multi and single rows -------------------------------------------------
old=$work/old
rm -rf "$work" && mkdir -p "$old"
cp -r "$smoke/render" "$smoke/env.txt" "$old/"
python3 - "$old"/render/*.csv <<'PY'
import csv, sys
for path in sys.argv[1:]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    fields = list(rows[0].keys())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        w.writerows(r for r in rows if r["pipeline"] in ("multi", "single"))
PY
report "$old"
grep -q ',multi/ink-compact,' "$old/table1.csv" || fail "old CSVs: multi/ink-compact missing from table1.csv"
grep -q ',single,' "$old/table1.csv" || fail "old CSVs: single missing from table1.csv"
! grep -q -e 'paper/' -e ',plain,' "$old/table1.csv" || fail "old CSVs: table1.csv has configurations the CSVs lack"
grep -q 'No `paper` rows' "$old/report.md" || fail "old CSVs: the report does not say the paper rows are missing"
grep -q 'The default multi pipeline is faster than the single kernel\*\*: \*[a-z ]*\*\. multi/ink-compact vs single' \
  "$old/report.md" || fail "old CSVs: the multi vs single claim was not evaluated"
grep -q 'faster than Thrust.*\*not measured\*' "$old/report.md" || fail "old CSVs: the paper claim is not 'not measured'"

# ---- Render scenes: render-scenes.sh's own summary, verbatim in the report ---------------------
scenes=$work/scenes
mkdir -p "$scenes" "$work/fakebuild/tests/render"
cp -r "$smoke/render" "$smoke/env.txt" "$scenes/"
# A stand-in for render_bench printing lines of its format: a header comment, the column line and
# one row per renderer (frame ms from the distance, so scenes differ).
cat >"$work/fakebuild/tests/render/render_bench" <<'SH'
#!/usr/bin/env bash
d=1; while (($#)); do [[ $1 == --distance ]] && d=$2; shift; done
echo "# Stand-in GPU, fractal, iso 127.5"
echo "variant mean_ms median p95 FPS x_plain x_single | bvh raygen"
awk -v d="$d" 'BEGIN { n = split("plain single multi/ink-compact paper/ink-compact", v, " ");
  for (i = 1; i <= n; i++) { ms = d * (5 - i); printf "%-28s %8.4f %8.4f %8.4f %7.1f %7.3f %8.3f | 0 0\n",
    v[i], ms, ms, ms, 1000 / ms, 4 * d / ms, 3 * d / ms } }'
SH
chmod +x "$work/fakebuild/tests/render/render_bench"
INKRAY_BUILD_DIR=$work/fakebuild "$root/scripts/render-scenes.sh" --quick --out "$scenes/render-scenes" \
  >"$scenes/render-scenes.txt" 2>&1 || fail "render-scenes.sh with the stand-in failed"
grep -q '^== render scenes on Stand-in GPU' "$scenes/render-scenes.txt" || fail "render-scenes.sh printed no summary"
report "$scenes"
grep -q '^## Render scenes: plain caster, single kernel, multi and paper pipelines$' "$scenes/report.md" ||
  fail "no render scenes section"
# Every line of the summary, from its '== render scenes' line on, is a whole line of the report,
# in the same order.
python3 - "$scenes/render-scenes.txt" "$scenes/report.md" <<'PY' || fail "the scenes' summary is not in the report verbatim"
import sys
summary = open(sys.argv[1]).read().splitlines()
summary = summary[next(i for i, l in enumerate(summary) if l.startswith("== render scenes")):]
while summary and not summary[-1].strip():
    summary.pop()
report = open(sys.argv[2]).read().splitlines()
start = report.index(summary[0])
assert report[start:start + len(summary)] == summary, "block differs"
assert report[start - 1] == "```" and report[start + len(summary)] == "```", "not a code block"
assert len(summary) == 6, f"expected the heading, the column line and 4 renderers, got {len(summary)} lines"
PY

# Every scene failing (a render_bench that cannot run): the section says so, with no empty table.
failed=$work/failed
mkdir -p "$failed" "$work/failbuild/tests/render"
cp -r "$smoke/render" "$smoke/env.txt" "$failed/"
printf '#!/bin/sh\necho "render_bench: no CUDA device" >&2\nexit 1\n' >"$work/failbuild/tests/render/render_bench"
chmod +x "$work/failbuild/tests/render/render_bench"
INKRAY_BUILD_DIR=$work/failbuild "$root/scripts/render-scenes.sh" --quick --out "$failed/render-scenes" \
  >"$failed/render-scenes.txt" 2>&1 || true
report "$failed"
grep -q '^No scene measured' "$failed/report.md" || fail "failed scenes: the report does not say no scene was measured"
! grep -q '^== render scenes' "$failed/report.md" || fail "failed scenes: an empty table in the report"

# ---- No matplotlib: tables written, plots skipped with a note ----------------------------------
nompl=$work/nompl
mkdir -p "$nompl" "$work/blocker/matplotlib"
cp -r "$smoke/render" "$smoke/env.txt" "$nompl/"
echo 'raise ImportError("matplotlib blocked by the test")' >"$work/blocker/matplotlib/__init__.py"
PYTHONPATH=$work/blocker report "$nompl"
grep -q 'matplotlib not importable: no plots drawn' "$nompl/report-stdout.txt" || fail "no note that plots were skipped"
[[ -s $nompl/report.md && ! -d $nompl/plots ]] || fail "without matplotlib: report missing or plots drawn"

# ---- With matplotlib (where installed): the plots of every configuration -----------------------
if python3 -c 'import matplotlib' 2>/dev/null; then
  for f in fig6_fps_vs_isovalue table1_fps stages; do
    [[ -s $scenes/plots/$f.png ]] || fail "plots/$f.png not drawn"
  done
else
  echo "matplotlib not installed: the plots themselves not checked"
fi
echo "bench_report: old CSVs, render scenes and the missing matplotlib handled"
