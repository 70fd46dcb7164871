# taskq — PGXS build.  `make`, `make install` and `make installcheck` keep their
# PGXS meaning; `make test` and `make demo` install what they need first and run
# on a throwaway cluster, so they must work before pg_config exists.

EXTENSION    = taskq taskq_proxy
EXTVERSION  := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" taskq.control)

MODULE_big   = taskq
OBJS         = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c src/*/*.c)))
# The install script of the default version is built from src/sql/taskq.sql
# (the current schema); taskq--0.1.sql stays as released, the base from
# which older versions are installed with the update scripts.
DATA         = src/sql/taskq--0.1.sql $(wildcard src/sql/taskq--*--*.sql)
DATA_built   = src/sql/taskq--$(EXTVERSION).sql proxy/taskq_proxy--$(EXTVERSION).sql
PG_CPPFLAGS  = -I$(srcdir)/src

# TASKQ_ASSERT=1: Assert() checks in taskq's own code even against a server
# built without them (Assert is a macro); make test builds so.
ifeq ($(TASKQ_ASSERT),1)
PG_CPPFLAGS += -DUSE_ASSERT_CHECKING
endif
# TASKQ_SANITIZE=1: AddressSanitizer and UndefinedBehaviorSanitizer in
# taskq.so (make check-asan; the server preloads libasan).
ifeq ($(TASKQ_SANITIZE),1)
PG_CFLAGS   += -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SHLIB_LINK  += -fsanitize=address,undefined
endif

REGRESS      = $(sort $(basename $(notdir $(wildcard sql/*.sql))))
REGRESS_OPTS = --inputdir=. --load-extension=taskq
ISOLATION    = $(sort $(basename $(notdir $(wildcard test/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test --load-extension=taskq
TAP_TESTS    = 1
PROVE_TESTS ?= $(wildcard test/t/*.pl)

EXTRA_CLEAN  = results/ output_iso/ tmp_check/ test/results/ log/

# Prefer the PostgreSQL 15 server's pg_config (Debian installs several).
PG_CONFIG ?= $(firstword $(wildcard /usr/lib/postgresql/15/bin/pg_config) pg_config)
HAVE_PGXS := $(shell command -v $(PG_CONFIG) >/dev/null 2>&1 && echo yes)

ifeq ($(HAVE_PGXS),yes)
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
endif

.DEFAULT_GOAL := all

# PGXS tracks no header dependencies: without this, changing a struct in a
# header rebuilds only the files one touched, and objects disagree about
# the shared-memory layout.
$(OBJS): $(wildcard src/*/*.h)

src/sql/taskq--$(EXTVERSION).sql: src/sql/taskq.sql
	cp $< $@

# taskq_proxy (proxy/): the second extension, SQL only, for the proxy
# database in front of several shards (docs/scaling.md).
proxy/taskq_proxy--$(EXTVERSION).sql: proxy/taskq_proxy.sql
	cp $< $@

# taskq-worker (tools/taskq-worker/), a libpq program installed next to the
# extension in PostgreSQL's bindir.  Not PGXS's PROGRAM, which shares OBJS
# with MODULE_big: its own rules, with the compiler and flags PGXS gives.
# The Debian packages ship it apart from the extension, once and not per
# major version: they build the extension with TASKQ_WORKER=no (make and
# make install leave the worker out), then `make install-taskq-worker
# TASKQ_WORKER_BINDIR=/usr/bin`.
TQW      = tools/taskq-worker/taskq-worker
TQW_OBJS = $(patsubst %.c,%.o,$(sort $(wildcard tools/taskq-worker/*.c)))
TASKQ_WORKER ?= yes
ifeq ($(HAVE_PGXS),yes)
TASKQ_WORKER_BINDIR ?= $(bindir)
ifneq ($(TASKQ_WORKER),no)
all: $(TQW)
install: install-taskq-worker
uninstall: uninstall-taskq-worker
endif
$(TQW_OBJS): %.o: %.c $(wildcard tools/taskq-worker/*.h)
	$(CC) $(CFLAGS) -Wall -Wextra -I$(shell $(PG_CONFIG) --includedir) \
		-DTASKQ_WORKER_VERSION='"$(EXTVERSION)"' -c -o $@ $<
$(TQW): $(TQW_OBJS)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) -L$(shell $(PG_CONFIG) --libdir) -lpq
clean: clean-taskq-worker
.PHONY: install-taskq-worker uninstall-taskq-worker clean-taskq-worker
install-taskq-worker: $(TQW)
	$(MKDIR_P) '$(DESTDIR)$(TASKQ_WORKER_BINDIR)'
	$(INSTALL_PROGRAM) $(TQW) '$(DESTDIR)$(TASKQ_WORKER_BINDIR)/taskq-worker'
uninstall-taskq-worker:
	rm -f '$(DESTDIR)$(TASKQ_WORKER_BINDIR)/taskq-worker'
clean-taskq-worker:
	rm -f $(TQW) $(TQW_OBJS)
endif

# taskq-console (tools/taskq-console/), the web console: a Python program
# (Flask on waitress, from Debian's packages), installed as its directory
# in TASKQ_CONSOLE_DIR (default PGXS's datadir/taskq-console) with the
# command taskq-console in TASKQ_CONSOLE_BINDIR (default PGXS's bindir, as
# taskq-worker) a relative symbolic link to it: the command finds its
# package next to the file the link names, and runs with
# TASKQ_CONSOLE_PYTHON (default /usr/bin/python3, the Python of Debian's
# Flask, not whichever python3 comes first on PATH).  The Debian packages build the
# extension with TASKQ_CONSOLE=no and ship it in a package of its own
# (make install-taskq-console TASKQ_CONSOLE_DIR=/usr/share/taskq-console
# TASKQ_CONSOLE_BINDIR=/usr/bin).
TQC       = tools/taskq-console
TQC_FILES = $(shell cd $(TQC) && find taskq_console -type f ! -name '*.pyc' ! -path '*/__pycache__/*' | LC_ALL=C sort)
TASKQ_CONSOLE ?= yes
ifeq ($(HAVE_PGXS),yes)
TASKQ_CONSOLE_BINDIR ?= $(bindir)
TASKQ_CONSOLE_DIR ?= $(datadir)/taskq-console
TASKQ_CONSOLE_PYTHON ?= /usr/bin/python3
ifneq ($(TASKQ_CONSOLE),no)
install: install-taskq-console
uninstall: uninstall-taskq-console
endif
.PHONY: install-taskq-console uninstall-taskq-console
install-taskq-console:
	$(MKDIR_P) '$(DESTDIR)$(TASKQ_CONSOLE_BINDIR)'
	set -e; for f in $(TQC_FILES); do \
		$(MKDIR_P) "$(DESTDIR)$(TASKQ_CONSOLE_DIR)/$$(dirname $$f)"; \
		$(INSTALL_DATA) $(TQC)/$$f '$(DESTDIR)$(TASKQ_CONSOLE_DIR)'/$$f; done
	sed '1s|^#!.*|#!$(TASKQ_CONSOLE_PYTHON)|' $(TQC)/taskq-console >'$(DESTDIR)$(TASKQ_CONSOLE_DIR)/taskq-console'
	chmod 755 '$(DESTDIR)$(TASKQ_CONSOLE_DIR)/taskq-console'
	ln -sfr '$(DESTDIR)$(TASKQ_CONSOLE_DIR)/taskq-console' '$(DESTDIR)$(TASKQ_CONSOLE_BINDIR)/taskq-console'
uninstall-taskq-console:
	rm -f '$(DESTDIR)$(TASKQ_CONSOLE_BINDIR)/taskq-console'
	rm -rf '$(DESTDIR)$(TASKQ_CONSOLE_DIR)'
endif

.PHONY: test check-asan check-build demo demo-stop deps bench bench-neutral crash-loop fuzz dist check-dist deb deb-test
.PHONY: cluster cluster-stop demo-cluster cluster-test
# Every suite on a throwaway cluster; ends with "N passed, N failed".
# PG=17 or PG=18: the same suites against that major version, in a chroot
# of the Debian release that packages it, made once and kept
# (test/bin/pg_chroot.sh, as root).  Without PG (or PG=15): the host's 15.
test:
ifneq ($(filter-out 15,$(PG)),)
	bash test/bin/pg_chroot.sh --test $(PG)
else
	bash test/bin/test.sh
endif

# The same suites with taskq.so built with AddressSanitizer and UBSan, in a
# private copy of PostgreSQL; any sanitizer report fails the run.  Run it
# once per change to the C code.
check-asan:
	TASKQ_SANITIZE=1 bash test/bin/test.sh

# Only the build against PG=17 or PG=18, in its chroot: warning-free with
# make test's flags.
check-build:
	bash test/bin/pg_chroot.sh $(PG)

# The examples with real concurrent workers on a throwaway cluster
# (VERBOSE=1: full monitors; KEEP=1: leave the cluster running, with
# taskq-console on it, and print their addresses).
demo:
	bash test/bin/demo.sh

# Stop the cluster (and the console) KEEP=1 make demo left running and
# remove its temp dir.
demo-stop:
	@bash test/bin/demo-stop.sh

# The screenshots of docs/console.md: the browser suite alone on a
# throwaway cluster, its PNGs compressed into docs/console/
# (test/bin/console-shots.sh).
.PHONY: console-shots
console-shots:
	bash test/bin/console-shots.sh

# A local sharded, highly available cluster, left running until make
# cluster-stop (tools/cluster.sh; docs/scaling.md, "A local cluster"): a
# pg_auto_failover monitor, SHARDS formations of a primary and a synchronous
# standby with taskq, and a PL/Proxy proxy database; its state file is
# /var/tmp/taskq-cluster/cluster.env.  As root it installs what it needs.
SHARDS ?= 4
cluster:
	bash tools/cluster.sh start $(SHARDS)

cluster-stop:
	bash tools/cluster.sh stop

# examples/cluster/demo.py: tasks of several routes through the proxy, a
# worker per shard, and which shard served what (on the running cluster,
# or on one started for it and stopped after unless KEEP=1; SWITCHOVER=1:
# a switchover of shard0 while the workers run).
demo-cluster:
	bash tools/cluster.sh demo $(SHARDS)

# Start 2 shards from nothing in /var/tmp/taskq-cluster-test, check them,
# the demo with a switchover, stop, nothing left.  Not part of make test.
cluster-test:
	TASKQ_CLUSTER_DIR=/var/tmp/taskq-cluster-test bash tools/cluster.sh test

# Longer runs than make test (every suite, with the long part stretched):
# 100 kill -9 / immediate-stop iterations under load; an hour of sqlsmith
# and ten minutes of the taskq fuzzer.
crash-loop:
	TASKQ_CRASH_ITERATIONS=100 TASKQ_FILE_TIMEOUT=5400 bash test/bin/test.sh

fuzz:
	TASKQ_SQLSMITH_SECONDS=3600 TASKQ_FUZZ_SECONDS=600 TASKQ_FILE_TIMEOUT=4500 bash test/bin/test.sh

# The failover scenarios under load (test/ha/run.sh, docs/scaling.md) on a
# local cluster of four shards under pg_auto_failover (tools/cluster.sh);
# L1-L5 checked after each.  FAST=1: pg_auto_failover's timeouts lowered;
# KEEP=1: the cluster stays up afterwards.  Not part of make test.
.PHONY: ha-test ha-selftest
ha-test:
	FAST=$(FAST) bash tools/cluster.sh start 4
	FAST=$(FAST) bash test/ha/run.sh; rc=$$?; \
	if [ "$(KEEP)" != 1 ]; then bash tools/cluster.sh stop; fi; exit $$rc

# ha-test's load and checkers on one plain server, each check shown to fail
# on a planted fault (test/ha/selftest.sh, about a minute with the build).
ha-selftest:
	bash test/ha/selftest.sh

# Throughput and latency against the hand-written queue, same run (bench/).
bench:
	bash bench/run.sh

# taskq-console's pages with 1,000,000 tasks and 10,000 runs, and a drain
# of 16 workers alone against the same with the console's pages polled
# (bench/console.sh; about ten minutes; not part of make bench).
.PHONY: bench-console
bench-console:
	bash bench/console.sh

# taskq against the hand-written queue and the DELETE floor on neutral ground:
# pgbench -M prepared for every system, stock settings, a fresh database per
# run (bench/neutral.sh; the table in docs/performance.md leads with it).
bench-neutral:
	bash bench/neutral.sh

# The Debian packages (debian/): postgresql-15-taskq, taskq-worker,
# taskq-console and python3-taskq, built with dpkg-buildpackage in a temp
# copy of the tree (its build runs the regress and isolation suites), checked with lintian
# and installed afresh in a clean Debian 12 chroot (test/bin/deb.sh,
# test/bin/deb_install_test.sh; as root).  The .deb files land in dist/deb/
# (DEB_OUT=dir elsewhere).  PG=17 or PG=18: built in that major's Debian
# chroot instead (test/bin/pg_chroot.sh), without the install test.
deb:
	bash test/bin/deb.sh $(PG)
	$(if $(filter-out 15,$(PG)),,bash test/bin/deb_install_test.sh)

# The install test alone, of the packages make deb left in dist/deb/.
deb-test:
	bash test/bin/deb_install_test.sh

# Install the build and test dependencies (Debian 12, as root).
deps:
	bash test/bin/deps.sh

# The PGXN source bundle dist/taskq-<version>.zip, version META.json's:
# what git tracks at HEAD (git archive, as PGXN recommends: nothing
# untracked or built gets in), less what .gitattributes marks
# export-ignore, under one directory taskq-<version>/.  Uncommitted
# changes are not in it, hence the warning.
dist:
	@v=$$(python3 -c 'import json; print(json.load(open("META.json"))["version"])') && \
	mkdir -p dist && \
	if [ -n "$$(git status --porcelain --untracked-files=no)" ]; then \
		echo "make dist: uncommitted changes are not in the bundle (it is HEAD's)" >&2; fi && \
	git archive --format=zip --prefix=taskq-$$v/ -o dist/taskq-$$v.zip HEAD && \
	echo "dist/taskq-$$v.zip"

# make dist, then the bundle unpacked, built with PGXS and installed into a
# temporary directory, its files checked (test/bin/dist.sh).
check-dist:
	bash test/bin/dist.sh
