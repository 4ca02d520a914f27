import subprocess,sys,json,statistics as st,tempfile,os
# ab_env.py OUT REPS bench size iters VARIANT... ; alternating launches on cluster cy, one JSON line per launch to OUT.
# VARIANT = name:K=V,K=V or name: (MCCL's mccl_osu_<bench> with that environment);
#           ompi (Open MPI's default), ompi:ALG (Open MPI with coll_tuned_<bench>_algorithm ALG forced);
#           preload...:K=V,... (the MPI benchmark under libmccl_mpi, with that environment)
# env: HOSTS (default 4), BUILD (MCCL's build folder), MPI_BENCH (mpi_coll_bench's path)
out,reps,b,size,it=sys.argv[1],int(sys.argv[2]),sys.argv[3],sys.argv[4],int(sys.argv[5]); vs=sys.argv[6:]; res={}
L='/work/main/tests/fabric/launch.sh'; B=os.environ.get('BUILD','/work/main/build'); H=os.environ.get('HOSTS','4')
def envs_of(kv):
  return [a for e in kv.split(',') if e for a in ('--env',e)]
def run(v):
  f=tempfile.mktemp(dir='/tmp'); open(f,'w').close(); os.chmod(f,0o666)
  name,_,kv=v.partition(':')
  iters=['-m',f'{size}:{size}','-i',str(it),'-x',str(max(1,it//10)),'--json',f]
  mpi=[os.environ.get('MPI_BENCH','/tmp/cyc_lo/bin/mpi_coll_bench'),'-b',b]+iters
  if name=='ompi':
    forced=[] if not kv else [a for m in (('coll_tuned_use_dynamic_rules','1'),(f'coll_tuned_{b}_algorithm',kv)) for a in ('--mpirun-arg','--mca','--mpirun-arg',m[0],'--mpirun-arg',m[1])]
    cmd=[L,'--mpirun','--name','cy','--hosts',H,'--timeout','250']+forced+['--']+mpi+['--impl','ompi-default']
  elif name.startswith('preload'):
    cmd=[L,'--mpirun','--name','cy','--hosts',H,'--timeout','250','--env',f'LD_PRELOAD={B}/src/mpi/libmccl_mpi.so']+envs_of(kv)+['--']+mpi
  else:
    cmd=[L,'--name','cy','--hosts',H,'--timeout','250']+envs_of(kv)+['--',f'{B}/bench/osu/mccl_osu_{b}']+iters
  subprocess.run(cmd,capture_output=True,timeout=300)
  try: r=json.loads(open(f).readline())
  except Exception: r={}
  os.unlink(f); return r
with open(out,'a') as fo:
  for rep in range(reps):
    for v in (vs if rep%2==0 else vs[::-1]):
      r=run(v); load=float(open('/proc/loadavg').read().split()[0])
      fo.write(json.dumps(dict(variant=v,bench=b,bytes=int(size),cycle_us=r.get('cycle_us'),avg_us=r.get('avg_us'),p50_max_us=r.get('p50_max_us'),rep=rep,load1=load,hosts=int(H)))+'\n'); fo.flush()
      res.setdefault(v,[]).append(r)
for v in vs:
  rs=[r for r in res[v] if r]
  f=lambda k: st.median([r[k] for r in rs])
  q=st.quantiles([r['cycle_us'] for r in rs],n=4) if len(rs)>1 else [float('nan')]*3
  print(f"{b} {size} {v:40s} cycle {f('cycle_us'):7.1f} ({q[0]:.0f}..{q[2]:.0f}) avg {f('avg_us'):7.1f} p50max {f('p50_max_us'):7.1f}  cycles {' '.join('%.0f'%r['cycle_us'] for r in rs)}")
