# binlane: two commands do everything on a fresh Debian machine.
#   make demo   the whole job on throwaway servers: copy a live database into an
#               empty target, replicate, status page, analyze, online verify
#   make test   the whole test suite (unit, integration, race detector)
# and one installs it: make install (PREFIX=/usr/local, DESTDIR for packages).

GO        ?= go
PKGS      ?= ./...
TESTFLAGS ?= -race -timeout 60m
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
MANDIR    ?= $(PREFIX)/share/man
# The version is the tag at HEAD (else dev); the commit goes in too, for
# builds where go cannot stamp it (a git worktree). --version shows both.
VERSION   ?= $(shell git describe --tags --exact-match 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +modified)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: all build install uninstall deps bench-deps demo test test-short soak bench bench-apps bench-copy pgo man fuzz vet fmt clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/binlane ./cmd/binlane

# install puts the binary and the man pages (docs/man, see make man) under
# PREFIX; DESTDIR stages them for a package. An example systemd unit and a
# Grafana dashboard are in docs/ops/.
install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 0755 bin/binlane $(DESTDIR)$(BINDIR)/binlane
	install -m 0644 docs/man/*.1 $(DESTDIR)$(MANDIR)/man1/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/binlane $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(wildcard docs/man/*.1)))

# deps installs what is missing: the MariaDB server (tests and the demo
# start their own throwaway instances from its binaries), sysbench for the
# benchmarks, Chromium (the status page's test loads it headless),
# percona-toolkit (pt-heartbeat: the throttle's test reads lag from it), tmux
# (the progress bars' test runs binlane on a terminal), and the Go modules.
deps:
	@missing=""; \
	{ command -v mariadbd && command -v mariadb-binlog; } >/dev/null 2>&1 || missing="$$missing mariadb-server mariadb-client"; \
	command -v sysbench >/dev/null 2>&1 || missing="$$missing sysbench"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v pt-heartbeat >/dev/null 2>&1 || missing="$$missing percona-toolkit"; \
	command -v tmux >/dev/null 2>&1 || missing="$$missing tmux"; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	$(GO) mod download

demo: deps
	$(GO) run ./cmd/binlane demo

test: deps
	$(GO) vet $(PKGS)
	$(GO) test $(TESTFLAGS) $(PKGS)

test-short:
	$(GO) test -short $(PKGS)

# The randomized replicate, copy and application workloads over many seeds,
# each ending in verify (internal/replicate/soak_test.go): about 5 s a seed
# and test; then SIGKILLs of the binary over SOAK_N / 4 seeds (about 30 s
# each). A failing seed is rerun alone: -run 'TestSoakCopy/1234'.
SOAK_FROM ?= 1000
SOAK_N ?= 20
soak: deps
	BINLANE_SOAK=$(SOAK_FROM) BINLANE_SOAK_N=$(SOAK_N) $(GO) test -race -count=1 -run 'TestSoak' -timeout 120m ./internal/replicate
	BINLANE_SOAK=$(SOAK_FROM) BINLANE_SOAK_N=$$(( $(SOAK_N) / 4 )) $(GO) test -race -count=1 -run 'TestSoakCrash' -timeout 120m ./cmd/binlane

# The copy benchmark also compares with mydumper/myloader.
bench-deps: deps
	@command -v mydumper >/dev/null 2>&1 || { echo "installing mydumper"; \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends mydumper >/dev/null; }

bench: bench-deps build
	$(GO) run ./bench $(BENCHFLAGS)

# The application scenarios: the workload generator's shop, order entry,
# bulk and document backlogs (bench/README.md).
bench-apps: bench-deps build
	$(GO) run ./bench --scenarios apps $(BENCHFLAGS)


# bench-copy: the comparison at 2M rows (idle and under load), then binlane
# and the ceiling at 0.5M, 2M, 8M rows and one table of 8M (COPYSCALES).
COPYSCALES ?= 500k,2M,8M,8Mx1
bench-copy: bench-deps build
	$(GO) run ./bench --mode copy --repeat 3 --copy-scales $(COPYSCALES) $(BENCHFLAGS)

# pgo refreshes cmd/binlane/default.pgo, the CPU profile go build uses to
# optimise binlane (profile-guided optimisation): binlane's own CPU profiles
# of the benchmark's drains, one and four threads, every kind of scenario,
# merged. Refresh it after a change that moves where binlane's time goes.
PGODIR ?= /tmp/binlane-pgo
pgo: bench-deps build
	rm -rf $(PGODIR) && mkdir -p $(PGODIR)/profiles
	$(GO) run ./bench --binlane bin/binlane --scenarios nondurable,durable,shop-nondurable,orderentry-nondurable,slots-nondurable,docs-nondurable \
		--transactions 30000 --app-transactions 30000 --table-size 20000 --workers 1,4 --native none \
		--analyze=false --skip-verify --profile-dir $(PGODIR)/profiles --out $(PGODIR)
	$(GO) tool pprof -proto $(PGODIR)/profiles/*.pprof > cmd/binlane/default.pgo

# fuzz runs every fuzz target for FUZZTIME each. Minimizing a new input may
# take 60 s by default, during which no new inputs are tried: keep it short.
FUZZTIME ?= 10m
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg || exit 1; \
		done; \
	done

# man writes the man pages from the command definitions.
man:
	$(GO) run ./cmd/binlane man docs/man

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -l -w $$(git ls-files '*.go')

clean:
	rm -rf bin
