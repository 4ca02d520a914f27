import subprocess,sys,json,statistics as st,tempfile,os
# ab2.py OUT REPS HOSTS case... ; case = bench:size:iters ; base (/tmp/base/build), new (/work/main/build), ompi alternating, cluster cy
out,reps,hosts=sys.argv[1],int(sys.argv[2]),sys.argv[3]; cases=[c.split(':') for c in sys.argv[4:]]; res={}
L='/work/main/tests/fabric/launch.sh'; builds={'base':'/tmp/base/build','new':'/work/main/build'}
def run(v,b,size,it):
  f=tempfile.mktemp(dir='/tmp'); open(f,'w').close(); os.chmod(f,0o666)
  x=str(max(1,int(it)//10))
  if v=='ompi': cmd=[L,'--mpirun','--name','cy','--hosts',hosts,'--timeout','250','--','/tmp/cyc_lo/bin/mpi_coll_bench','-b',b,'-m',f'{size}:{size}','-i',it,'-x',x,'--json',f,'--impl','ompi-default']
  else: cmd=[L,'--name','cy','--hosts',hosts,'--timeout','250','--',f'{builds[v]}/bench/osu/mccl_osu_{b}','-m',f'{size}:{size}','-i',it,'-x',x,'--json',f]
  subprocess.run(cmd,capture_output=True,timeout=300)
  try: r=json.loads(open(f).readline())
  except Exception: r={}
  os.unlink(f); return r
vs=['base','new','ompi']
with open(out,'a') as fo:
  for rep in range(reps):
    for (b,size,it) in cases:
      for v in (vs if rep%2==0 else vs[::-1]):
        r=run(v,b,size,it); load=float(open('/proc/loadavg').read().split()[0])
        fo.write(json.dumps(dict(variant=v,hosts=int(hosts),bench=b,bytes=int(size),cycle_us=r.get('cycle_us'),avg_us=r.get('avg_us'),p50_max_us=r.get('p50_max_us'),rep=rep,load1=load))+'\n'); fo.flush()
        if r: res.setdefault((b,size,v),[]).append(r)
for (b,size,it) in cases:
  o=st.median([r['cycle_us'] for r in res[(b,size,'ompi')]]); line=f"n={hosts} {b:9s} {size:>7s}:"
  for v in vs:
    a=[r['cycle_us'] for r in res.get((b,size,v),[])]
    if a: line+=f"  {v} {min(a):.0f}-{max(a):.0f} ({st.median(a):.1f}, {st.median(a)/o:.2f}x)"
  print(line)
