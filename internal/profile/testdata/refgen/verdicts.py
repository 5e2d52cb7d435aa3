"""Development tool (CI never runs it; the project needs no Python).

Run seed003_plant.load_profile on every bundle TestWriteBundles wrote.

usage: verdicts.py BUNDLES_DIR OUT_JSON [INDEX_JSON]
BUNDLES_DIR/index.json maps each bundle's name to its profile CSV, relative to
BUNDLES_DIR. INDEX_JSON replaces that index (the shared profiles use
testdata/refgen/shared_index.json with BUNDLES_DIR = $SERVESIM_SHARED).
"""
import json, sys, math
import os
sys.path.insert(0, os.path.join(os.environ.get("SERVESIM_SHARED", "../shared"), "reference"))
import seed003_plant as plant

root, out = sys.argv[1], sys.argv[2]
index_path = sys.argv[3] if len(sys.argv) > 3 else f"{root}/index.json"
index = json.load(open(index_path))
result = {}
for name in sorted(index):
    path = f"{root}/{index[name]}"
    try:
        p = plant.load_profile(path)
    except Exception as e:  # the verdict: any exception rejects
        result[name] = {"valid": False, "error_type": type(e).__name__, "error": str(e).replace(root.rstrip("/") + "/", "<dir>/")}
        continue
    f = lambda a: [float(x) for x in a]
    result[name] = {
        "valid": True,
        "profile_status": p.profile_status,
        "measurement_validated": bool(p.measurement_validated),
        "source_label": p.source_label,
        "clock_mhz": f(p.clock_mhz),
        "prefill_tokens_per_s": f(p.prefill_tokens_per_s),
        "decode_tokens_per_s": f(p.decode_tokens_per_s),
        "idle_power_w": f(p.idle_power_w),
        "prefill_power_w": f(p.prefill_power_w),
        "decode_power_w": f(p.decode_power_w),
        "realized_clock_levels_mhz": f(p.realized_clock_levels_mhz),
        "baseline_ttft_s": p.baseline_ttft_s,
        "baseline_tpot_s": p.baseline_tpot_s,
        "profile_csv_sha256": p.profile_csv_sha256,
        "manifest_sha256": p.manifest_sha256,
    }
with open(out, "w") as fh:
    json.dump(result, fh, indent=1, sort_keys=True, allow_nan=False)
    fh.write("\n")
print(f"{len(result)} bundles, {sum(v['valid'] for v in result.values())} load")
