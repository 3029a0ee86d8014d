#!/usr/bin/env python3
"""Pools the rounds of several peer comparison runs and gives each speed target's ratio over all
of them, with a 95% bootstrap interval of its median.

Each ratio is taken inside a round, as the harnesses take it (the same minute of machine time for
both rows), and only then pooled: a slow minute that hits one round does not move the others.
One run's median over 6 to 20 rounds moves by more than the targets' margins on a shared VM;
the pooled median over many runs, and its interval, say whether a target holds.

Inputs, any number and either kind (a folder is read for the file it holds):
  - a `bench/peers.sh` run: its `summary.json` (targets actix-raw, rt-echo, rt-mrtr);
  - a run of the wrk harness `../shared/bench/peers/run.sh`: its `runs.tsv` (targets actix-raw,
    roundtrip-echo, roundtrip-mrtr-sealed).
Runs of the two harnesses are pooled apart: they drive different flows with different drivers.

usage: bench/pool.py RUN...      e.g. bench/pool.py bench/results/wrk-*-9084a50-*-runs.tsv
"""

import csv
import json
import random
import statistics
import sys
from pathlib import Path

# (name, numerator, denominator, target): numerator and denominator name a row by its role.
RATIOS = [
    ("echo / raw", "echo", "raw", 0.7),
    ("MRTR / echo", "mrtr", "echo", 0.9),
]
ROLES = {
    "peers.sh": {"raw": "actix-raw", "echo": "rt-echo", "mrtr": "rt-mrtr"},
    "wrk": {"raw": "actix-raw", "echo": "roundtrip-echo", "mrtr": "roundtrip-mrtr-sealed"},
}
RESAMPLES = 2000


def measured(rps, cpu_us):
    """One row's (req/s, server CPU µs a request); both must be positive numbers."""
    rps, cpu_us = float(rps), float(cpu_us)
    if not (rps > 0 and cpu_us > 0):
        raise ValueError(f"req/s {rps} and CPU {cpu_us} µs a request must be positive")
    return rps, cpu_us


def rounds_of_peers(path):
    """Each round of a peers.sh summary: role -> (req/s, server CPU µs a request)."""
    runs = {t["target"]: t["runs"] for t in json.loads(path.read_text())["targets"]}
    names = ROLES["peers.sh"]
    if any(name not in runs for name in names.values()):
        return []
    rows = zip(*(runs[name] for name in names.values()))
    return [
        {role: measured(r["rps"], r["server_cpu_us_per_request"]) for role, r in zip(names, row)}
        for row in rows
    ]


def rounds_of_wrk(path):
    """Each round of a wrk harness runs.tsv: role -> (req/s, server CPU µs a request)."""
    by_round = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            by_round.setdefault(row["round"], {})[row["target"]] = measured(
                row["rps"], row["cpu_us_per_req"]
            )
    names = ROLES["wrk"]
    return [
        {role: found[name] for role, name in names.items()}
        for found in by_round.values()
        if all(name in found for name in names.values())
    ]


def read_run(arg):
    """(harness, rounds) of one run, given its file or the folder holding it."""
    path = Path(arg)
    if path.is_dir():
        found = [path / n for n in ("summary.json", "runs.tsv") if (path / n).is_file()]
        if not found:
            sys.exit(f"{arg}: no summary.json (peers.sh) or runs.tsv (wrk harness) in it")
        path = found[0]
    readers = {".json": ("peers.sh", rounds_of_peers), ".tsv": ("wrk", rounds_of_wrk)}
    if path.suffix not in readers:
        sys.exit(f"{arg}: not a peers.sh summary.json or a wrk harness runs.tsv")
    harness, read = readers[path.suffix]
    try:
        return harness, read(path)
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{arg}: not a readable {harness} run ({type(e).__name__}: {e})")


def median_interval(values, rng):
    """The median and a 95% bootstrap interval of it."""
    medians = sorted(
        statistics.median(rng.choices(values, k=len(values))) for _ in range(RESAMPLES)
    )
    return statistics.median(values), medians[RESAMPLES // 40], medians[-RESAMPLES // 40 - 1]


def report(harness, runs, rounds):
    rng = random.Random(7)  # the same intervals for the same inputs
    print(f"{harness}: {len(rounds)} rounds from {runs} run{'' if runs == 1 else 's'}")
    for name, num, den, target in RATIOS:
        by = [
            ("", [r[num][0] / r[den][0] for r in rounds]),
            # Server CPU a request is a cost, so the ratio of requests a second is den / num.
            (" by server CPU", [r[den][1] / r[num][1] for r in rounds]),
        ]
        for how, values in by:
            mid, low, high = median_interval(values, rng)
            met = sum(v >= target for v in values)
            verdict = "holds" if low >= target else "misses" if high < target else "undecided"
            print(
                f"  {name + how:<27} {mid:.3f}  [{low:.3f}, {high:.3f}]"
                f"  {met} of {len(values)} rounds >= {target}  {verdict}"
            )


def main(args):
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args else 2
    pooled = {}
    for arg in args:
        harness, rounds = read_run(arg)
        runs, kept = pooled.get(harness, (0, []))
        pooled[harness] = (runs + 1, kept + rounds)
    for harness, (runs, rounds) in pooled.items():
        if not rounds:
            print(f"{harness}: no round with all three rows", file=sys.stderr)
            return 1
        report(harness, runs, rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
