def gqa(h,heads,kv,hd,bias=False):
    p = h*heads*hd + 2*h*kv*hd + heads*hd*h
    if bias: p += heads*hd + 2*kv*hd + h
    return p
def swiglu(h,f,bias=False):
    return 3*h*f + ((2*f+h) if bias else 0)
def report(name, total, active, pub):
    print(f"{name:18s} total {total/1e9:8.2f}B  active {active/1e9:7.2f}B   published {pub}")
# DeepSeek-V3
h=7168; V=129280
mla = h*1536+1536 + 1536*128*(128+64) + h*(512+64) + 512 + 512*128*(128+128) + 128*128*h
norms=2*h
dense = swiglu(h,18432)
expert = swiglu(h,2048)
router = 256*h+256
moe_total = router + 256*expert + expert
moe_act = router + 8*expert + expert
L=61; Ld=3; Lm=L-Ld
emb=V*h; head=V*h
tot = emb+head + L*(mla+norms) + Ld*dense + Lm*moe_total + h
act = emb+head + L*(mla+norms) + Ld*dense + Lm*moe_act + h
mtp = 2*h*h + 2*h + (mla+norms) + moe_total + h  # eh_proj, enorm,hnorm, block, final norm (shared emb/head)
report("deepseek-v3", tot, act, "671B total / 37B active (paper 4.2); HF 685B incl. 14B MTP")
print("   MTP module", mtp/1e9, "B; total incl MTP", (tot+mtp)/1e9, " active w/o emb", (act-emb)/1e9, "active w/o emb+head", (act-emb-head)/1e9)
# Qwen3-30B-A3B
def qwen(L,h,heads,kv,hd,E,k,f,V):
    att = gqa(h,heads,kv,hd) + 2*hd  # q_norm,k_norm
    ex = swiglu(h,f); r=E*h
    t = 2*V*h + L*(att+2*h + r + E*ex) + h
    a = 2*V*h + L*(att+2*h + r + k*ex) + h
    return t,a
t,a=qwen(48,2048,32,4,128,128,8,768,151936); report("qwen3-30b-a3b",t,a,"30.5B total / 3.3B activated (HF model card)")
t,a=qwen(94,4096,64,4,128,128,8,1536,151936); report("qwen3-235b-a22b",t,a,"235B total / 22B activated (HF model card)")
# gpt-oss
def oss(L,E,k,h=2880,heads=64,kv=8,hd=64,f=2880,V=201088):
    att = gqa(h,heads,kv,hd,bias=True) + heads  # sinks
    ex = swiglu(h,f,bias=True); r=E*h+E
    t = 2*V*h + L*(att+2*h+r+E*ex) + h
    a = 2*V*h + L*(att+2*h+r+k*ex) + h
    return t,a
t,a=oss(36,128,4); report("gpt-oss-120b",t,a,"116.83B total / 5.13B active (model card Table 1)"); print("   active excl. embedding", (a-201088*2880)/1e9)
t,a=oss(24,32,4); report("gpt-oss-20b",t,a,"20.91B total / 3.61B active (model card Table 1)"); print("   active excl. embedding", (a-201088*2880)/1e9)
# Llama 4 Maverick
h=5120; V=202048
att=gqa(h,40,8,128); ex=swiglu(h,8192); dense=swiglu(h,16384); r=128*h
t = 2*V*h + 48*(att+2*h) + 24*dense + 24*(r+128*ex+ex) + h
a = 2*V*h + 48*(att+2*h) + 24*dense + 24*(r+1*ex+ex) + h
report("llama4-maverick",t,a,"400B total / 17B active (Meta model card; incl. vision encoder?)")
# Mixtral 8x22B
h=6144
for V in (32000,32768):
    att=gqa(h,48,8,128); ex=swiglu(h,16384); r=8*h
    t = 2*V*h + 56*(att+2*h+r+8*ex) + h
    a = 2*V*h + 56*(att+2*h+r+2*ex) + h
    report(f"mixtral-8x22b V{V}",t,a,"141B total / 39B active (Mistral announcement)")
print("---- DeepSeek-V3 per-token training FLOPs (seq 4096) ----")
h=7168; V=129280; s=4096
mla = h*1536 + 1536*128*(128+64) + h*(512+64) + 512*128*(128+128) + 128*128*h
expert = 3*h*2048; router=256*h
dense = 3*h*18432
mm_main = 61*mla + 3*dense + 58*(router + 9*expert) + V*h   # matmul params touched per token (incl. head)
attn_fwd_per_layer = 2*s*128*(192+128)/2   # causal half, QK^T + AV, per token
main = 6*mm_main + 3*61*attn_fwd_per_layer
mtp = 6*(2*h*h + mla + router + 9*expert + V*h) + 3*attn_fwd_per_layer
print(f"main model {main/1e9:.1f} GFLOP/token, MTP {mtp/1e9:.1f}, total {(main+mtp)/1e9:.1f}")
tps = 1e12/(180e3*3600)
print(f"180K GPUh/T -> {tps:.0f} tokens/s/GPU; model TFLOP/s/GPU main {tps*main/1e12:.0f}, incl MTP {tps*(main+mtp)/1e12:.0f}; MFU vs 989.4 bf16 {tps*main/989.4e12:.3f}, vs 1978.9 fp8 {tps*main/1978.9e12:.3f}")
