# prefetchfs - one top-level Makefile.
#
#   make                 build ./prefetchfs
#   make check           unit suites (Check) then mount tests
#   make SANITIZE=address,undefined check
#   make DEVELOPER=1     adds -Werror
#   make bench           build the benchmark tools in bench/
#   make fuzz            build the listing parsers' libFuzzer targets (clang)
#   make fuzz-run        run each for FUZZ_SECONDS (default 20)
#   make install         PREFIX=/usr/local, DESTDIR=; make uninstall
#   make docs            docs/options.md's table from prefetchfs --help-table
#   make demo            the end-to-end demo (demo/demo.sh)
#   make deb             prefetchfs_VERSION_ARCH.deb (docs/packaging.md)
#   make V=1             show the commands

CC ?= cc
CFLAGS ?= -O2 -g
PKG_CONFIG ?= pkg-config

override CFLAGS += -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -pthread \
	-Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes \
	-Wwrite-strings -Wformat=2 -Wvla -Wshadow -Iinclude -MMD -MP
ifeq ($(DEVELOPER),1)
override CFLAGS += -Werror
endif
ifneq ($(SANITIZE),)
override CFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=$(SANITIZE) \
	-fno-omit-frame-pointer
override LDFLAGS += -fsanitize=$(SANITIZE)
endif

# The pkg-config packages a build needs, each with the Debian package that
# has it (docs/packaging.md lists the build packages).  One missing stops
# make with one line naming what to install, before pkg-config's own
# output (silenced below) could repeat for each flag.  Goals that build
# nothing (clean, uninstall, deps, check: it installs them first) skip it.
PC_BUILD := fuse3:libfuse3-dev liburing:liburing-dev \
	libcurl:libcurl4-openssl-dev expat:libexpat1-dev jansson:libjansson-dev \
	libcrypto:libssl-dev libmemcached:libmemcached-dev
PC_TEST := check:check
pc_missing = $(foreach p,$(1),$(if $(shell $(PKG_CONFIG) --exists \
	$(firstword $(subst :, ,$(p))) 2>/dev/null && echo y),,$(lastword \
	$(subst :, ,$(p)))))
NOBUILD_GOALS := clean uninstall deps check demo help
BUILD_GOALS := $(filter-out $(NOBUILD_GOALS),$(or $(MAKECMDGOALS),all))
ifneq ($(BUILD_GOALS),)
ifeq ($(shell command -v $(PKG_CONFIG) 2>/dev/null),)
$(error $(PKG_CONFIG) not found: apt-get install pkg-config)
endif
# the Check suites need check too
PC_NEED := $(PC_BUILD) $(if $(filter tests check-run tests/check_%,\
	$(BUILD_GOALS)),$(PC_TEST))
PC_MISSING := $(strip $(call pc_missing,$(PC_NEED)))
ifneq ($(PC_MISSING),)
$(error missing build packages: apt-get install $(PC_MISSING))
endif
endif

FUSE_CFLAGS := $(shell $(PKG_CONFIG) --cflags fuse3 2>/dev/null)
FUSE_LIBS := $(shell $(PKG_CONFIG) --libs fuse3 2>/dev/null)
URING_LIBS := $(shell $(PKG_CONFIG) --libs liburing 2>/dev/null)
CURL_LIBS := $(shell $(PKG_CONFIG) --libs libcurl 2>/dev/null)
# the credential sources' answers: STS XML (expat), JSON (jansson)
PARSE_CFLAGS := $(shell $(PKG_CONFIG) --cflags expat jansson 2>/dev/null)
PARSE_LIBS := $(shell $(PKG_CONFIG) --libs expat jansson 2>/dev/null)
# the shared cache tier's memcached clients (libmemcached)
TIER_CFLAGS := $(shell $(PKG_CONFIG) --cflags libmemcached 2>/dev/null)
TIER_LIBS := $(shell $(PKG_CONFIG) --libs libmemcached 2>/dev/null)
CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags check 2>/dev/null)
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs check 2>/dev/null)
# the disk cache's MAC (ChaCha20-Poly1305), the shared tier's keys and
# values
CRYPTO_CFLAGS := $(shell $(PKG_CONFIG) --cflags libcrypto 2>/dev/null)
CRYPTO_LIBS := $(shell $(PKG_CONFIG) --libs libcrypto 2>/dev/null)
LIBS := $(URING_LIBS) $(CURL_LIBS) $(PARSE_LIBS) $(CRYPTO_LIBS) $(TIER_LIBS) \
	-lpthread -lm

ifeq ($(V),1)
Q :=
QUIET_CC :=
QUIET_LINK :=
QUIET_AR :=
QUIET_GEN :=
else
Q := @
QUIET_CC = @echo '  CC      $@';
QUIET_LINK = @echo '  LINK    $@';
QUIET_AR = @echo '  AR      $@';
endif

# The folders of src/, along the data path (docs/design.md has the map):
#   front/          the front end: main(), options, inodes, the guard;
#                   its FUSE operations (FRONT_SRCS) are not in the library
#   engine/         the READ path, block cache, fetches, read-ahead, stats
#   engine/ahead/   read-ahead across files: next file, in-order
#                   directories and fill, declared plans, the opener pool
#   policy/         pattern learning, the planner, the plan follower
#   backend/posix/  a directory of the local system (io_uring, pread)
#   backend/http/   HTTP(S) and S3 object storage: objstore, curl, listings
#   backend/s3auth/ S3 configuration and the AWS credential chain
#   diskcache/      the disk cache, a decorator of any backend
#   sharedcache/    the tier shared by a cluster's nodes, on memcached,
#                   a decorator of any backend
#   util/           pool, strings, JSON, log, io_uring, trace file
#   tools/          prefetchfs-stat, prefetchfs-warm
#Everything but FRONT_SRCS and tools / is the FUSE - free core library.
LIB_DIRS := front engine engine/ahead policy backend/posix backend/http \
	backend/s3auth diskcache sharedcache util
FRONT_SRCS := src/front/main.c src/front/fuse_ll.c src/front/meta.c \
	src/front/fuse_push.c src/front/fuse_signals.c src/front/backend_stack.c
STAT_SRCS := src/tools/stat_main.c src/tools/stat_frame.c \
	src/tools/stat_advice.c
WARM_SRCS := src/tools/warm.c
LIB_SRCS := $(filter-out $(FRONT_SRCS),\
	$(foreach d,$(LIB_DIRS),$(wildcard src/$(d)/*.c)))
LIB_OBJS := $(LIB_SRCS:.c=.o)
FRONT_OBJS := $(FRONT_SRCS:.c=.o)
LIB := libprefetchfs.a

CHECK_SRCS := $(wildcard tests/check_*.c)
CHECK_BINS := $(CHECK_SRCS:.c=)
TEST_HELPER_SRCS := $(wildcard tests/helpers/*.c)
TEST_HELPER_BINS := $(TEST_HELPER_SRCS:.c=)
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(BENCH_SRCS:.c=)

# Installation.  mount(8) looks for its mount.fuse.TYPE helpers in /sbin
# only, whatever PREFIX is.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/prefetchfs
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
MOUNTHELPERDIR ?= /sbin
INSTALL ?= install
# The Python package (python/): where Debian's system python3 finds it,
# /usr/lib/python3/dist-packages for PREFIX=/usr (the .deb),
# PREFIX/lib/python3.X/dist-packages otherwise (/usr/local's is on its
# path); laid out by its build backend, with a .dist-info.  Without
# $(PYTHON) make install says so and leaves the module out.
PYTHON ?= /usr/bin/python3
PYTHON_INSTALLER ?= make
ifeq ($(PREFIX),/usr)
PYTHONDIR ?= $(PREFIX)/lib/python3/dist-packages
else
PYTHONDIR ?= $(PREFIX)/lib/python$(shell $(PYTHON) -c \
	'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)/dist-packages
endif
PYBUILD := python/_backend/prefetchfs_build.py
VERSION := $(shell sed -n 's/^\#define PF_VERSION "\(.*\)"/\1/p' src/front/main.c)
# man pages: all generated from mount/prefetchfs.man by mount/man.awk
MAN8 := mount/prefetchfs.8 mount/mount.fuse.prefetchfs.8
MAN1 := mount/prefetchfs-stat.1 mount/prefetchfs-warm.1
EXAMPLES := $(wildcard examples/*.py) mount/fstab.example \
	mount/mnt-imagenet.mount mount/imagenet.conf
FIO_EXAMPLES := $(wildcard examples/fio/*)

all: prefetchfs prefetchfs-stat prefetchfs-warm man

$(LIB): $(LIB_OBJS)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

ALL_OBJS := $(LIB_OBJS) $(FRONT_OBJS) $(STAT_SRCS:.c=.o) $(WARM_SRCS:.c=.o)
$(ALL_OBJS): %.o: %.c
	$(QUIET_CC)$(CC) $(CFLAGS) $(FUSE_CFLAGS) $(PARSE_CFLAGS) \
		$(CRYPTO_CFLAGS) $(TIER_CFLAGS) -c -o $@ $<

prefetchfs: $(FRONT_OBJS) $(LIB)
	$(QUIET_LINK)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(FRONT_OBJS) $(LIB) \
		$(FUSE_LIBS) $(LIBS)

prefetchfs-stat: $(STAT_SRCS:.c=.o) $(LIB)
	$(QUIET_LINK)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(STAT_SRCS:.c=.o) \
		$(LIB) -lm

prefetchfs-warm: $(WARM_SRCS:.c=.o) $(LIB)
	$(QUIET_LINK)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(WARM_SRCS:.c=.o) \
		$(LIB) -lm

man: $(MAN8) $(MAN1)

src/tools/stat_main.o src/tools/warm.o: override CFLAGS += \
	-DPF_VERSION='"$(VERSION)"'

MAN_GEN = awk -v page=$* -v version='$(VERSION)' -f mount/man.awk \
	mount/prefetchfs.man >$@.tmp && mv $@.tmp $@
mount/%.8: mount/prefetchfs.man mount/man.awk
	$(QUIET_GEN)$(MAN_GEN)
mount/%.1: mount/prefetchfs.man mount/man.awk
	$(QUIET_GEN)$(MAN_GEN)

tests/check_%: tests/check_%.c $(LIB)
	$(QUIET_LINK)$(CC) $(CFLAGS) $(CHECK_CFLAGS) $(LDFLAGS) -o $@ $< \
		$(LIB) $(CHECK_LIBS) $(LIBS)

tests/helpers/%: tests/helpers/%.c
	$(QUIET_LINK)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -lpthread

bench/%: bench/%.c
	$(QUIET_LINK)$(CC) $(CFLAGS) $(FUSE_CFLAGS) $(LDFLAGS) -o $@ $< \
		$(FUSE_LIBS) -lpthread -lm

# libFuzzer targets, one per listing parser; tests/fuzz/run.sh runs them.
FUZZ_CC ?= clang-14
FUZZ_SECONDS ?= 20
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRCS:.c=)

# the credential answers' parsers: their own file and expat, jansson
tests/fuzz/fuzz_creds: tests/fuzz/fuzz_creds.c src/backend/s3auth/creds_parse.c \
		src/util/err.c include/pf_creds.h
	$(QUIET_LINK)$(FUZZ_CC) -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -g -O1 -std=c11 -D_GNU_SOURCE \
		-Iinclude $(PARSE_CFLAGS) -o $@ $< src/backend/s3auth/creds_parse.c \
		src/util/err.c \
		$(PARSE_LIBS)

FUZZ_LISTING := src/backend/http/listing.c src/backend/http/listing_s3.c \
		src/backend/http/listing_html.c src/backend/http/listing_json.c \
		src/util/strbuf.c src/util/json.c
tests/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_LISTING) \
		src/backend/http/listing_int.h include/pf_listing.h include/pf_strbuf.h \
		include/pf_json.h
	$(QUIET_LINK)$(FUZZ_CC) -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -g -O1 -std=c11 -D_GNU_SOURCE \
		-Iinclude -o $@ $< $(FUZZ_LISTING)

fuzz: $(FUZZ_BINS)
fuzz-run: fuzz
	$(Q)tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BINS)

tests: $(CHECK_BINS) $(TEST_HELPER_BINS)
bench: prefetchfs $(BENCH_BINS)

# Installs what is missing (Debian), builds, then runs every Check suite
# and the mount tests; tests/run reports what it ran.
check:
	$(Q)tests/deps.sh
	$(Q)$(MAKE) --no-print-directory check-run

# CHECK_JOBS: tests/run -j (the Check suites and the mount tests marked
# parallel share the machine that many at a time; CHECK_JOBS=1: one by one)
CHECK_JOBS ?= 2
check-run: prefetchfs prefetchfs-stat prefetchfs-warm man tests $(BENCH_BINS)
	$(Q)tests/run -j $(CHECK_JOBS) $(CHECK_BINS)

deps:
	$(Q)tests/deps.sh

# docs/options.md's table is `prefetchfs --help-table` (the options table
# of src/front/opts.c); tests/mount_install.sh checks that they agree.
# This writes the table again, below the line that says it is generated.
docs: prefetchfs
	$(Q)./prefetchfs --help-table >docs/options.md.tab
	$(Q)awk 'FNR == NR { t = t $$0 "\n"; next } \
		skip && /^\|/ { next } { skip = 0 } { print } \
		/^<!-- generated: make docs/ { printf "%s", t; skip = 1 }' \
		docs/options.md.tab docs/options.md >docs/options.md.tmp
	$(Q)mv docs/options.md.tmp docs/options.md && rm -f docs/options.md.tab

# The end-to-end demo: installs, builds, runs demo/demo.sh (see README).
demo:
	$(Q)tests/deps.sh
	$(Q)$(MAKE) --no-print-directory prefetchfs $(BENCH_BINS)
	$(Q)demo/demo.sh

# The daemon, prefetchfs-stat and prefetchfs-warm, the mount helper (in MOUNTHELPERDIR), man
# pages, the systemd service template, the examples and the Python
# package (in PYTHONDIR).  The helper and the template get BINDIR written
# into them.
install: prefetchfs prefetchfs-stat prefetchfs-warm man
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MOUNTHELPERDIR) \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(DOCDIR)/examples/fio
	$(INSTALL) -m 755 prefetchfs prefetchfs-stat prefetchfs-warm \
		$(DESTDIR)$(BINDIR)
	sed 's|@BINDIR@|$(BINDIR)|g' mount/mount.fuse.prefetchfs.in \
		>$(DESTDIR)$(MOUNTHELPERDIR)/mount.fuse.prefetchfs
	chmod 755 $(DESTDIR)$(MOUNTHELPERDIR)/mount.fuse.prefetchfs
	sed 's|@BINDIR@|$(BINDIR)|g' mount/prefetchfs@.service.in \
		>$(DESTDIR)$(SYSTEMDUNITDIR)/prefetchfs@.service
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/prefetchfs@.service
	$(INSTALL) -m 644 $(MAN8) $(DESTDIR)$(MANDIR)/man8
	$(INSTALL) -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1
	$(INSTALL) -m 644 $(EXAMPLES) $(DESTDIR)$(DOCDIR)/examples
	$(INSTALL) -m 644 $(FIO_EXAMPLES) $(DESTDIR)$(DOCDIR)/examples/fio
	@if command -v $(PYTHON) >/dev/null 2>&1; then \
		echo "$(PYTHON) $(PYBUILD) install $(DESTDIR)$(PYTHONDIR) $(PYTHON_INSTALLER)"; \
		$(PYTHON) $(PYBUILD) install $(DESTDIR)$(PYTHONDIR) $(PYTHON_INSTALLER); \
	else \
		echo "make install: no $(PYTHON): the Python module is not installed (PYTHON=)"; \
	fi

# make deb: prefetchfs_VERSION_ARCH.deb in DEB_OUT, built by
# packaging/deb/build.sh (see its header) from a copy of the sources in
# DEB_BUILD, with Debian's build flags, installed with PREFIX=/usr.
DEB_OUT ?= .
DEB_BUILD ?= build/deb
deb:
	$(Q)packaging/deb/build.sh $(VERSION) $(DEB_OUT) $(DEB_BUILD)

uninstall:
	rm -rf $(DESTDIR)$(PYTHONDIR)/prefetchfs \
		$(DESTDIR)$(PYTHONDIR)/prefetchfs-[0-9]*.dist-info
	rm -f $(DESTDIR)$(BINDIR)/prefetchfs $(DESTDIR)$(BINDIR)/prefetchfs-stat \
		$(DESTDIR)$(BINDIR)/prefetchfs-warm \
		$(DESTDIR)$(MOUNTHELPERDIR)/mount.fuse.prefetchfs \
		$(DESTDIR)$(SYSTEMDUNITDIR)/prefetchfs@.service \
		$(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(MAN8))) \
		$(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MAN1))) \
		$(addprefix $(DESTDIR)$(DOCDIR)/examples/,$(notdir $(EXAMPLES))) \
		$(addprefix $(DESTDIR)$(DOCDIR)/examples/fio/,$(notdir $(FIO_EXAMPLES)))
	-rmdir $(DESTDIR)$(DOCDIR)/examples/fio $(DESTDIR)$(DOCDIR)/examples \
		$(DESTDIR)$(DOCDIR) 2>/dev/null

clean:
	rm -f prefetchfs prefetchfs-stat prefetchfs-warm $(LIB) $(ALL_OBJS) $(ALL_OBJS:.o=.d) $(CHECK_BINS) \
		tests/*.d $(TEST_HELPER_BINS) tests/helpers/*.d $(BENCH_BINS) \
		bench/*.d $(MAN8) $(MAN1)
	rm -f $(FUZZ_BINS)
	rm -rf build

.PHONY: all man tests bench check check-run deps docs demo install deb \
	uninstall clean
.PHONY: fuzz fuzz-run
-include $(LIB_SRCS:.c=.d) $(FRONT_SRCS:.c=.d) $(STAT_SRCS:.c=.d) \
	$(WARM_SRCS:.c=.d) \
	$(CHECK_SRCS:.c=.d) $(BENCH_SRCS:.c=.d) $(TEST_HELPER_SRCS:.c=.d)
