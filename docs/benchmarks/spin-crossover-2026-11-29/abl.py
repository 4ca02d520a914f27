import subprocess,sys,json,statistics as st,os,tempfile
# abl.py OUT REPS ENGINE case... ; case = N:bench:size:iters ; base vs new on loopback (mccl_run), cycle_us
out,reps,engine=sys.argv[1],int(sys.argv[2]),sys.argv[3]
builds={'base':'/tmp/base/build','new':'/work/main/build'}
cases=[c.split(':') for c in sys.argv[4:]]; res={}
def run(B,n,b,s,it):
  f=tempfile.mktemp(dir='/tmp')
  env=dict(os.environ,MCCL_UDP_IFACE='lo',MCCL_PROGRESS=engine)
  subprocess.run(['timeout','300',f'{B}/tools/mccl_run','-n',n,f'{B}/bench/osu/mccl_osu_{b}','-m',f'{s}:{s}','-i',it,'-x',str(max(1,int(it)//10)),'--json',f],env=env,capture_output=True)
  try: r=json.loads(open(f).readline()); os.unlink(f); return r['cycle_us']
  except Exception: return float('nan')
with open(out,'a') as fo:
  for rep in range(reps):
    for (n,b,s,it) in cases:
      for name in (['base','new'] if rep%2==0 else ['new','base']):
        v=run(builds[name],n,b,s,it); load=float(open('/proc/loadavg').read().split()[0])
        fo.write(json.dumps(dict(build=name,engine=engine,ranks=int(n),bench=b,bytes=int(s),cycle_us=v,rep=rep,load1=load))+'\n'); fo.flush()
        res.setdefault((n,b,s,name),[]).append(v)
for (n,b,s,it) in cases:
  a=res[(n,b,s,'base')]; c=res[(n,b,s,'new')]
  print(f"{engine} n={n} {b} {s}B: base {min(a):.1f}-{max(a):.1f} ({st.median(a):.1f})  new {min(c):.1f}-{max(c):.1f} ({st.median(c):.1f})  ratio {st.median(c)/st.median(a):.2f}")
