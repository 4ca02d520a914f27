import subprocess,sys,json,statistics as st,os,tempfile
# run.py OUT REPS N bench sizes(comma) iters config...   config = name or name=K=V,K=V ; 'ompi' for Open MPI
out,reps,n,bench,sizes,iters=sys.argv[1],int(sys.argv[2]),sys.argv[3],sys.argv[4],sys.argv[5].split(','),sys.argv[6]
cfgs=[]
for c in sys.argv[7:]:
  name,_,kv=c.partition('=')
  cfgs.append((name,[x for x in kv.split(',') if x]))
B='/work/main/build'
WHERE=os.environ.get('WHERE','loopback')
def one(name,kv,s):
  B='/work/main/build'
  if kv and kv[0].startswith('BUILD='):
    B=kv[0].split('=',1)[1]; kv=kv[1:]
  fd,f=tempfile.mkstemp(); os.close(fd); os.chmod(f,0o666)
  it=int(iters); x=str(max(1,it//10))
  if name=='ompi' and WHERE=='fabric':
    cmd=['timeout','300','/work/main/tests/fabric/launch.sh','--mpirun','--name','cy','--hosts',n,'--timeout','250','--','/tmp/cyc_lo/bin/mpi_coll_bench','-b',bench,'-m',f'{s}:{s}','-i',iters,'-x',x,'--json',f,'--impl','ompi-default']
    env=os.environ
  elif WHERE=='fabric':
    envs=[]
    for k in kv: envs+=['--env',k]
    cmd=['timeout','300','/work/main/tests/fabric/launch.sh','--name','cy','--hosts',n,'--timeout','250']+envs+['--',B+'/bench/osu/mccl_osu_'+bench,'-m',f'{s}:{s}','-i',iters,'-x',x,'--json',f]
    env=os.environ
  elif name=='ompi':
    cmd=['timeout','300','mpirun.openmpi','--allow-run-as-root','--oversubscribe','-np',n,'--mca','pml','ob1','--mca','btl','tcp,self','--mca','btl_tcp_if_include','lo','--mca','oob_tcp_if_include','lo','/tmp/cyc_lo/bin/mpi_coll_bench','-b',bench,'-m',f'{s}:{s}','-i',iters,'-x',x,'--json',f,'--impl','ompi-default']
    env=os.environ
  else:
    cmd=['timeout','300',B+'/tools/mccl_run','-n',n,B+'/bench/osu/mccl_osu_'+bench,'-m',f'{s}:{s}','-i',iters,'-x',x,'--json',f]
    env=dict(os.environ,MCCL_UDP_IFACE='lo',**dict(k.split('=',1) for k in kv))
  subprocess.run(cmd,env=env,capture_output=True)
  try: r=json.loads(open(f).readline()); v=(r['cycle_us'],r.get('p50_us',r.get('avg_us',0)))
  except Exception: v=(float('nan'),float('nan'))
  os.unlink(f); return v
res={}
with open(out,'a') as fo:
  for rep in range(reps):
    order=cfgs if rep%2==0 else list(reversed(cfgs))
    for s in sizes:
      for name,kv in order:
        c,p=one(name,kv,s)
        load=float(open('/proc/loadavg').read().split()[0])
        fo.write(json.dumps(dict(cfg=name,env=kv,ranks=int(n),bench=bench,bytes=int(s),cycle_us=c,rep=rep,load1=load))+'\n'); fo.flush()
        res.setdefault((s,name),[]).append(c)
for s in sizes:
  base=st.median(res[(s,'ompi')]) if (s,'ompi') in res else None
  for name,_ in cfgs:
    a=res[(s,name)]; m=st.median(a)
    print(f"n={n} {bench} {s}B {name:14s} {min(a):8.1f}-{max(a):8.1f} med {m:8.1f}" + (f"  x{m/base:.2f}" if base else ''))
