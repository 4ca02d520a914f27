import subprocess,sys,json,statistics as st,tempfile,os
# bar.py OUT REPS ITERS: barrier-only cycles, MCCL inline/thread against Open MPI, 4 hosts of cluster cy
# env: HOSTS (default 4), BAR_MPI and BAR_MCCL (the temporary barrier-only builds' paths)
out,reps,it=sys.argv[1],int(sys.argv[2]),int(sys.argv[3]); res={}
L='/work/main/tests/fabric/launch.sh'
def run(impl):
  f=tempfile.mktemp(dir='/tmp'); open(f,'w').close(); os.chmod(f,0o666)
  if impl=='ompi': cmd=[L,'--mpirun','--name','cy','--hosts',os.environ.get('HOSTS','4'),'--timeout','250','--env','BARRIER_ONLY=1','--',os.environ.get('BAR_MPI','/tmp/cyc_lo/bin/mpi_barrier_bench'),'-b','bcast','-m','1:1','-i',str(it),'-x',str(it//10),'--json',f,'--impl','ompi-default']
  else: cmd=[L,'--name','cy','--hosts',os.environ.get('HOSTS','4'),'--timeout','250','--env','BARRIER_ONLY=1','--env','MCCL_PROGRESS='+impl,'--',os.environ.get('BAR_MCCL','/tmp/mccl_osu_barrierhack'),'-m','1:1','-i',str(it),'-x',str(it//10),'--json',f]
  subprocess.run(cmd,capture_output=True,timeout=300)
  try: v=json.loads(open(f).readline())['cycle_us']
  except Exception: v=float('nan')
  os.unlink(f); return v
with open(out,'a') as fo:
  for rep in range(reps):
    for impl in (['inline','thread','ompi'] if rep%2==0 else ['ompi','thread','inline']):
      v=run(impl); load=float(open('/proc/loadavg').read().split()[0])
      fo.write(json.dumps(dict(impl=impl,bench='barrier_only',cycle_us=v,rep=rep,load1=load))+'\n'); fo.flush()
      res.setdefault(impl,[]).append(v)
o=st.median(res['ompi'])
for impl in ('inline','thread','ompi'):
  a=res[impl]; print(f"{impl} {min(a):.0f}-{max(a):.0f} ({st.median(a):.1f}, {st.median(a)/o:.2f}x)")
