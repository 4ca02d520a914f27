#!/usr/bin/env python3
# compare.py DIR: medians of each case's time over the runs DIR/<rate>-<round>-<side>/,
# after over before (bench/fabric/run.sh results.jsonl).
import collections, glob, json, os, statistics, sys

runs = collections.defaultdict(list)
for f in sorted(glob.glob(os.path.join(sys.argv[1], '*-*-*', 'results.jsonl'))):
    rate, _, side = os.path.basename(os.path.dirname(f)).split('-')
    for line in open(f):
        r = json.loads(line)
        repairs = r['repair_bytes_requested_per_op'] / max(1, r['bytes_per_rank'])
        runs[(rate, r['bench'], r['bytes_per_rank'], side)].append((r['time_s'], r['correct'], repairs))

print(f"{'rate':7} {'bench':15} {'bytes':>9} | before, ms (each run) | after, ms (each run) | after/before (medians)")
for key in sorted({k[:3] for k in runs}):
    before, after = runs[key + ('before',)], runs[key + ('after',)]
    if not before or not after:
        continue
    ms = lambda xs: ' '.join(f"{x[0] * 1e3:.3f}" for x in xs)
    ratio = statistics.median(x[0] for x in after) / statistics.median(x[0] for x in before)
    ok = 'all correct' if all(x[1] for x in before + after) else 'NOT CORRECT'
    print(f"{key[0]:7} {key[1]:15} {key[2]:>9} | {ms(before)} | {ms(after)} | {ratio:.3f} "
          f"({ok}, repairs/m at most {max(x[2] for x in before + after):.3f})")
