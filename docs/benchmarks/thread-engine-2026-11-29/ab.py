import subprocess,sys,json,statistics as st,os
# ab.py OUT REPS ENGINE case... ; case = N:bench:size:iters
out,reps,engine=sys.argv[1],int(sys.argv[2]),sys.argv[3]
builds={'base':'/tmp/base5459/build','new':'/work/main/build'}
cases=[c.split(':') for c in sys.argv[4:]]
res={}
with open(out,'a') as f:
  for rep in range(reps):
    for (n,b,s,it) in cases:
      for name,B in (builds.items() if rep%2==0 else reversed(list(builds.items()))):
        v=subprocess.run(['/tmp/lat/cycb.sh',B,n,b,s,it,'MCCL_PROGRESS='+engine],capture_output=True,text=True).stdout.strip()
        load=open('/proc/loadavg').read().split()[0]
        rec=dict(build=name,engine=engine,ranks=int(n),bench=b,bytes=int(s),cycle_us=float(v),rep=rep,load1=float(load))
        f.write(json.dumps(rec)+'\n'); f.flush()
        res.setdefault((n,b,s,name),[]).append(float(v))
for (n,b,s,it) in cases:
  a=res[(n,b,s,'base')]; c=res[(n,b,s,'new')]
  print(f"{engine} n={n} {b} {s}B: base {min(a):.1f}-{max(a):.1f} ({st.median(a):.1f})  new {min(c):.1f}-{max(c):.1f} ({st.median(c):.1f})  ratio {st.median(c)/st.median(a):.2f}")
