import subprocess,sys,json,statistics as st,tempfile,os
# ab_env.py OUT REPS bench size iters VARIANT... ; VARIANT = name:K=V,K=V or name: (none) or ompi
# env: HOSTS (default 4), BUILD (MCCL's build folder), MPI_BENCH (mpi_coll_bench's path)
out,reps,b,size,it=sys.argv[1],int(sys.argv[2]),sys.argv[3],sys.argv[4],int(sys.argv[5]); vs=sys.argv[6:]; res={}
L='/work/main/tests/fabric/launch.sh'; B=os.environ.get('BUILD','/work/main/build')
def run(v):
  f=tempfile.mktemp(dir='/tmp'); open(f,'w').close(); os.chmod(f,0o666)
  name,_,kv=v.partition(':')
  if name=='ompi': cmd=[L,'--mpirun','--name','cy','--hosts',os.environ.get('HOSTS','4'),'--timeout','250','--',os.environ.get('MPI_BENCH','/tmp/cyc_lo/bin/mpi_coll_bench'),'-b',b,'-m',f'{size}:{size}','-i',str(it),'-x',str(max(1,it//10)),'--json',f,'--impl','ompi-default']
  else:
    envs=[]
    for e in [x for x in kv.split(',') if x]: envs+=['--env',e]
    cmd=[L,'--name','cy','--hosts',os.environ.get('HOSTS','4'),'--timeout','250']+envs+['--',f'{B}/bench/osu/mccl_osu_{b}','-m',f'{size}:{size}','-i',str(it),'-x',str(max(1,it//10)),'--json',f]
  subprocess.run(cmd,capture_output=True,timeout=300)
  try: r=json.loads(open(f).readline())
  except Exception: r={}
  os.unlink(f); return r
with open(out,'a') as fo:
  for rep in range(reps):
    for v in (vs if rep%2==0 else vs[::-1]):
      r=run(v); load=float(open('/proc/loadavg').read().split()[0])
      fo.write(json.dumps(dict(variant=v,bench=b,bytes=int(size),cycle_us=r.get('cycle_us'),avg_us=r.get('avg_us'),p50_max_us=r.get('p50_max_us'),rep=rep,load1=load))+'\n'); fo.flush()
      res.setdefault(v,[]).append(r)
for v in vs:
  rs=[r for r in res[v] if r]
  f=lambda k: st.median([r[k] for r in rs])
  print(f"{b} {size} {v:40s} cycle {f('cycle_us'):7.1f} avg {f('avg_us'):7.1f} p50max {f('p50_max_us'):7.1f}  cycles {' '.join('%.0f'%r['cycle_us'] for r in rs)}")
