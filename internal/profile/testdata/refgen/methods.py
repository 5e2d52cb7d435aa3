"""Development tool (CI never runs it; the project needs no Python).

Record PerformanceProfile's methods (rate, power, quantize_clock, the
realized-clock lookups, the SLOs) on a few profiles, for profile_test.go.

usage: methods.py BUNDLES_DIR OUT_JSON
(BUNDLES_DIR as written by TestWriteBundles; the shared profiles come from
$SERVESIM_SHARED.)
"""
import json, os, sys
shared = os.environ.get("SERVESIM_SHARED", "../shared")
sys.path.insert(0, os.path.join(shared, "reference"))
import seed003_plant as plant

root, out = sys.argv[1], sys.argv[2]
profiles = {
    "reference_l4_synthetic": os.path.join(shared, "reference/data/l4_synthetic/l4_profile.csv"),
    "l4_measured_aggregate": os.path.join(shared, "data/l4_measured_aggregate/l4_profile.csv"),
    "synthetic_measured": os.path.join(root, "valid_crlf/l4_profile.csv"),
    "synthetic_raw_proxy": os.path.join(root, "raw_schema_as_proxy/l4_profile.csv"),
}
result = {}
for name, path in profiles.items():
    p = plant.load_profile(path)
    lo, hi = float(p.clock_mhz[0]), float(p.clock_mhz[-1])
    clocks = sorted({lo - 100.0, lo, hi, hi + 100.0, 0.0}
                    | {float(c) + d for c in p.clock_mhz for d in (-0.5, 0.0, 1e-13, 7.25)}
                    | {lo + (hi - lo) * k / 7 for k in range(8)})
    rows = []
    for c in clocks:
        row = {"clock": c}
        for phase in ("prefill", "decode", "idle", "interleaved"):
            row["rate_" + phase] = p.rate(phase, c)
            row["power_" + phase] = p.power(phase, c)
        row["quantize_down"] = p.quantize_clock(c)
        row["quantize_nearest"] = p.quantize_clock(c, downward=False)
        rows.append(row)
    result[name] = {
        "points": rows,
        "realized_levels": [float(x) for x in p.realized_clock_levels_mhz],
        "realized_for_level": [p.realized_clock_for_level(float(c)) for c in p.clock_mhz],
        "min_realized": p.minimum_realized_clock_mhz,
        "ttft_slo_s": p.ttft_slo_s,
        "tpot_slo_s": p.tpot_slo_s,
        "is_measured": p.is_measured,
    }
with open(out, "w") as fh:
    json.dump(result, fh, indent=1)
    fh.write("\n")
print(len(result), "profiles")
