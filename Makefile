# servesim: build, test, benchmark, lint and fuzz.
GO        ?= go
BIN       := bin/servesim
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS   := -X main.version=$(VERSION)
FUZZTIME  ?= 10s
# Minimizing a new interesting input takes up to 60 s by default: more than a short run's budget.
FUZZMINTIME ?= 5s
BENCHTIME ?= 1s
STATICCHECK_VERSION := v0.8.2
GOBIN     := $(shell $(GO) env GOPATH)/bin

SERVESIM_SHARED ?= $(abspath ../shared)
SWEEP_GRID := --scheduler static,continuous,chunked \
	--controller max,min,fixed:1125,reactive,sampled-reactive --normalize none,0.5,0.7,0.9

.PHONY: all build install release test limit-peaks bench bench-all lint fuzz run docs sweep-demo sweep-scale week-scale clean cluster-test k8s-manifests

all: lint test build

## build: compile bin/servesim with its version, statically linked: without
## cgo the binary does not load libc and its dynamic linker at every start (3 ms);
## the command is echoed on stderr, leaving stdout to `make run`'s document
BUILD_CMD := CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/servesim
build:
	@echo '$(BUILD_CMD)' >&2
	@$(BUILD_CMD)

## install: copy the built binary to $(PREFIX)/bin, by default Go's own bin folder
## ($(GOBIN)); PREFIX=/usr/local make install puts it in /usr/local/bin
PREFIX ?= $(patsubst %/bin,%,$(GOBIN))
install: build
	@mkdir -p "$(PREFIX)/bin"
	@install -m 0755 $(BIN) "$(PREFIX)/bin/servesim"
	@echo "installed $(PREFIX)/bin/servesim" >&2

## release: static binaries for linux and darwin on amd64 and arm64 in dist/, named
## servesim-VERSION-OS-ARCH, with their SHA-256 sums in dist/SHA256SUMS (VERSION is the tag,
## git describe --tags)
RELEASE_TARGETS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
release:
	@rm -rf dist && mkdir -p dist
	@for target in $(RELEASE_TARGETS); do \
	  os=$${target%/*}; arch=$${target#*/}; out=dist/servesim-$(VERSION)-$$os-$$arch; \
	  echo "build $$out" >&2; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $$out ./cmd/servesim || exit 1; \
	done
	@cd dist && sha256sum servesim-* > SHA256SUMS && cat SHA256SUMS

## test: unit, parity, golden and end-to-end tests (the end-to-end tests run the real binary),
## then one line saying whether the tests that read the shared data ran or were skipped, and
## how many the missing data skipped
test:
	@status=0; skipped=$$(mktemp); \
	SERVESIM_SKIPPED_LOG=$$skipped $(GO) test -count=1 ./... || status=$$?; \
	$(GO) test -count=1 -v -run '^TestSharedDataReport$$' ./internal/sharedtest 2>&1 | sed -n 's/^.*\(shared data: \)/\1/p'; \
	n=$$(sort -u $$skipped | wc -l); rm -f $$skipped; \
	if [ $$n -gt 0 ]; then echo "shared data: $$n tests skipped for want of it"; fi; \
	exit $$status

## limit-peaks: run the binary at each memory limit of docs/performance.md's "Limits" table and check
## its peak resident size against the figure promised there (about three minutes, 1.4 GB of
## temporary disk)
limit-peaks: build
	SERVESIM_BIN=$(abspath $(BIN)) $(GO) test ./cmd/servesim -count=1 -run '^TestPeaksAtTheLimits$$' -parallel 2 -timeout 20m -v -limitpeaks

## bench: the size-tier benchmarks (simulate, trace loading, fleet), written as a table
## with the machine and commit to docs/BENCHMARKS.md (BENCHTIME per benchmark)
bench:
	@out=$$(mktemp); \
	$(GO) test -run='^$$' -bench='Tiers$$' -benchmem -benchtime=$(BENCHTIME) ./internal/plant ./internal/fleet | tee $$out && \
	sh scripts/bench-table.sh < $$out > docs/BENCHMARKS.md; status=$$?; rm -f $$out; exit $$status

## bench-all: every benchmark once, with allocation counts
bench-all:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=1x ./...

## lint: gofmt, go vet and staticcheck must all be clean
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	@test -x $(GOBIN)/staticcheck || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(GOBIN)/staticcheck ./...

## fuzz: a short run ($(FUZZTIME), minimizing at most $(FUZZMINTIME)) of every fuzz target
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$target"; \
	    $(GO) test -run='^$$' -fuzz="^$$target$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINTIME) $$pkg; \
	  done; \
	done

## run: the main job on the embedded defaults (profile and trace); stdout is
## the document alone, so `make run | jq` works (make echoes no command)
run: build
	@./$(BIN) simulate --summary

## docs: regenerate the command reference from the command tree (docs/reference, Markdown, and
## docs/man, man pages: TestReferenceIsCurrent fails when they are stale) and the example figures
## of the manual (docs/*.png)
docs: build
	$(GO) test ./cmd/servesim -count=1 -run '^TestReferenceIsCurrent$$' -update
	./$(BIN) simulate --max-elapsed 900 --scheduler continuous --controller reactive --summary --plot docs/simulate.png >/dev/null
	./$(BIN) scenarios --plot docs/scenarios.png >/dev/null
	./$(BIN) diagnose --by-window 20 --plot docs/diagnose.png internal/diagnose/testdata/logs/kv_thrashing.csv >/dev/null

## sweep-demo: 3 schedulers x 5 controllers x 4 loads on the whole Azure 2023 code trace,
## timed with --jobs 1 and --jobs 2; the two outputs must be byte-identical
sweep-demo: build
	@test -f "$(SERVESIM_SHARED)/data/azure2023/AzureLLMInferenceTrace_code.csv" || \
	  { echo "sweep-demo: set SERVESIM_SHARED to the shared folder" >&2; exit 2; }
	@for jobs in 1 2; do \
	  start=$$(date +%s.%N); \
	  ./$(BIN) sweep --quiet --jobs $$jobs --trace "$(SERVESIM_SHARED)/data/azure2023/AzureLLMInferenceTrace_code.csv" \
	    $(SWEEP_GRID) > bin/sweep-jobs$$jobs.jsonl; \
	  echo "sweep-demo: --jobs $$jobs: $$(awk -v s=$$start -v e=$$(date +%s.%N) 'BEGIN{printf "%.2f", e-s}') s wall"; \
	done
	cmp bin/sweep-jobs1.jsonl bin/sweep-jobs2.jsonl && echo "sweep-demo: outputs identical"

## week-scale: the synthetic week of 27.3 million requests (a 1.1 GB trace written to a temporary
## folder) through the servesim binary, --summary, under each service model (the reference's
## normalized to 0.7, the batched one to 0.3: see weekRuns): wall time and peak RSS; then
## through an elastic fleet of 4 to 64 replicas (BenchmarkSimulateAutoscaleWeek); then
## capacity --over-time 3600 on the same week (BenchmarkCapacityOverTimeWeek)
week-scale:
	$(GO) test -run='^$$' -bench='SimulateWeek/week' -benchtime=1x -timeout=30m ./cmd/servesim
	$(GO) test -run='^$$' -bench='SimulateAutoscaleWeek/week' -benchtime=1x -timeout=30m ./cmd/servesim
	$(GO) test -run='^$$' -bench='CapacityOverTimeWeek/week' -benchtime=1x -timeout=60m ./cmd/servesim

## sweep-scale: peak RSS and records per second of 1,000- and 10,000-run sweeps
## (5 controllers x 5 loads x 40 or 400 power limits) on the code trace's first five minutes
sweep-scale: build
	@test -f "$(SERVESIM_SHARED)/data/azure2023/AzureLLMInferenceTrace_code.csv" || \
	  { echo "sweep-scale: set SERVESIM_SHARED to the shared folder" >&2; exit 2; }
	@for limits in 40 400; do \
	  /usr/bin/time -f "sweep-scale: $$((limits * 25)) runs: %e s wall, peak RSS %M KB" \
	    ./$(BIN) sweep --quiet --trace "$(SERVESIM_SHARED)/data/azure2023/AzureLLMInferenceTrace_code.csv" --max-elapsed 300 \
	    --controller max,min,fixed:1125,reactive,sampled-reactive --normalize none,0.3,0.5,0.7,0.9 \
	    --power-limit $$(seq -s, -f '%.1f' 40 0.1 $$(awk -v n=$$limits 'BEGIN{printf "%.1f", 40+(n-1)/10}')) \
	    > bin/sweep-scale.jsonl; \
	done

## cluster-test: the Slurm scripts of docs/cluster on a real Slurm: Debian's slurm-wlm and munge
## (installed when missing), a one-node slurmctld and slurmd run as root in a temporary folder
## of their own; tasks killed, timed out, requeued and sent SIGTERM, each study resumed by the
## command that started it, the outputs compared with one process's byte for byte (about
## 2.5 minutes); without root or the packages it prints "cluster-test: SKIPPED: why" and passes
cluster-test:
	@bash scripts/cluster-test.sh

## k8s-manifests: the Kubernetes manifests of docs/cluster decoded strictly as batch/v1 Jobs
## with the API's own types (test/kubernetes, a module of its own: servesim does not depend on them)
k8s-manifests:
	cd test/kubernetes && $(GO) test -count=1 ./...

clean:
	rm -rf bin
