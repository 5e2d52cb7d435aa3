# Developer tool (never run by CI): regenerates golden data from the reference.
# Run with SERVESIM_SHARED set to the shared folder and /usr/bin/python3 (numpy).
import os
"""Generate golden cases for internal/diagnose from the reference seed000."""
import io, json, math, random, sys, contextlib
sys.path.insert(0, os.path.join(os.environ["SERVESIM_SHARED"], "reference"))
import seed000_diagnose as d
from dataclasses import asdict

rng = random.Random(20261129)

def rand_float(kind):
    r = rng.random()
    if kind == "ms":
        c = rng.randrange(6)
        if c == 0: return 0.0
        if c == 1: return round(rng.uniform(0, 50), rng.randrange(1, 4))
        if c == 2: return rng.uniform(0, 20000)
        if c == 3: return rng.randrange(0, 100000) / 20.0   # many exact halves at 1 decimal
        if c == 4: return rng.expovariate(1/300.0)
        return rng.uniform(0, 1e6) if r < 0.5 else rng.randrange(0, 5000) * 0.05
    if kind == "kv":
        c = rng.randrange(5)
        if c == 0: return 95.0
        if c == 1: return 100.0
        if c == 2: return round(rng.uniform(60, 100), 1)
        return rng.uniform(0, 100)
    raise ValueError(kind)

def rand_log(i, profile):
    prompt = rng.choice([1, 2, rng.randrange(1, 100), rng.randrange(1, 9000), 4096])
    out = rng.choice([1, 1, 2, rng.randrange(1, 50), rng.randrange(1, 2000)])
    cached = rng.choice([0, prompt, rng.randrange(0, prompt + 1)])
    pre = rng.random() < profile["preempt"]
    return d.RequestLog(
        request_id=f"r{i}",
        prompt_tokens=prompt,
        output_tokens=out,
        queue_wait_ms=rand_float("ms") * profile["queue_scale"],
        prefill_ms=rand_float("ms"),
        decode_tpot_ms=rand_float("ms") / 100.0,
        preempted=pre,
        recompute_penalty_ms=rand_float("ms") if pre else (0.0 if rng.random() < 0.8 else rand_float("ms")),
        prefix_cached_tokens=cached,
        kv_occupancy_pct_at_arrival=rand_float("kv") * profile["kv_scale"],
    )

def log_row(r):
    return [r.request_id, r.prompt_tokens, r.output_tokens, r.queue_wait_ms, r.prefill_ms,
            r.decode_tpot_ms, r.preempted, r.recompute_penalty_ms, r.prefix_cached_tokens,
            r.kv_occupancy_pct_at_arrival]

cases = []
for k in range(120):
    n = rng.choice([1, 2, 3, rng.randrange(1, 20), rng.randrange(1, 120), rng.randrange(100, 400)])
    profile = {"preempt": rng.choice([0.0, 0.0, 0.05, 0.5]),
               "queue_scale": rng.choice([0.0, 1.0, 10.0]),
               "kv_scale": rng.choice([0.5, 0.9, 1.0])}
    logs = [rand_log(i, profile) for i in range(n)]
    gpu = rng.choice([4.0, 4.0, 2.5, rng.uniform(0.1, 40)])
    conc = rng.choice([32.0, 32.0, 1.0, rng.uniform(0.5, 256)])
    snap = d.diagnose_p99_spike(f"case-{k}", logs, gpu_hourly_cost_usd=gpu, effective_concurrency=conc)
    cases.append({"window": f"case-{k}", "gpu_hourly_cost_usd": gpu, "effective_concurrency": conc,
                  "logs": [log_row(r) for r in logs], "snapshot": asdict(snap)})

percentiles = []
for k in range(300):
    n = rng.choice([1, 2, 5, rng.randrange(1, 50), rng.randrange(1, 1000)])
    vals = [rng.uniform(-1e4, 1e4) if rng.random() < 0.5 else float(rng.randrange(-50, 50)) for _ in range(n)]
    q = rng.choice([50.0, 95.0, 99.0, 0.0, 100.0, rng.uniform(0, 100), float(rng.randrange(0, 101))])
    percentiles.append({"values": vals, "q": q, "want": d.percentile(vals, q)})

rounds = []
for k in range(3000):
    c = rng.randrange(5)
    if c == 0: x = rng.randrange(-100000, 100000) / 20.0
    elif c == 1: x = rng.randrange(-10**7, 10**7) / 2000.0
    elif c == 2: x = rng.uniform(-1e5, 1e5)
    elif c == 3: x = rng.randrange(0, 10**6) * 0.005
    else: x = rng.uniform(0, 30) / rng.uniform(0.1, 3)
    nd = rng.choice([1, 2, 4])
    rounds.append([x, nd, round(x, nd)])

buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    d.main()
demo = json.loads(buf.getvalue())

json.dump({"generator": "reference seed000_diagnose.py (Python %s), internal/diagnose/testdata/refgen/gen.py" % sys.version.split()[0],
           "demo": demo, "snapshots": cases, "percentiles": percentiles, "rounds": rounds},
          sys.stdout, separators=(",", ":"))
