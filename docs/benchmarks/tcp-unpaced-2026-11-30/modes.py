import subprocess,sys,json,tempfile,os,statistics as st
# modes.py OUT REPS: 2 hosts of cluster cy, broadcast and allgather cycles (1 byte, or SIZE), MCCL inline against
# Open MPI, ranks pinned by pin.sh (CPU = rank, or PIN_CPU for every rank), RPS masks fixed per
# configuration (rps_cpus of h0's and h1's veth0 and of the bridge ports cys0, cys1: 1 = CPU 0, 2 = CPU 1).
# env: PIN_CPU (every rank on this CPU), CONFS (a JSON object of configurations; default the four below),
# MCCL_VARIANTS (a JSON object: name -> list of K=V for MCCL's ranks; default {"mccl": []}), MPI_BENCH,
# SIZE (bytes per rank, default 1)
L='/work/main/tests/fabric/launch.sh'; out,reps=sys.argv[1],int(sys.argv[2])
def rps(ns,dev,mask): subprocess.run(['ip','netns','exec',ns,'sh','-c',f'echo {mask} > /sys/class/net/{dev}/queues/rx-0/rps_cpus'],check=True)
confs=json.loads(os.environ['CONFS']) if 'CONFS' in os.environ else {'own':dict(h0=1,h1=2,s0=1,s1=2),'other':dict(h0=2,h1=1,s0=2,s1=1),'all0':dict(h0=1,h1=1,s0=1,s1=1),'all1':dict(h0=2,h1=2,s0=2,s1=2)}
def run(impl,b):
  f=tempfile.mktemp(dir='/tmp'); open(f,'w').close(); os.chmod(f,0o666)
  if impl=='ompi': cmd=[L,'--mpirun','--name','cy','--hosts','2','--timeout','100']+pin+['--mpirun-arg','--bind-to','--mpirun-arg','none','--',PIN_SH,os.environ.get('MPI_BENCH','/tmp/mpi_coll_bench'),'-b',b,'-m',f'{SIZE}:{SIZE}','-i','3000','-x','300','--json',f,'--impl','ompi-default']
  else: cmd=[L,'--name','cy','--hosts','2','--timeout','100']+[a for kv in variants[impl] for a in ('--env',kv)]+pin+['--',PIN_SH,'/work/main/build/bench/osu/mccl_osu_'+b,'-m',f'{SIZE}:{SIZE}','-i','3000','-x','300','--json',f]
  subprocess.run(cmd,capture_output=True,timeout=120)
  try: v=json.loads(open(f).readline())['cycle_us']
  except Exception: v=float('nan')
  os.unlink(f); return v
PIN_SH=os.path.join(os.path.dirname(os.path.abspath(__file__)),'pin.sh')
pin=['--env','PIN_CPU='+os.environ['PIN_CPU']] if 'PIN_CPU' in os.environ else []
SIZE=os.environ.get('SIZE','1'); variants=json.loads(os.environ.get('MCCL_VARIANTS','{"mccl": []}')); impls=list(variants)+['ompi']
res={}
with open(out,'a') as fo:
  for rep in range(reps):
    for c,m in confs.items():
      rps('cy-h0','veth0',m['h0']); rps('cy-h1','veth0',m['h1']); rps('cy-sw','cys0',m['s0']); rps('cy-sw','cys1',m['s1'])
      for b in ('bcast','allgather'):
        for impl in (impls if rep%2==0 else impls[::-1]):
          v=run(impl,b); fo.write(json.dumps(dict(conf=c,bench=b,impl=impl,cycle_us=v,rep=rep))+'\n'); fo.flush()
          res.setdefault((c,b,impl),[]).append(v)
for k in sorted(res): print(k, ' '.join('%.0f'%x for x in res[k]))
