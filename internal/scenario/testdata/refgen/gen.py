# Developer tool (never run by CI): regenerates golden data from the reference.
# Run with SERVESIM_SHARED set to the shared folder and /usr/bin/python3 (numpy).
import os
"""Reference driver for servesim internal/scenario goldens (kept outside the repo)."""
import json, math, random, sys, os
from dataclasses import asdict
sys.path.insert(0, os.path.join(os.environ["SERVESIM_SHARED"], "reference"))
import seed001_scenarios as s

# usage: /usr/bin/python3 gen.py WORKTREE  (writes WORKTREE/internal/scenario/...)
ROOT = sys.argv[1]
OUT = os.path.join(ROOT, "internal/scenario/testdata")
OUT_RAND = os.path.join(ROOT, "internal/scenario/pyrand/testdata")
os.makedirs(OUT, exist_ok=True)
os.makedirs(OUT_RAND, exist_ok=True)

# --- MT19937 streams ---
seeds = [0, 1, 42, -42, 2**32 - 1, 2**32, 2**64 + 1, 12345678901234567890123456789]
streams = []
for seed in seeds:
    r = random.Random(seed)
    raw = [r.getrandbits(32) for _ in range(8)]
    r = random.Random(seed)
    vals = [repr(r.random()) for _ in range(700)]
    streams.append({"seed": str(seed), "uint32": raw, "random": vals})
expo = []
for seed, lambd in [(42, 8.5 / 1000.0), (7, 15.0 / 1000.0), (0, 1.0)]:
    r = random.Random(seed)
    expo.append({"seed": str(seed), "lambd": repr(lambd),
                 "values": [repr(r.expovariate(lambd)) for _ in range(1000)]})
with open(os.path.join(OUT_RAND, "python_streams.json"), "w") as f:
    json.dump({"generator": "CPython %s random.Random" % sys.version.split()[0],
               "streams": streams, "expovariate": expo}, f, indent=1)
    f.write("\n")

# --- agent traces and evaluations ---
custom_profiles = [
    s.EngineProfile("single_slot", 12.5, 0.0, 30.0, 0.0, 1),
    s.EngineProfile("full_cache", 40.0, 1.0, 10.0, 1.25, 4),
    s.EngineProfile("wide", 55.5, 0.75, 14.2, 0.33, 64),
]
builtin = list(s.SCENARIO_PROFILES.values())

def summaries(trace, profiles, workload, ttft, tpot, closed):
    return [asdict(s.evaluate_engine_benchmark(trace, p, workload_name=workload,
                                               ttft_slo_ms=ttft, tpot_slo_ms=tpot,
                                               closed_loop=closed)) for p in profiles]

traces = {}
cases = []
grid = [
    # (requests, seed, rps)
    (80, 42, 8.5), (80, 0, 8.5), (80, 1, 2.0), (80, 7, 15.0), (500, 42, 8.5),
    (500, 123456789, 40.0), (1, 5, 8.5), (10, -42, 3.0), (200, 2**64 + 1, 25.0),
    (300, 12345678901234567890123456789, 0.5),
]
slos = [(500.0, 35.0), (250.0, 20.0), (2000.0, 60.0)]
for n, seed, rps in grid:
    trace = s.build_agent_trace(num_requests=n, seed=seed, mean_rps=rps)
    key = "%d/%s/%r" % (n, seed, rps)
    traces[key] = {"requests": n, "seed": str(seed), "rps": rps,
                   "arrivals_ms": [r.arrival_ms for r in trace]}
    for i, (ttft, tpot) in enumerate(slos):
        for closed in (False, True):
            for pname, profiles in (("builtin", builtin), ("custom", custom_profiles)):
                if pname == "custom" and i == 2:
                    continue
                cases.append({"requests": n, "seed": str(seed), "rps": rps,
                              "ttft_slo_ms": ttft, "tpot_slo_ms": tpot, "closed_loop": closed,
                              "profiles": pname,
                              "summaries": summaries(trace, profiles, "agent-shared-prefix", ttft, tpot, closed)})

# --- Azure trace replay (first 200 rows of the code trace) ---
def parse_ns(ts):
    """Nanoseconds since 0001-01-01 of a TIMESTAMP, truncated to whole microseconds."""
    date, clock = ts.strip().split(" ")
    y, mo, d = (int(x) for x in date.split("-"))
    hh, mm, rest = clock.split(":")
    if "." in rest:
        sec, frac = rest.split(".")
    else:
        sec, frac = rest, ""
    import datetime
    days = datetime.date(y, mo, d).toordinal()
    whole = ((days * 24 + int(hh)) * 60 + int(mm)) * 60 + int(sec)
    # Python's datetime keeps microseconds: a 7th fractional digit is
    # truncated (as datetime.fromisoformat in the reference's seed003 loader).
    return whole * 10**9 + int((frac + "000000")[:6]) * 1000

rows = []
with open(os.path.join(os.environ["SERVESIM_SHARED"], "data", "azure2023", "AzureLLMInferenceTrace_code.csv"), newline="") as f:
    lines = f.read().splitlines()
header = lines[0].split(",")
assert header == ["TIMESTAMP", "ContextTokens", "GeneratedTokens"], header
for line in lines[1:201]:
    ts, ctx, gen = line.split(",")
    rows.append((parse_ns(ts), int(ctx), int(gen)))
t0 = rows[0][0]
trace_cases = []
for prefix in (0, 512, 2048):
    trace = [s.WorkloadRequest(f"req-{i:03d}", (ns - t0) / 1_000_000, min(prefix, ctx), ctx - min(prefix, ctx), gen)
             for i, (ns, ctx, gen) in enumerate(rows)]
    for closed in (False, True):
        for ttft, tpot in slos[:2]:
            trace_cases.append({"rows": 200, "shared_prefix_tokens": prefix, "closed_loop": closed,
                                "ttft_slo_ms": ttft, "tpot_slo_ms": tpot,
                                "summaries": summaries(trace, builtin, "AzureLLMInferenceTrace_code.csv", ttft, tpot, closed)})
first = [(ns - t0) / 1_000_000 for ns, _, _ in rows]

import hashlib, struct
large = []
for rps in (8.5, 3.0):
    large_trace = s.build_agent_trace(num_requests=100000, seed=42, mean_rps=rps)
    large.append({"requests": 100000, "seed": "42", "rps": rps,
                  "arrivals_sha256": hashlib.sha256(b"".join(struct.pack("<d", r.arrival_ms) for r in large_trace)).hexdigest(),
                  "summaries": summaries(large_trace, builtin, "agent-shared-prefix", 500.0, 35.0, False)
                               + summaries(large_trace, builtin[:1], "agent-shared-prefix", 500.0, 35.0, True)})

with open(os.path.join(OUT, "reference_cases.json"), "w") as f:
    json.dump({"generator": "seed001_scenarios.py via an external driver, CPython %s" % sys.version.split()[0],
               "custom_profiles": [asdict(p) for p in custom_profiles],
               "traces": list(traces.values()), "cases": cases, "large_100k": large,
               "azure_code_first200": {"arrivals_ms": first, "cases": trace_cases}}, f, indent=1)
    f.write("\n")
print(len(cases), "agent cases,", len(trace_cases), "trace cases")
