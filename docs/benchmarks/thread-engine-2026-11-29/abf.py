import subprocess,sys,json,statistics as st
# abf.py OUT REPS case... ; case = N:bench:size:iters ; runs mccl-inline, mccl-thread, ompi alternating on cluster cy
out,reps=sys.argv[1],int(sys.argv[2]); cases=[c.split(':') for c in sys.argv[3:]]
B='/work/main/build'; res={}
with open(out,'a') as f:
  for rep in range(reps):
    for (n,b,s,it) in cases:
      for impl in (['inline','thread','ompi'] if rep%2==0 else ['ompi','thread','inline']):
        if impl=='ompi': cmd=['./cycfo.sh',n,b,s,it]
        else: cmd=['./cycf.sh',B,n,b,s,it,'MCCL_PROGRESS='+impl]
        v=subprocess.run(cmd,capture_output=True,text=True).stdout.strip()
        load=float(open('/proc/loadavg').read().split()[0])
        f.write(json.dumps(dict(impl=impl,ranks=int(n),bench=b,bytes=int(s),cycle_us=float(v),rep=rep,load1=load))+'\n'); f.flush()
        res.setdefault((n,b,s,impl),[]).append(float(v))
for (n,b,s,it) in cases:
  o=st.median(res[(n,b,s,'ompi')])
  line=f"n={n} {b} {s}B:"
  for impl in ('inline','thread','ompi'):
    a=res[(n,b,s,impl)]; line+=f"  {impl} {min(a):.0f}-{max(a):.0f} ({st.median(a):.1f}, {st.median(a)/o:.2f}x)"
  print(line)
