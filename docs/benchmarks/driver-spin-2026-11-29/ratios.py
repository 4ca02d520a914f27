import json,sys,statistics as st
rows=[json.loads(l) for l in open(sys.argv[1])]
key=sys.argv[2] if len(sys.argv)>2 else 'cycle_us'
d={}
for r in rows:
  if key not in r: continue
  d[(r['ranks'] if 'ranks' in r else r.get('n'),r['bench'] if 'bench' in r else r.get('collective'),r['series'],r['bytes_per_rank'])]=r[key]
ranks=sorted({k[0] for k in d}); benches=sorted({k[1] for k in d})
for n in ranks:
  for b in benches:
    out=[]
    for impl in ['mccl-inline','mccl-thread']:
      rs=[d[(n,b,impl,s)]/d[(n,b,'ompi-default',s)] for (nn,bb,ii,s) in d if nn==n and bb==b and ii==impl and (n,b,'ompi-default',s) in d]
      worst=max(rs) if rs else 0
      over=sum(1 for x in rs if x>1.0)
      out.append(f"{impl} {st.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f}, {over}/{len(rs)} >1)")
    print(n,b,' | '.join(out))
