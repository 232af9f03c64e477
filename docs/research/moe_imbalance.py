import math, json, random
G={1:0.0,2:0.5642,4:1.0294,8:1.4236,16:1.7660,32:2.0697,64:2.3362,128:2.5816,256:2.7940}
def g(n):
    if n in G: return G[n]
    # Blom-type approximation
    from statistics import NormalDist
    return NormalDist().inv_cdf((n-0.375)/(n+0.25))
def forced(T,k,ep,E):
    mu=T*k; var=T*k*(1-1/ep)*(E-k)/(E-1)
    return math.sqrt(var)/mu
def learned(T,k,ep,E,maxvio,E_ref=64):
    s=maxvio/g(E_ref); skew=s/math.sqrt(E/ep)
    return math.sqrt(skew**2+forced(T,k,ep,E)**2)
d=json.load(open('../shared/validation/moe-and-accelerators.json'))
print(f"{'case':58s} T/rank  ep   E  k  rows/exp  forced   lossfree(0.04)  aux(0.52)")
for c in d['cases']:
    s=c['scenario']; m=s['model']
    if 'moe' not in json.dumps(m): continue
    moe=m.get('moe',{}); E=moe.get('experts',8); k=moe.get('top_k',2)
    p=s['parallelism']; tp=p.get('tp',1); cp=p.get('cp',1); ep=p.get('ep',1) or 1
    T=s['training']['micro_batch']*s['training']['seq_len']//(tp*cp)
    if ep<=1: print(f"{c['id']:58s} ep=1"); continue
    rows=T*k*ep/E
    f=forced(T,k,ep,E)*g(ep); lf=learned(T,k,ep,E,0.04)*g(ep); al=learned(T,k,ep,E,0.52)*g(ep)
    print(f"{c['id'][:58]:58s} {T:6d} {ep:4d} {E:4d} {k:2d} {rows:8.0f}  {1+f:.4f}   {1+lf:.4f}          {1+al:.3f}")
# Monte Carlo check of forced formula on a small case
random.seed(1)
T,k,ep,E=512,8,16,128
trials=30; ex=[]
for _ in range(trials):
    load=[0]*ep
    for src in range(ep):
        for t in range(T):
            for e in random.sample(range(E),k): load[e*ep//E]+=1
    ex.append(max(load)/(T*k))
print("MC forced T=512,k=8,ep=16,E=128: mean max/mean =", sum(ex)/trials, " formula:", 1+forced(T,k,ep,E)*g(ep))
