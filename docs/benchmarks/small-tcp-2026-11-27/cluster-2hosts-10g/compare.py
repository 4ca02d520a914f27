import collections, glob, json, os, statistics, sys
runs = collections.defaultdict(list)
for f in sorted(glob.glob(os.path.join(sys.argv[1], '*-*-*', 'results.jsonl'))):
    rate, _, side = os.path.basename(os.path.dirname(f)).split('-')
    for line in open(f):
        r = json.loads(line)
        impl = r['impl'] if r['impl'] != 'mccl' else 'mccl-' + side
        runs[(r['bench'], r['bytes_per_rank'], impl)].append((r['time_s'] * 1e6, r['correct']))
for key in sorted(runs):
    v = runs[key]
    print(f"{key[0]:10} {key[1]:>6} {key[2]:13} median {statistics.median(x[0] for x in v):8.1f} us  runs {' '.join(f'{x[0]:.1f}' for x in v)}  {'ok' if all(x[1] for x in v) else 'NOT CORRECT'}")
