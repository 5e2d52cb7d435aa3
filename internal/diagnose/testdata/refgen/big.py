# Developer tool (never run by CI): regenerates golden data from the reference.
# Run with SERVESIM_SHARED set to the shared folder and /usr/bin/python3 (numpy).
import os
import sys, csv, json
sys.path.insert(0, os.path.join(os.environ["SERVESIM_SHARED"], "reference"))
import seed000_diagnose as d
from dataclasses import asdict
logs = []
for r in csv.DictReader(open(sys.argv[1], newline="")):
    logs.append(d.RequestLog(r["request_id"], int(r["prompt_tokens"]), int(r["output_tokens"]), float(r["queue_wait_ms"]), float(r["prefill_ms"]), float(r["decode_tpot_ms"]), r["preempted"].lower() in ("true", "1"), float(r["recompute_penalty_ms"]), int(r["prefix_cached_tokens"]), float(r["kv_occupancy_pct_at_arrival"])))
print(json.dumps(asdict(d.diagnose_p99_spike(sys.argv[2], logs))))
