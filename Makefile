# kandev-exec — build, test, demo, bench.
# Go lives in /usr/local/go on the project's machines, not always on PATH.
export PATH := /usr/local/go/bin:$(PATH)
GO        ?= go
BIN       := bin/kandev-exec
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
# Both binaries (the CLI and the helper it uploads) report these.
LDFLAGS   := -s -w -X github.com/kdlbs/kandev-exec/internal/buildinfo.Version=$(VERSION) \
             -X github.com/kdlbs/kandev-exec/internal/buildinfo.Commit=$(COMMIT)
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
HELPER    := bin/kandev-exec-helper-$(shell $(GO) env GOOS)-$(shell $(GO) env GOARCH)
export CGO_ENABLED := 0

.PHONY: build test test-race fuzz demo bench helpers dist snapshot release-test lint completions man clean

# The CLI, and beside it the helper it uploads to hosts of this platform.
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) .
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(HELPER) ./cmd/kandev-exec-helper

# The packages whose fuzz targets make test runs briefly and make fuzz at length:
# the profile resolver, and the index reader on reclaim's deletion path.
FUZZ_PKGS = profiles reclaim

# The whole suite against real sshd, race detector on, plus short fuzzing.
# Four tests at a time in a package: the transcripts mostly wait on their
# servers (a third of their time is CPU), so two cores carry four.
test:
	$(GO) vet ./...
	$(GO) vet -tags bench ./internal/bench/
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	CGO_ENABLED=1 $(GO) test -race -count=1 -parallel 4 -timeout 25m ./...
	@for p in $(FUZZ_PKGS); do for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$p/*_test.go 2>/dev/null | sed 's/func //'); do \
	  echo "fuzz $$p $$t (5s)"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime 5s ./$$p/ || exit 1; done; done

fuzz:
	@for p in $(FUZZ_PKGS); do for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$p/*_test.go | sed 's/func //'); do \
	  $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime 2m ./$$p/ || exit 1; done; done

# The main job, end to end, against a throwaway local sshd.
demo:
	@scripts/demo.sh

# Every figure is printed where it is measured, and the ones the
# performance targets name once more in one summary table at the end
# (README.md, "Performance"); bin/bench-rows.tsv collects them.
BENCH_ROWS = $(CURDIR)/bin/bench-rows.tsv
BENCH_FAILED = $(CURDIR)/bin/bench-failed
bench: build
	@rm -f $(BENCH_ROWS)
	@echo "== env resolver (ns/op and allocs at 10, 1,000 and 100,000 definitions)"
	@$(GO) test -run '^$$' -bench 'BenchmarkResolve' -benchmem ./profiles/ | grep '^Benchmark'
	@echo "== watch view (ns per frame, View(), and per journal event, Update(), at 10, 1,000 and 10,000 environments; a frame must stay under 16 ms)"
	@$(GO) test -run '^$$' -bench 'BenchmarkWatch' -benchmem ./tui/ | grep '^Benchmark'
	@# A step that fails leaves its rows out and the rest runs: the summary
	@# still lists every target, saying which did not run, and make bench
	@# fails at the end naming the steps that failed (BENCH_FAILED).
	@rm -f $(BENCH_FAILED)
	@BENCH_ROWS=$(BENCH_ROWS) scripts/bench.sh || echo scripts/bench.sh >> $(BENCH_FAILED)
	@{ BENCH_ROWS=$(BENCH_ROWS) CGO_ENABLED=0 $(GO) test -tags bench -count=1 -timeout 90m -run 'TestBench' -v ./internal/bench || \
	  echo TestBench >> $(BENCH_FAILED); } | grep -v '^\(=== RUN\|--- PASS\|PASS\|ok \)' || true
	@# The store figures need the etcd binary (apt-get install -y etcd-server).
	@{ CGO_ENABLED=0 $(GO) test -tags bench -count=1 -timeout 30m -run 'TestStoreBench' -v ./internal/bench || \
	  echo TestStoreBench >> $(BENCH_FAILED); } | grep -v '^\(=== RUN\|--- PASS\|PASS\|ok \)' || true
	@scripts/benchtable.sh $(BENCH_ROWS)
	@if [ -s $(BENCH_FAILED) ]; then echo "failed (their output is above): $$(tr '\n' ' ' < $(BENCH_FAILED))"; exit 1; fi


# The helpers for every platform, beside bin/kandev-exec.
helpers:
	@for p in $(PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; \
	  echo "bin/kandev-exec-helper-$$os-$$arch"; \
	  GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/kandev-exec-helper-$$os-$$arch ./cmd/kandev-exec-helper || exit 1; done

# A release without goreleaser: dist/ holds the four CLIs, each with the
# four helpers embedded, the helpers' .gz and checksums.txt.
dist:
	@VERSION='$(VERSION)' COMMIT='$(COMMIT)' scripts/dist.sh

# goreleaser from PATH, else built for this target into a temporary directory.
WITH_GORELEASER = bin=$$(mktemp -d); trap 'rm -rf "$$bin"' EXIT; \
	command -v goreleaser >/dev/null || scripts/install-goreleaser.sh "$$bin" || exit 1; PATH="$$bin:$$PATH"

# What a release publishes, into dist/, offline: archives, .deb and .rpm,
# the Homebrew formula, checksums.txt (signed when KANDEV_EXEC_SIGNING_KEY
# names the release key). docs/releasing.md.
snapshot:
	@$(WITH_GORELEASER); goreleaser check && goreleaser release --snapshot --clean

# That snapshot on a clean clone of HEAD, checked, and its .deb installed
# with dpkg and used (release_test.go, package_test.go; .ci/run runs it).
release-test:
	@$(WITH_GORELEASER); $(GO) test -tags release -count=1 -timeout 45m -run '^TestRelease$$' -v .

lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

completions:
	@mkdir -p completions
	@for sh in bash zsh fish powershell; do $(GO) run . completion $$sh > completions/kandev-exec.$$sh; done

# man/: kandev-exec.1 and a page per command, from the command tree (cobra's
# doc generator, in a test so the CLI does not link it). TestManPages fails
# when they are out of date.
man:
	$(GO) test -count=1 -run '^TestManPages$$' ./cmd -update

clean:
	rm -rf bin dist build internal/helperbin/embedded
