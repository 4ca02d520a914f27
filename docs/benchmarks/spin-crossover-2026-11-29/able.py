import subprocess,sys,json,statistics as st,os,tempfile
# able.py OUT REPS N bench size iters VARIANT... ; VARIANT name:K=V,K=V ; loopback (mccl_run), cycle_us
out,reps,n,b,s,it=sys.argv[1],int(sys.argv[2]),sys.argv[3],sys.argv[4],sys.argv[5],sys.argv[6]; vs=sys.argv[7:]; res={}
B='/work/main/build'
def run(v):
  name,_,kv=v.partition(':'); env=dict(os.environ,MCCL_UDP_IFACE='lo')
  for e in [x for x in kv.split(',') if x]: k,_,val=e.partition('='); env[k]=val
  f=tempfile.mktemp(dir='/tmp')
  subprocess.run(['timeout','300',f'{B}/tools/mccl_run','-n',n,f'{B}/bench/osu/mccl_osu_{b}','-m',f'{s}:{s}','-i',it,'-x',str(max(1,int(it)//10)),'--json',f],env=env,capture_output=True)
  try: r=json.loads(open(f).readline()); os.unlink(f); return r['cycle_us']
  except Exception: return float('nan')
with open(out,'a') as fo:
  for rep in range(reps):
    for v in (vs if rep%2==0 else vs[::-1]):
      c=run(v); load=float(open('/proc/loadavg').read().split()[0])
      fo.write(json.dumps(dict(variant=v,ranks=int(n),bench=b,bytes=int(s),cycle_us=c,rep=rep,load1=load))+'\n'); fo.flush()
      res.setdefault(v,[]).append(c)
for v in vs:
  a=res[v]; print(f"n={n} {b} {s} {v:45s} {min(a):.0f}-{max(a):.0f} (median {st.median(a):.1f})")
