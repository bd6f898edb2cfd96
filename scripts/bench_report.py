#!/usr/bin/env python3
"""Turns the experiment suite's CSVs into report.md, summary CSVs and plots.

Usage: scripts/bench_report.py OUT_DIR

Reads OUT_DIR/env.txt, OUT_DIR/render/*.csv (inkray --headless per-frame CSV, one file per
dataset), OUT_DIR/compact.csv (inkray compact-bench) and OUT_DIR/render-scenes.txt
(scripts/render-scenes.sh), and writes OUT_DIR/report.md, OUT_DIR/table1.csv,
OUT_DIR/ratios.csv, OUT_DIR/fps_by_isovalue.csv, OUT_DIR/stages.csv and, when matplotlib is
importable, OUT_DIR/plots/*.png. Only the standard library is needed for the tables.

A configuration is a renderer and, for the two multi-kernel pipelines, a compaction method:
"multi/ink-compact" ... "paper/redzone", "single", "plain". Whatever the CSVs do not hold (older
runs had no paper or plain rows) is left out of the tables, or marked n/a.

Statistics: FPS of a frame is 1000 / frame_ms; "mean FPS +- sd" is over every timed frame of a
dataset and configuration (all views and isovalues), as in InK Table 1. Speed-ups compare mean
FPS. Per-stage times come from the separate diagnostic pass (pass=stages rows).
"""
import csv
import glob
import math
import os
import statistics
import sys

# Configurations: each multi-kernel pipeline with every method in the order of InK Table 1 (the
# default multi design, then the paper's pipeline as published), then the single kernel and the
# plain macrocell caster, which use no compaction.
METHODS = ["ink-compact", "ink-collate", "thrust", "jumping-jack", "redzone"]
MULTI = [f"multi/{m}" for m in METHODS]
PAPER = [f"paper/{m}" for m in METHODS]
BASELINES = ["single", "plain"]
CONFIGS = MULTI + PAPER + BASELINES
DEFAULT = "multi/ink-compact"  # what inkray renders with no --pipeline or --method
STAGES = ["bvh_update_ms", "raygen_ms", "traverse_ms", "intersect_ms", "shade_ms"]
# The configurations whose per-stage split the report tabulates and plots.
STAGE_ROWS = ["multi/ink-compact", "multi/thrust", "paper/ink-compact", "paper/thrust", "single", "plain"]
STAGE_PLOTS = ["multi/ink-compact", "paper/ink-compact", "single"]


def config_of(row):
    pipeline = row["pipeline"]
    return pipeline if pipeline in BASELINES else f"{pipeline}/{row['method']}"


def present(datasets, configs=CONFIGS):
    """The configurations of `configs` that some dataset has timed frames of, in that order."""
    return [c for c in configs if any(c in d.fps for d in datasets)]


def read_env(out):
    env = {}
    try:
        with open(os.path.join(out, "env.txt")) as f:
            for line in f:
                if "=" in line:
                    key, value = line.rstrip("\n").split("=", 1)
                    env[key] = value
    except OSError:
        pass
    return env


def mean_sd(values):
    if not values:
        return float("nan"), float("nan")
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def fmt(x, digits=1):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


# ---- Rendering ---------------------------------------------------------------------------------

class Dataset:
    def __init__(self, tag):
        self.tag = tag
        self.volume = ""
        self.size = ""
        self.fps = {}          # config -> [fps of every timed frame]
        self.fps_iso = {}      # (config, iso) -> [fps]
        self.stages = {}       # config -> {column: [values]}
        self.isovalues = set()


def read_render(out):
    datasets = []
    for path in sorted(glob.glob(os.path.join(out, "render", "*.csv"))):
        d = Dataset(os.path.splitext(os.path.basename(path))[0])
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                config = config_of(row)
                iso = float(row["isovalue"])
                d.volume = row["volume"]
                d.size = f'{row["width"]}x{row["height"]}'
                d.isovalues.add(iso)
                ms = float(row["frame_ms"])
                if row["pass"] == "timed":
                    if ms > 0:
                        d.fps.setdefault(config, []).append(1000.0 / ms)
                        d.fps_iso.setdefault((config, iso), []).append(1000.0 / ms)
                else:
                    s = d.stages.setdefault(config, {})
                    for key in ["frame_ms", "compact_ms", "iterations", "rays_generated", "rays_hit"] + STAGES:
                        s.setdefault(key, []).append(float(row[key]))
        if d.fps:
            datasets.append(d)
    return datasets


def table1(datasets):
    """Rows of (dataset, {config: (mean, sd)}) for the configurations the dataset has."""
    return [(d, {c: mean_sd(d.fps[c]) for c in CONFIGS if c in d.fps}) for d in datasets]


def best_of(cells, configs):
    """(mean FPS, config) of the fastest of `configs` among `cells`, or None."""
    return max(((cells[c][0], c) for c in configs if c in cells), default=None)


def ratio_best(cells, group, base):
    """(best of `group` / `base` in mean FPS, name of the best), or None when either is missing."""
    best = best_of(cells, group)
    if best is None or base not in cells:
        return None
    return best[0] / cells[base][0], best[1]


def ratio(cells, a, b):
    if a not in cells or b not in cells:
        return None
    return cells[a][0] / cells[b][0], a


# Per-dataset ratios of mean FPS shown beside Table 1: (header, csv name, function of the cells).
RATIOS = {
    "multi": [("best multi / single", "best_multi_over_single", lambda c: ratio_best(c, MULTI, "single")),
              ("single / plain", "single_over_plain", lambda c: ratio(c, "single", "plain"))],
    "paper": [("best paper / single", "best_paper_over_single", lambda c: ratio_best(c, PAPER, "single")),
              ("single / plain", "single_over_plain", lambda c: ratio(c, "single", "plain"))],
}
# Table 1 in two parts, each with the two baselines: (key, title, pipeline configurations).
GROUPS = [("multi", "the default multi pipeline", MULTI), ("paper", "the InK paper's pipeline", PAPER)]


def fmt_ratio(r):
    if r is None:
        return "n/a"
    value, name = r
    return f"{value:.2f}" + (f" ({name.split('/', 1)[1]})" if "/" in name else "")


def speedups(datasets, a, b):
    """Per dataset mean-FPS ratio a/b, and per (dataset, isovalue) point whether a beat b."""
    per_dataset, points = [], []
    for d in datasets:
        if a in d.fps and b in d.fps:
            per_dataset.append((d.tag, statistics.fmean(d.fps[a]) / statistics.fmean(d.fps[b])))
        for iso in sorted(d.isovalues):
            fa, fb = d.fps_iso.get((a, iso)), d.fps_iso.get((b, iso))
            if fa and fb:
                points.append((d.tag, iso, statistics.fmean(fa) / statistics.fmean(fb)))
    return per_dataset, points


def verdict_faster(per_dataset, points, claimed, name_a, name_b):
    """Words for a claim 'a is `claimed` (fraction) faster than b on average'; claimed None:
    'a is faster than b', by any margin."""
    if not per_dataset:
        return "not measured", f"no dataset has both {name_a} and {name_b}"
    avg = statistics.fmean(r for _, r in per_dataset) - 1.0
    wins = sum(1 for *_, r in points if r > 1.0)
    share = wins / len(points) if points else 0.0
    said = "claimed: faster" if claimed is None else f"claimed {100 * claimed:+.0f}%"
    claimed = claimed or 0.0
    text = (f"{name_a} vs {name_b}: mean speed-up {100 * avg:+.1f}% over {len(per_dataset)} datasets "
            f"({said}); {name_a} faster at {wins} of {len(points)} "
            f"(dataset, isovalue) points; per dataset: "
            + ", ".join(f"{tag} {100 * (r - 1):+.1f}%" for tag, r in per_dataset))
    if avg >= 0.5 * claimed and avg > 0 and share >= 0.9:
        word = "holds"
    elif avg <= 0.02 and share <= 0.5:
        word = "does not hold"
    elif share > 0:
        word = "holds only when"
    else:
        word = "does not hold"
    return word, text


def verdict_on_par(per_dataset, points, name_a, name_b, tolerance=0.05):
    if not per_dataset:
        return "not measured", f"no dataset has both {name_a} and {name_b}"
    ratios = [r for _, r in per_dataset]
    avg = statistics.fmean(ratios) - 1.0
    worst = max(abs(r - 1.0) for r in ratios)
    text = (f"{name_a} vs {name_b}: mean difference {100 * avg:+.1f}%, largest per dataset "
            f"{100 * worst:.1f}% (claimed: little difference)")
    return ("holds" if worst <= tolerance else "holds only when" if abs(avg) <= tolerance else "does not hold"), text


# ---- Render scenes -----------------------------------------------------------------------------
SCENES_TITLE = "Render scenes: plain caster, single kernel, multi and paper pipelines"


def read_scenes(out):
    """The summary table scripts/render-scenes.sh prints last: its '== render scenes' line and the
    lines after it, as they are. None when the scenes were not run, [] when no table was printed
    or it has no renderer row (every scene failed: its heading and column line only)."""
    try:
        with open(os.path.join(out, "render-scenes.txt")) as f:
            text = f.read().splitlines()
    except OSError:
        return None
    start = next((i for i, line in enumerate(text) if line.startswith("== render scenes")), None)
    if start is None:
        return []
    block = text[start:]
    while block and not block[-1].strip():
        block.pop()
    return block if len(block) > 2 else []


# ---- Compaction --------------------------------------------------------------------------------
# inkray compact-bench CSV: n,kept_pct,case,median_us,min_us,effective_gbps,copy_fraction,vs_base,gpu.
# Flags are a uniform random pattern (a hash of the value against a threshold), as in JJ Fig. 11
# and Redzone Fig. 4; Redzone in place is timed with its removal list sorted and shuffled.
SCAN = "cub DeviceSelect::Flagged"
REDZONE_LIST = "redzone in place, sorted list"


def read_compact(out):
    """{(case, n, kept_pct): median_us}."""
    path = os.path.join(out, "compact.csv")
    series = {}
    if not os.path.exists(path):
        return series
    with open(path, newline="") as f:
        rows = csv.reader(f)
        header = next(rows, [])
        width = len(header)
        for fields in rows:
            # Case names such as "redzone in place, sorted list" may be written unquoted: the
            # fields after the case are numbers, so whatever lies between is the name.
            extra = len(fields) - width
            if extra < 0 or width < 4:
                continue
            case = ",".join(fields[2:3 + extra])
            try:
                series[(case, int(fields[0]), int(fields[1]))] = float(fields[3 + extra])
            except ValueError:
                continue
    return series


def ratio_by_kept(series, n, slow, fast):
    """[(kept_pct, time(slow) / time(fast))] at size n: > 1 means `fast` is faster."""
    out = []
    for (case, size, kept), us in sorted(series.items(), key=lambda kv: kv[0][2]):
        if case == fast and size == n and (slow, n, kept) in series and us > 0:
            out.append((kept, series[(slow, n, kept)] / us))
    return out


def nearest(values, target):
    return min(values, key=lambda v: abs(v - target)) if values else None


def claim_jumping_jack(series):
    sizes = sorted({k[1] for k in series})
    n = nearest(sizes, 4 << 20)  # JJ Fig. 11: a 4M-element stream
    parts, word = [], "not measured"
    for base in (SCAN, "thrust"):
        r = ratio_by_kept(series, n, base, "jumping-jack")
        if not r:
            continue
        parts.append(f"{base}/jumping-jack time at n={n}: "
                     + ", ".join(f"{100 - kept}% invalid {x:.2f}" for kept, x in r))
        if base == SCAN:
            below = [x for kept, x in r if 100 - kept < 78]
            above = [x for kept, x in r if 100 - kept > 78]
            if below and all(x > 1 for x in below) and (not above or all(x <= 1 for x in above)):
                word = "holds"
            elif any(x > 1 for _, x in r):
                word = "holds only when"
            else:
                word = "does not hold"
    return word, "; ".join(parts) + (" (the paper's baseline is Horn's scan + binary-search gather; "
                                     "today's scan-based baseline is CUB's single-pass select)")


def claim_redzone(series):
    sizes = sorted({k[1] for k in series})
    n = max(sizes) if sizes else 0
    r = dict(ratio_by_kept(series, n, "thrust", REDZONE_LIST))
    text = (f"thrust/redzone-in-place time at n={n}: "
            + ", ".join(f"{100 - kept}% removed {x:.2f}" for kept, x in sorted(r.items(), reverse=True)))
    rc = dict(ratio_by_kept(series, n, SCAN, REDZONE_LIST))
    if rc:
        text += "; cub/redzone-in-place: " + ", ".join(f"{100 - kept}% removed {x:.2f}"
                                                       for kept, x in sorted(rc.items(), reverse=True))
    r2, r50 = r.get(98), r.get(50)
    if r2 is None or r50 is None:
        word = "not measured"
    elif r2 >= 5 and 0.67 <= r50 <= 1.5:
        word = "holds"
    elif r2 > 1.2 or r50 > 1.2:
        word = "holds only when"
    else:
        word = "does not hold"
    return word, text


# ---- Plots ------------------------------------------------------------------------------------

def plots(out, datasets, series):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not importable: no plots drawn"
    folder = os.path.join(out, "plots")
    os.makedirs(folder, exist_ok=True)
    # A colour per method, a line style per pipeline: the paper's pipeline dashed, the single
    # kernel black, the plain caster grey and dotted.
    method_colours = dict(zip(METHODS, ["tab:red", "tab:orange", "tab:blue", "tab:green", "tab:purple"]))
    colours = {c: method_colours[c.split("/", 1)[1]] for c in MULTI + PAPER}
    colours.update({"single": "black", "plain": "tab:gray"})
    styles = {c: "-" for c in MULTI}
    styles.update({c: "--" for c in PAPER})
    styles.update({"single": "-", "plain": ":"})
    configs = present(datasets)
    made = []
    if not datasets:
        configs = []

    # Fig. 6: FPS against isovalue, one panel per dataset, a line per configuration.
    cols = max(1, min(4, len(datasets)))
    rows_n = max(1, math.ceil(len(datasets) / cols))
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.2 * cols, 3.2 * rows_n), squeeze=False)
    for ax, d in zip(axes.flat, datasets):
        isos = sorted(d.isovalues)
        for c in configs:
            ys = [statistics.fmean(d.fps_iso[(c, i)]) if (c, i) in d.fps_iso else float("nan") for i in isos]
            ax.plot(isos, ys, marker="o", ms=3, label=c, color=colours[c], linestyle=styles[c],
                    linewidth=2 if c in BASELINES else 1)
        ax.set_title(d.tag, fontsize=9)
        ax.set_xlabel("isovalue", fontsize=8)
        ax.set_ylabel("FPS (mean over views)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_ylim(bottom=0)
    for ax in list(axes.flat)[len(datasets):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=6, ncol=2)
    fig.suptitle("FPS against isovalue, mean over the views (InK Fig. 6 protocol; frame time includes host work)", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "fig6_fps_vs_isovalue.png"), dpi=90)
    plt.close(fig)
    made.append("fig6_fps_vs_isovalue.png")

    # Table 1 as bars with sd.
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(datasets)), 4))
    width = 0.8 / max(1, len(configs))
    for k, c in enumerate(configs):
        means = [statistics.fmean(d.fps[c]) if c in d.fps else 0 for d in datasets]
        sds = [statistics.stdev(d.fps[c]) if len(d.fps.get(c, [])) > 1 else 0 for d in datasets]
        ax.bar([i + (k - len(configs) / 2 + 0.5) * width for i in range(len(datasets))], means, width,
               yerr=sds, label=c, color=colours[c], capsize=1,
               hatch="//" if c in PAPER else ".." if c == "plain" else None)
    ax.set_xticks(range(len(datasets)))
    ax.set_xticklabels([d.tag for d in datasets], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("mean FPS (+- sd over views and isovalues)")
    ax.set_yscale("log")
    ax.legend(fontsize=6, ncol=4)
    ax.set_title("Mean FPS per dataset and configuration (InK Table 1 protocol)", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "table1_fps.png"), dpi=90)
    plt.close(fig)
    made.append("table1_fps.png")

    # Where time goes: stacked stage times of the diagnostic pass, InK-Compact in both multi-kernel
    # pipelines and the single kernel (its one kernel is under shade). The rest of the diagnostic
    # frame is stacked on top: the multi pipelines' control work and round trips, and all of the
    # single kernel in CSVs of earlier inkray versions, which left its kernel out of the stages.
    fig, axes = plt.subplots(1, len(STAGE_PLOTS), figsize=(max(14, 2.1 * len(datasets)), 4), squeeze=False)
    for ax, c in zip(axes.flat, STAGE_PLOTS):
        bottom = [0.0] * len(datasets)
        for s, colour in zip(STAGES, ["tab:gray", "tab:cyan", "tab:blue", "tab:orange", "tab:green"]):
            vals = [statistics.fmean(d.stages[c][s]) if c in d.stages else 0 for d in datasets]
            ax.bar(range(len(datasets)), vals, bottom=bottom, label=s.replace("_ms", ""), color=colour)
            bottom = [b + v for b, v in zip(bottom, vals)]
        frame = [statistics.fmean(d.stages[c]["frame_ms"]) if c in d.stages else 0 for d in datasets]
        rest = [max(0.0, f - b) for f, b in zip(frame, bottom)]
        ax.bar(range(len(datasets)), rest, bottom=bottom, label="rest of the frame", color="lightgray",
               edgecolor="gray", linewidth=0.5)
        ax.set_xticks(range(len(datasets)))
        ax.set_xticklabels([d.tag for d in datasets], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("ms per frame (diagnostic pass)")
        ax.set_title(c, fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "stages.png"), dpi=90)
    plt.close(fig)
    made.append("stages.png")

    # Compaction sweeps: time against the removed share at each size (JJ Fig. 11, Redzone Fig. 4).
    if series:
        sizes = sorted({k[1] for k in series})
        cases = [c for c in sorted({k[0] for k in series}) if not c.startswith("fused") and not c.startswith("copy")]
        fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 3.6), squeeze=False)
        for ax, n in zip(axes.flat, sizes):
            for c in cases:
                pts = sorted((100 - k[2], v) for k, v in series.items() if k[0] == c and k[1] == n)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=c,
                            linestyle="--" if c.startswith("cub") or c.startswith("thrust") else "-")
            copy = series.get(("copy (ceiling)", n, 100))
            if copy:
                ax.axhline(copy, color="gray", linewidth=0.8, linestyle=":", label="copy (ceiling)")
            ax.set_yscale("log")
            ax.set_title(f"n = {n} ({n * 4 >> 20} MiB of values)", fontsize=9)
            ax.set_xlabel("removed (invalid) elements, %", fontsize=8)
            ax.set_ylabel("median us", fontsize=8)
            ax.tick_params(labelsize=7)
        axes.flat[0].legend(fontsize=6)
        fig.suptitle("Compaction time against the removed share (JJ Fig. 11, Redzone Fig. 4 protocol)", fontsize=10)
        fig.tight_layout()
        fig.savefig(os.path.join(folder, "compaction_sweeps.png"), dpi=90)
        plt.close(fig)
        made.append("compaction_sweeps.png")

        # In-kernel against out-of-kernel compaction behind the same producer (InK's argument).
        fused = [c for c in sorted({k[0] for k in series}) if c.startswith("fused")]
        if fused:
            fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 3.6), squeeze=False)
            for ax, n in zip(axes.flat, sizes):
                for c in fused:
                    pts = sorted((100 - k[2], v) for k, v in series.items() if k[0] == c and k[1] == n)
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3,
                                label=c.replace("fused: ", ""))
                ax.set_yscale("log")
                ax.set_title(f"producer + compaction, n = {n}", fontsize=9)
                ax.set_xlabel("removed elements, %", fontsize=8)
                ax.set_ylabel("median us", fontsize=8)
                ax.tick_params(labelsize=7)
            axes.flat[0].legend(fontsize=6)
            fig.tight_layout()
            fig.savefig(os.path.join(folder, "compaction_fused.png"), dpi=90)
            plt.close(fig)
            made.append("compaction_fused.png")
    return "plots: " + ", ".join(made)


# ---- Report -----------------------------------------------------------------------------------

def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    out = sys.argv[1]
    env = read_env(out)
    datasets = read_render(out)
    series = read_compact(out)
    lines = []
    w = lines.append

    w("# inkray benchmark results\n")
    w(f"- GPU: {env.get('gpu', '?')} ({env.get('gpu_memory', '?')}), driver {env.get('driver', '?')}, "
      f"CUDA {env.get('cuda', '?')}")
    w(f"- date {env.get('date', '?')}, commit {env.get('commit', '?')} (work tree {env.get('worktree', '?')}), "
      f"mode {env.get('mode', '?')}")
    w(f"- protocol ({env.get('device', '?')}): {env.get('size', '?')} pixels, orbit of {env.get('orbit', '?')} views, "
      f"{env.get('frames', '?')} timed frames per configuration after {env.get('warmup', '?')} warm-up, "
      f"isovalues {env.get('isovalues', '?')} (the best-scored of the volume's histogram suggestions), "
      f"renderers {env.get('pipelines', 'multi,single')} (every compaction method in the multi-kernel ones)")
    w(f"- host: {env.get('cpu', '?')}\n")
    configs = present(datasets)

    # Table 1, in two parts (the default multi design, the paper's pipeline), each with the single
    # kernel and the plain caster beside it and the per-dataset ratios of mean FPS.
    w("## Mean FPS (+- sd) per dataset and configuration (InK Table 1)\n")
    w("Configurations: pipeline/compaction method; `single` (the single kernel) and `plain` (the plain "
      "macrocell caster, the baseline) use no compaction. Bold: the fastest of the row. Ratios of mean FPS "
      "(above 1: the first is faster); best multi/paper names the fastest method. All rows: table1.csv, "
      "ratios.csv.\n")
    t1 = table1(datasets)
    with open(os.path.join(out, "table1.csv"), "w", newline="") as f:
        cw = csv.writer(f)
        cw.writerow(["dataset", "volume", "isovalues", "config", "mean_fps", "sd_fps", "frames"])
        for d, cells in t1:
            for c in CONFIGS:
                if c in cells:
                    m, s = cells[c]
                    cw.writerow([d.tag, d.volume, len(d.isovalues), c, f"{m:.3f}", f"{s:.3f}", len(d.fps[c])])
    with open(os.path.join(out, "ratios.csv"), "w", newline="") as f:
        cw = csv.writer(f)
        cw.writerow(["dataset", "ratio", "value", "best"])
        names = {}
        for key, _, _ in GROUPS:
            for _, name, fn in RATIOS[key]:
                names[name] = fn
        for d, cells in t1:
            for name, fn in names.items():
                r = fn(cells)
                if r is not None:
                    cw.writerow([d.tag, name, f"{r[0]:.4f}", r[1] if name.startswith("best") else ""])
    for key, title, group in GROUPS:
        cols = present(datasets, group) + present(datasets, BASELINES)
        if not present(datasets, group):
            w(f"### {title[0].upper() + title[1:]}\n\nNo `{key}` rows in these results.\n")
            continue
        ratios = RATIOS[key]
        w(f"### {title[0].upper() + title[1:]}\n")
        w("| dataset | volume | isovalues | " + " | ".join(cols) + " | " + " | ".join(h for h, _, _ in ratios) + " |")
        w("|---|---|---|" + "---|" * (len(cols) + len(ratios)))
        for d, cells in t1:
            best = best_of(cells, cols)
            row = []
            for c in cols:
                if c not in cells:
                    row.append("n/a")
                    continue
                m, s = cells[c]
                cell = f"{fmt(m)} (+-{fmt(s)})"
                row.append(f"**{cell}**" if best is not None and c == best[1] else cell)
            row += [fmt_ratio(fn(cells)) for _, _, fn in ratios]
            w(f"| {d.tag} | {d.volume} | {len(d.isovalues)} | " + " | ".join(row) + " |")
        w("")

    # FPS by isovalue.
    with open(os.path.join(out, "fps_by_isovalue.csv"), "w", newline="") as f:
        cw = csv.writer(f)
        cw.writerow(["dataset", "isovalue", "config", "mean_fps", "sd_fps", "frames"])
        for d in datasets:
            for iso in sorted(d.isovalues):
                for c in configs:
                    v = d.fps_iso.get((c, iso), [])
                    if v:
                        m, s = mean_sd(v)
                        cw.writerow([d.tag, f"{iso:g}", c, f"{m:.3f}", f"{s:.3f}", len(v)])
    w("## FPS against isovalue (InK Fig. 6 / Fig. 7)\n")
    w("Mean FPS over the views at each isovalue; fps_by_isovalue.csv has the sd; plot: plots/fig6_fps_vs_isovalue.png.\n")
    for key, title, group in GROUPS:
        cols = present(datasets, group) + present(datasets, BASELINES)
        if not present(datasets, group):
            continue
        w(f"{title[0].upper() + title[1:]}:\n")
        w("| dataset | isovalue | " + " | ".join(cols) + " |")
        w("|---|---|" + "---|" * len(cols))
        for d in datasets:
            for iso in sorted(d.isovalues):
                cells = [fmt(statistics.fmean(d.fps_iso[(c, iso)])) if (c, iso) in d.fps_iso else "n/a" for c in cols]
                w(f"| {d.tag} | {iso:g} | " + " | ".join(cells) + " |")
        w("")

    # Stages.
    w("## Where the time goes (per-stage diagnostic pass)\n")
    w("The renderer runs each diagnostic frame a second time, driven from the host with an event between "
      "stages, so the stage times need not add up to the timed frame (shown as frame); means over the views and "
      "isovalues, in ms. compact = time in out-of-kernel compaction, inside the stage times. The single "
      "kernel's and the plain caster's one kernel is under shade; the multi pipeline shades inside intersect. "
      "stages.csv has every configuration.\n")
    w("| dataset | config | frame | bvh update | ray gen | traverse | intersect | shade | stage sum | compact | rounds | rays hit |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with open(os.path.join(out, "stages.csv"), "w", newline="") as f:
        cw = csv.writer(f)
        keys = ["frame_ms"] + STAGES + ["compact_ms", "iterations", "rays_hit"]
        cw.writerow(["dataset", "config"] + keys)
        for d in datasets:
            for c in CONFIGS:
                if c not in d.stages:
                    continue
                vals = [statistics.fmean(d.stages[c][k]) for k in keys]
                cw.writerow([d.tag, c] + [f"{v:.4f}" for v in vals])
                if c in STAGE_ROWS:
                    w(f"| {d.tag} | {c} | " + " | ".join(fmt(v, 3) for v in vals[:-3])
                      + f" | {sum(vals[1:-3]):.3f} | {vals[-3]:.3f} | {vals[-2]:.1f} | {vals[-1]:.0f} |")
    w("")

    # Claims: the InK paper's, on its pipeline as published; then this project's design against
    # the single kernel, and the single kernel against the plain caster.
    w("## The seeds' claims\n")
    w("The InK paper's claims are checked on the `paper` pipeline (its design as published); the last two "
      "compare the default `multi` design (with its default method, InK-Compact) with the single kernel, and "
      "the single kernel with the plain caster.\n")
    claims = []
    pd, pts = speedups(datasets, "paper/ink-compact", "paper/thrust")
    claims.append(("InK-Compact makes the multi-kernel ray-caster ~90% faster than Thrust (InK Table 1, Fig. 6)",
                   *verdict_faster(pd, pts, 0.90, "paper/ink-compact", "paper/thrust")))
    pd, pts = speedups(datasets, "paper/ink-compact", "single")
    claims.append(("The multi-kernel pipeline with InK-Compact is ~15% faster than the single-kernel one "
                   "(InK Table 1, Fig. 7)", *verdict_faster(pd, pts, 0.15, "paper/ink-compact", "single")))
    pd, pts = speedups(datasets, "paper/ink-collate", "paper/ink-compact")
    claims.append(("InK-Collate shows little difference from InK-Compact in the ray-caster (InK Fig. 7)",
                   *verdict_on_par(pd, pts, "paper/ink-collate", "paper/ink-compact")))
    pd, pts = speedups(datasets, DEFAULT, "single")
    claims.append(("The default multi pipeline is faster than the single kernel",
                   *verdict_faster(pd, pts, None, DEFAULT, "single")))
    pd, pts = speedups(datasets, "single", "plain")
    claims.append(("The single kernel is faster than the plain macrocell caster",
                   *verdict_faster(pd, pts, None, "single", "plain")))

    # Compaction claims from compact-bench.
    if series:
        claims.append(("Jumping Jack beats the scan-based baseline (Horn's method in the paper) below ~78% "
                       "invalid elements (JJ Fig. 11)", *claim_jumping_jack(series)))
        claims.append(("Redzone is an order of magnitude faster than Thrust when 2% are removed and on par at 50% "
                       "(Redzone Fig. 4)", *claim_redzone(series)))
    else:
        claims.append(("Compaction claims (JJ Fig. 11, Redzone Fig. 4)", "not measured",
                       "no compact-bench results (see skipped.txt)"))

    for title, word, text in claims:
        w(f"- **{title}**: *{word}*. {text}")
    w("")

    # Fastest configuration per dataset.
    w("## Fastest configuration per dataset\n")
    w("| dataset | volume | fastest | mean FPS | runner-up | mean FPS |")
    w("|---|---|---|---|---|---|")
    for d, cells in t1:
        ranked = sorted(((m, c) for c, (m, _) in cells.items() if not math.isnan(m)), reverse=True)
        if len(ranked) >= 2:
            w(f"| {d.tag} | {d.volume} | {ranked[0][1]} | {fmt(ranked[0][0])} | {ranked[1][1]} | {fmt(ranked[1][0])} |")
    w("")

    w(f"## {SCENES_TITLE}\n")
    scenes = read_scenes(out)
    if scenes is None:
        w("Not run (the render scenes need a GPU: full and quick modes; see Not measured).\n")
    elif not scenes:
        w("No scene measured: render-scenes.txt holds no summary row (see it, render-scenes/ and Not measured).\n")
    else:
        w("scripts/render-scenes.sh (render_bench: every renderer in one process on builtin fractal volumes; "
          "per-scene output in render-scenes/), its summary as printed:\n")
        w("```")
        lines.extend(scenes)
        w("```\n")

    if series:
        w("## Compaction sweeps (compact-bench: median us of 25 runs, CUDA events)\n")
        w("Uniform random flags; every case compacts the same stream. Full table: compact.csv; plots: "
          "plots/compaction_sweeps.png, plots/compaction_fused.png.\n")
        cases = sorted({k[0] for k in series}, key=lambda c: (c.startswith("fused"), c != SCAN, c))
        for n in sorted({k[1] for k in series}):
            kepts = sorted({k[2] for k in series if k[1] == n and k[2] != 100})
            copy = series.get(("copy (ceiling)", n, 100))
            w(f"n = {n}" + (f" (device copy of the values: {copy:.1f} us)" if copy else "") + ":\n")
            w("| case | " + " | ".join(f"{100 - kept}% removed" for kept in kepts) + " |")
            w("|---|" + "---|" * len(kepts))
            for c in cases:
                if c.startswith("copy"):
                    continue
                w(f"| {c} | " + " | ".join(fmt(series.get((c, n, kept)), 1) for kept in kepts) + " |")
            w("")

    note = plots(out, datasets, series)
    skipped = os.path.join(out, "skipped.txt")
    if os.path.exists(skipped) and os.path.getsize(skipped):
        w("## Not measured\n")
        with open(skipped) as f:
            for line in f:
                w(f"- {line.strip()}")
        w("")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")

    # A short summary for the terminal.
    print(f"{len(datasets)} datasets, {len(series)} compaction points; {note}")
    for d, cells in t1:
        print(f"  {d.tag:20s} " + "  ".join(f"{c} {fmt(cells[c][0])}" for c in CONFIGS if c in cells))
    for title, word, text in claims:
        print(f"  [{word}] {title}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
