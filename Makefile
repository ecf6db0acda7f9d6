# make build  - bin/tether and bin/tether-guardian, static (no cgo: the guardian starts faster)
# make test   - everything CI runs: commit subjects, format, vet, staticcheck, tests, cross-builds, the Windows tests under Wine
# make wine   - the Windows tests alone, under Wine (WINE_PACKAGES=... to choose)
# make bench  - the benchmarks whose figures are in docs/benchmarks.md
# make soak   - every lifetime test 20 times over
# make peers  - tether side by side with supervisord, s6, PM2 and process-compose (installs them, see .ci/peers-deps)
# make torture - the crash-torture test, TORTURE_ROUNDS rounds (TORTURE_SEED=N replays)
# make jepsen - JEPSEN_RUNS random fault schedules of hosts sharing identities on etcd (JEPSEN_SEED=N replays)
# make fuzz   - every fuzz target for FUZZTIME (make fuzz FUZZTIME=10m), one at a time
# make dist-test-windows - the Windows installer under Wine; dist-test-manifests - Scoop, Homebrew, Info.plist
# make dist   - every release artifact in dist/ (make dist VERSION=x.y.z), see packaging/dist.sh
# make dist-test - dist twice (byte for byte the same), its checks, and the .deb installed and used

GO          ?= go
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
BENCHTIME   ?= 50x
FUZZTIME    ?= 1m
FUZZPARALLEL ?= 1

.PHONY: build test commits deps fmt vet staticcheck unit fuzz-short cross wine bench soak peers torture jepsen fuzz dist dist-test

# The version stamped into the binary (internal/buildinfo): git describe,
# the commit and its date, so that a build without the toolchain's own
# version control stamping (-buildvcs=false) still knows what it is.
VERSION     ?= $(shell bash packaging/version.sh)
COMMIT      := $(shell git rev-parse HEAD 2>/dev/null)
COMMIT_DATE := $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%d 2>/dev/null)
BUILDINFO   := github.com/tether-dev/tether/internal/buildinfo
LDFLAGS     := -X $(BUILDINFO).Version=$(VERSION) -X $(BUILDINFO).Commit=$(COMMIT) -X $(BUILDINFO).Date=$(COMMIT_DATE)

# tether, and beside it the guardian it execs once per agent start
# (tether itself serves where that is missing): without cgo both are
# static and skip the dynamic loader (about 1-2 ms a start).
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o bin/tether .
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o bin/tether-guardian ./guardian/cmd/tether-guardian

test: commits deps fmt vet staticcheck unit fuzz-short cross wine

# Every commit subject after .ci/commits' base is `area: text`, at most 72
# characters; a clone without that base (shallow) skips, saying so.
commits:
	@bash .ci/commits --self-test
	@bash .ci/commits

# System packages the tests use: installed when root with apt-get,
# otherwise a SKIP line (a failure with CI=true).
deps:
	@bash .ci/deps

fmt:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# staticcheck comes from the Go module proxy. Without it the check is
# skipped locally and fails in CI.
staticcheck:
	@if [ ! -x "$(STATICCHECK)" ]; then \
		$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) || true; \
	fi
	@if [ -x "$(STATICCHECK)" ]; then \
		echo "$(STATICCHECK) ./..."; $(STATICCHECK) ./...; \
	elif [ "$$CI" = "true" ]; then \
		echo "staticcheck: could not be installed (CI=true, failing)"; exit 1; \
	else \
		echo "SKIP staticcheck: could not be installed from the module proxy"; \
	fi

# Lifetime tests need root for cgroup v2 containment; without it they run
# with session containment and say so (CI=true turns the skip into a failure).
unit:
	$(GO) test -count=1 -timeout 15m ./...

# A few seconds of fuzzing per target, from the committed corpora (which
# unit already replays as tests) and any inputs cached by earlier runs.
fuzz-short:
	@GO=$(GO) FUZZTIME=3s FUZZPARALLEL=$(FUZZPARALLEL) bash .ci/fuzz

cross:
	GOOS=windows GOARCH=amd64 $(GO) vet ./...
	@if [ -x "$(STATICCHECK)" ]; then \
		echo "GOOS=windows $(STATICCHECK) ./..."; GOOS=windows GOARCH=amd64 $(STATICCHECK) ./...; \
		echo "GOOS=darwin $(STATICCHECK) ./..."; GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(STATICCHECK) ./...; \
	fi
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null .
	GOOS=windows GOARCH=amd64 $(GO) build -o /dev/null .

# The Windows packages' tests, run by Wine in a throwaway prefix. Without
# wine and mingw they are skipped (a failure with CI=true).
wine:
	@GO=$(GO) bash .ci/wine-test

bench:
	$(GO) test ./bench/ -run '^$$' -bench . -benchtime=$(BENCHTIME) -timeout 30m

soak:
	$(GO) test -count=20 -timeout 30m ./guardian/ ./platform/unix/
	$(GO) test -count=20 -timeout 30m -run '^TestContainment' ./tests/

# The end-to-end crash torture: TORTURE_ROUNDS rounds of random kills of
# services, guardians and agents, stopped after TORTURE_BUDGET; the
# figures are in the test's log. TORTURE_SEED=N replays a run.
TORTURE_ROUNDS ?= 1000
TORTURE_BUDGET ?= 40m
torture:
	TETHER_TORTURE=1 TETHER_TORTURE_ROUNDS=$(TORTURE_ROUNDS) TETHER_TORTURE_BUDGET=$(TORTURE_BUDGET) \
	TETHER_TORTURE_SEED=$(TORTURE_SEED) \
		$(GO) test -count=1 -v -run '^TestCrashTorture$$' -timeout 50m ./tests/

# Identities across machines (I10): JEPSEN_RUNS random schedules, each a
# fault (a host that dies whole, a partition, etcd's leader killed, quorum
# lost, a guardian paused, upgrades) with random timings, against two or
# three tether hosts and a real three-member etcd cluster; it prints the
# runs, the overlaps found and the failover times of docs/benchmarks.md.
# make test runs each scenario once. JEPSEN_SEED=N replays a run.
JEPSEN_RUNS ?= 50
jepsen:
	TETHER_JEPSEN_RUNS=$(JEPSEN_RUNS) TETHER_JEPSEN_SEED=$(JEPSEN_SEED) \
		$(GO) test -count=1 -v -run '^TestJepsen$$' -timeout 60m ./tests/jepsen/

# One table, a row per measure and a column per supervisor; each peer runs
# under a temp dir with its own config, never as a system service. PM2 and
# process-compose are pinned and kept under PEERS_CACHE, outside the tree;
# .ci/peers-deps installs whatever is missing (supervisor and s6 with apt).
PEERS_CACHE ?= $(HOME)/.cache/tether-peers
PM2_VERSION := 7.0.4
PROCESS_COMPOSE_VERSION := v1.64.1
PEERS_PM2_PREFIX := $(PEERS_CACHE)/pm2-$(PM2_VERSION)
PEERS_PROCESS_COMPOSE := $(PEERS_CACHE)/process-compose-$(PROCESS_COMPOSE_VERSION)
peers:
	@GO=$(GO) PM2_VERSION=$(PM2_VERSION) PM2_PREFIX=$(PEERS_PM2_PREFIX) \
		PROCESS_COMPOSE_VERSION=$(PROCESS_COMPOSE_VERSION) PROCESS_COMPOSE=$(PEERS_PROCESS_COMPOSE) \
		bash .ci/peers-deps
	TETHER_PEERS=1 PEERS_PM2=$(PEERS_PM2_PREFIX)/node_modules/.bin/pm2 PEERS_PROCESS_COMPOSE=$(PEERS_PROCESS_COMPOSE) \
		$(GO) test ./bench/peers/ -run '^TestPeers$$' -v -count=1 -timeout 25m

# Each fuzz target for FUZZTIME, with FUZZPARALLEL workers (1 leaves the
# machine to others); a failing input lands in testdata/fuzz/ (.ci/fuzz).
fuzz:
	@GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZPARALLEL=$(FUZZPARALLEL) bash .ci/fuzz

# Every release artifact, from this commit: archives, .deb and .rpm,
# source archive, SBOM and SHA256SUMS (packaging/dist.sh says what and
# how). DISTDIR=dir writes elsewhere.
DISTDIR ?= dist
dist:
	GO=$(GO) bash packaging/dist.sh $(VERSION) $(DISTDIR)

# dist twice, compared byte for byte; the packages' checks (lintian,
# desktop-file-validate, appstreamcli, rpm against dpkg); and, as root,
# the .deb installed and used for real (packaging/dist-test.sh).
dist-test:
	GO=$(GO) bash packaging/dist-test.sh $(VERSION)

# The Windows installer installed silently into a fresh Wine prefix,
# upgraded under a running service and uninstalled
# (packaging/windows/wine-test.sh); the Scoop manifest, the Homebrew
# formula and the tray's Info.plist checked against the artifacts
# (packaging/manifests-test.sh). TEST_DISTDIR=dist VERSION=x.y.z tests
# make dist's; without it, both make stand-ins from the tree.
.PHONY: dist-test-windows dist-test-manifests
dist-test-windows:
	@GO=$(GO) bash packaging/windows/wine-test.sh $(if $(TEST_DISTDIR),$(VERSION) $(TEST_DISTDIR))
dist-test-manifests:
	@bash packaging/manifests-test.sh $(if $(TEST_DISTDIR),$(VERSION) $(TEST_DISTDIR))
