"""servesim --controller exec: the built-in reactive controller, re-implemented."""
import json, sys
for line in sys.stdin:  # one observation per control decision
    obs = json.loads(line)
    clocks = obs["clock_levels_mhz"]
    observed = obs["realized_clock_levels_mhz"] or clocks
    prev = min(range(len(observed)), key=lambda i: abs(observed[i] - obs["previous_clock_mhz"]))
    pressure = obs["prefill_queue"] + 2 * obs["decode_active"]
    if obs["temperature_c"] >= 72.0:
        prev = max(0, prev - 1)
    elif pressure >= 8 or obs["oldest_prefill_age_s"] >= 1.0:
        prev = min(len(clocks) - 1, prev + 1)
    elif pressure <= 1:
        prev = max(0, prev - 1)
    print(json.dumps({"clock_mhz": clocks[prev]}), flush=True)  # one answer line each
