#!/bin/sh
# bench-table.sh: turn `go test -bench -benchmem` output (stdin) into the
# Markdown table of docs/BENCHMARKS.md, headed by the machine and commit.
set -eu
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no -- . ':!docs/BENCHMARKS.md' 2>/dev/null)" ]; then
	commit="$commit (with uncommitted changes)"
fi
cat <<HEAD
# Benchmarks

Written by \`make bench\`; do not edit. The size-tier benchmarks (\`go test -bench Tiers
-benchmem\` in internal/plant and internal/fleet) on synthetic code-like traces of about 1,000,
10,000 and 100,000 requests, so that they need no shared data: simulate on one GPU (embedded proxy
profile, chunked prefill, reactive clock, summary only), reading the trace as an Azure CSV, and a
fleet of 8 replicas with a state-free router (round-robin: replicas in parallel) and a
state-aware one (least-outstanding: lock-step). \`SimulateBatchedTiers\` is the one-GPU run under
\`--service-model batched\` (L4 and Qwen2.5-7B-Instruct cards); ns/step compares a step of each
model (the batched step at most 2x the reference's). Allocations per run stay flat across the tiers;
the times are of one machine, shared with other jobs, on the date below.

- machine: $(nproc) CPUs, ${cpu:-unknown CPU}
- Go: $(go version | cut -d' ' -f3-)
- commit: $commit
- date: $(date -u +%Y-%m-%d)

| benchmark | ns/op | ns/step | B/op | allocs/op |
|---|---:|---:|---:|---:|
HEAD
awk '/^Benchmark/ {
	name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
	ns = ""; step = ""; bytes = ""; allocs = ""
	for (i = 2; i < NF; i++) {
		if ($(i+1) == "ns/op") ns = $i
		if ($(i+1) == "ns/step") step = $i
		if ($(i+1) == "B/op") bytes = $i
		if ($(i+1) == "allocs/op") allocs = $i
	}
	printf "| %s | %s | %s | %s | %s |\n", name, ns, step, bytes, allocs
}'
