#!/usr/bin/env python3
"""Per-node figures of replayed CUDA graphs from graph_timeline.so's records.

usage: graph_timeline.py TIMELINE.tsv [--last N] [--top K]

Groups kernel records by launch (correlation id), keeps the last N launches of the graph that
was launched most often, and prints for each node in start order its median duration, the
median gap from the previous node's end to its start (negative: it started while the previous
one ran, as programmatic launch allows), its median increment (its end minus the previous
node's end: what it adds to the replay), and the median span of a whole replay.
"""
import argparse
import collections
import re
import statistics
import sys


def short(name):
    if name.startswith("tgk_"):
        return name
    if "splitReduceNorm" in name:
        return "cutlass:splitk_sum+norm"
    if "splitReduce" in name:
        return "cutlass:splitk_sum"
    if "cutlass" in name:  # CUPTI names are mangled: the tile is not spelled out
        return "cutlass:gemm"
    if "nvjet" in name or "gemm" in name.lower():
        return "library:" + name[:40]
    return name[:60]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tsv")
    ap.add_argument("--last", type=int, default=20)
    ap.add_argument("--top", type=int, default=0, help="print only the K slowest nodes")
    a = ap.parse_args()
    launches = collections.defaultdict(list)
    graphs = collections.Counter()
    for line in open(a.tsv):
        parts = line.rstrip("\n").split("\t", 5)
        if len(parts) != 6:
            continue
        corr, gid, node, start, end, name = parts
        if gid == "0":
            continue
        launches[(int(gid), int(corr))].append((int(start), int(end), int(node), name))
    for (gid, corr) in launches:
        graphs[gid] += 1
    if not graphs:
        sys.exit("no graph replays in %s" % a.tsv)
    gid = graphs.most_common(1)[0][0]
    keys = sorted(k for k in launches if k[0] == gid)[-a.last:]
    reps = [sorted(launches[k]) for k in keys]
    n = min(len(r) for r in reps)
    rows = []
    for i in range(n):
        durs = [(r[i][1] - r[i][0]) / 1e3 for r in reps]
        gaps = [(r[i][0] - r[i - 1][1]) / 1e3 if i else 0.0 for r in reps]
        incs = [(r[i][1] - r[i - 1][1]) / 1e3 if i else (r[i][1] - r[i][0]) / 1e3 for r in reps]
        rows.append((i, short(reps[-1][i][3]), statistics.median(durs), statistics.median(gaps),
                     statistics.median(incs)))
    spans = [(r[-1][1] - r[0][0]) / 1e3 for r in reps]
    print("graph %d: %d replays, %d kernels, median span %.1f us, sum of median durations %.1f us"
          % (gid, len(reps), n, statistics.median(spans), sum(r[2] for r in rows)))
    by = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for _, nm, d, g, inc in rows:
        k = re.sub(r"^tgk_\d+_", "", nm)
        by[k][0] += 1
        by[k][1] += d
        by[k][2] += g
        by[k][3] += inc
    print("%-34s %5s %9s %9s %9s" % ("kind", "count", "dur us", "gap us", "incr us"))
    for k, (c, d, g, inc) in sorted(by.items(), key=lambda x: -x[1][3]):
        print("%-34s %5d %9.1f %9.1f %9.1f" % (k, c, d, g, inc))
    show = sorted(rows, key=lambda r: -r[4])[:a.top] if a.top else rows
    print("%4s %-40s %8s %8s %8s" % ("step", "kernel", "dur us", "gap us", "incr us"))
    for i, nm, d, g, inc in show:
        print("%4d %-40s %8.2f %8.2f %8.2f" % (i, nm, d, g, inc))


if __name__ == "__main__":
    main()
