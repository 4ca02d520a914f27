import collections, statistics, sys
d=collections.defaultdict(list)
for line in open(sys.argv[1]):
    p=line.split()
    if len(p)==4 and p[0] in('bcast','allgather'):
        d[(p[0],int(p[2]),p[1])].append(float(p[3]))
for k in sorted({(a,b) for a,b,c in d}):
    A=d[k+('A',)];B=d[k+('B',)]
    print(f"{k[0]:9} {k[1]:5} A {' '.join(f'{x:.2f}' for x in A)} | B {' '.join(f'{x:.2f}' for x in B)} | B/A {statistics.median(B)/statistics.median(A):.3f}")
