import subprocess,sys,json,statistics as st,tempfile,os
# loopab.py OUT REPS bench size iters: MCCL with IP_MULTICAST_LOOP on (default) and off (TMP_NOLOOP), cluster cy, 4 hosts
out,reps,b,size,it=sys.argv[1],int(sys.argv[2]),sys.argv[3],sys.argv[4],int(sys.argv[5]); res={}
L='/work/main/tests/fabric/launch.sh'
def run(v):
  f=tempfile.mktemp(dir='/tmp'); open(f,'w').close(); os.chmod(f,0o666)
  cmd=[L,'--name','cy','--hosts','4','--timeout','250']+(['--env','TMP_NOLOOP=1'] if v=='off' else [])+['--',f'/work/main/build/bench/osu/mccl_osu_{b}','-m',f'{size}:{size}','-i',str(it),'-x',str(max(1,it//10)),'--json',f]
  subprocess.run(cmd,capture_output=True,timeout=300)
  try: r=json.loads(open(f).readline()); v2=(r['cycle_us'],r['p50_max_us'])
  except Exception: v2=(float('nan'),)*2
  os.unlink(f); return v2
with open(out,'a') as fo:
  for rep in range(reps):
    for v in (['on','off'] if rep%2==0 else ['off','on']):
      c,p=run(v); load=float(open('/proc/loadavg').read().split()[0])
      fo.write(json.dumps(dict(loop=v,bench=b,bytes=int(size),cycle_us=c,p50_max_us=p,rep=rep,load1=load))+'\n'); fo.flush()
      res.setdefault(v,[]).append(c)
for v in ('on','off'):
  a=res[v]; print(f"{b} {size} loop {v}: cycle {min(a):.0f}-{max(a):.0f} (median {st.median(a):.1f})")
