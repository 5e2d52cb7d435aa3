# Developer tool (never run by CI): writes the two request logs of issue 30,
# item 10, under testdata/logs, small versions of what simulate --request-log
# writes for the misleading cases: run with python3 from internal/diagnose.
#
# overload.csv: one GPU, no prefix cache. Prefills run one at a time at 2000
# tokens/s; requests arrive at 3/s for 120 s (1.5 times what the prefills
# can take), then at 0.2/s for a minute while the backlog drains. Nearly all
# of the p99 TTFT is queue wait; the seed's rules say
# cold_prefix_cache_miss_burst (hit rate 0%, p99 TTFT above 1 s).
#
# long_prompt_fleet.csv: four replicas (a replica column), light load (4
# requests/s, a few ms of queue), no prefix cache; 5 of the 400 requests
# (the slow 1%) have 4600-token prompts that prefill for 2.8 s after 0.16 s
# of queue. The seed's rules say head_of_line_prefill_queue_blocking (p99
# TTFT above 5 x p50, no preemption).
import csv
import os

HEADER = ["request_id", "arrival_s", "prompt_tokens", "output_tokens", "queue_wait_ms", "prefill_ms",
          "decode_tpot_ms", "preempted", "recompute_penalty_ms", "prefix_cached_tokens",
          "kv_occupancy_pct_at_arrival"]


def overload():
    rows = []
    arrivals = [i / 3.0 for i in range(360)] + [120 + 5.0 * i for i in range(12)]
    prefill_free = 0.0  # when the one prefill slot is free, s
    for i, at in enumerate(arrivals):
        prompt = 600 + (i * 37) % 800
        prefill_s = prompt / 2000.0
        start = max(at, prefill_free)
        prefill_free = start + prefill_s
        rows.append([f"o{i}", round(at, 6), prompt, 20 + i % 40, round((start - at) * 1000, 3),
                     round(prefill_s * 1000, 3), 12.5, "false", 0, 0, round(20 + (i % 30) * 0.5, 1)])
    return rows


def long_prompt_fleet():
    rows = []
    slow = {79, 159, 239, 319, 399}
    for i in range(400):
        at = i * 0.25
        if i in slow:
            prompt, queue_ms, prefill_ms = 4600, 160.0, 2800.0
        else:
            prompt = 300 + (i * 53) % 400
            queue_ms, prefill_ms = float(i % 7) * 9.0, round(prompt * 0.6, 3)
        rows.append([f"f{i}", at, prompt, 30 + i % 50, queue_ms, prefill_ms, 14.0, "false", 0, 0,
                     round(30 + (i % 20), 1), i % 4])
    return rows


def write(name, header, rows):
    with open(os.path.join("testdata", "logs", name), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


write("overload.csv", HEADER, overload())
write("long_prompt_fleet.csv", HEADER + ["replica"], long_prompt_fleet())
