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

FUSE_CFLAGS := $(shell $(PKG_CONFIG) --cflags fuse3)
FUSE_LIBS := $(shell $(PKG_CONFIG) --libs fuse3)
URING_LIBS := $(shell $(PKG_CONFIG) --libs liburing)
CURL_LIBS := $(shell $(PKG_CONFIG) --libs libcurl)
# the credential sources' answers: STS XML (expat), JSON (jansson)
PARSE_CFLAGS := $(shell $(PKG_CONFIG) --cflags expat jansson)
PARSE_LIBS := $(shell $(PKG_CONFIG) --libs expat jansson)
CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags check)
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs check)
# the disk cache's MAC (ChaCha20-Poly1305)
CRYPTO_CFLAGS := $(shell $(PKG_CONFIG) --cflags libcrypto)
CRYPTO_LIBS := $(shell $(PKG_CONFIG) --libs libcrypto)
LIBS := $(URING_LIBS) $(CURL_LIBS) $(PARSE_LIBS) $(CRYPTO_LIBS) -lpthread -lm

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
#   util/           pool, strings, JSON, log, io_uring, trace file
#   tools/          prefetchfs-stat
#Everything but FRONT_SRCS and tools / is the FUSE - free core library.
LIB_DIRS := front engine engine/ahead policy backend/posix backend/http \
	backend/s3auth diskcache util
FRONT_SRCS := src/front/main.c src/front/fuse_ll.c
STAT_SRCS := src/tools/stat_main.c
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
VERSION := $(shell sed -n 's/^\#define PF_VERSION "\(.*\)"/\1/p' src/front/main.c)
# man pages: all generated from mount/prefetchfs.man by mount/man.awk
MAN8 := mount/prefetchfs.8 mount/mount.fuse.prefetchfs.8
MAN1 := mount/prefetchfs-stat.1
EXAMPLES := $(wildcard examples/*.py) mount/fstab.example \
	mount/mnt-imagenet.mount mount/imagenet.conf
FIO_EXAMPLES := $(wildcard examples/fio/*)

all: prefetchfs prefetchfs-stat man

$(LIB): $(LIB_OBJS)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

ALL_OBJS := $(LIB_OBJS) $(FRONT_OBJS) $(STAT_SRCS:.c=.o)
$(ALL_OBJS): %.o: %.c
	$(QUIET_CC)$(CC) $(CFLAGS) $(FUSE_CFLAGS) $(PARSE_CFLAGS) \
		$(CRYPTO_CFLAGS) -c -o $@ $<

prefetchfs: $(FRONT_OBJS) $(LIB)
	$(QUIET_LINK)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(FRONT_OBJS) $(LIB) \
		$(FUSE_LIBS) $(LIBS)

prefetchfs-stat: $(STAT_SRCS:.c=.o) $(LIB)
	$(QUIET_LINK)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(STAT_SRCS:.c=.o) \
		$(LIB) -lm

man: $(MAN8) $(MAN1)

src/tools/stat_main.o: override CFLAGS += -DPF_VERSION='"$(VERSION)"'

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
check-run: prefetchfs prefetchfs-stat man tests $(BENCH_BINS)
	$(Q)tests/run -j $(CHECK_JOBS) $(CHECK_BINS)

deps:
	$(Q)tests/deps.sh

# The end-to-end demo: installs, builds, runs bench/demo.sh (see README).
demo:
	$(Q)tests/deps.sh
	$(Q)$(MAKE) --no-print-directory prefetchfs $(BENCH_BINS)
	$(Q)bench/demo.sh

# The daemon, prefetchfs-stat, the mount helper (in MOUNTHELPERDIR), man
# pages, the systemd service template and the examples.  The helper and
# the template get BINDIR written into them.
install: prefetchfs prefetchfs-stat man
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MOUNTHELPERDIR) \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(DOCDIR)/examples/fio
	$(INSTALL) -m 755 prefetchfs prefetchfs-stat $(DESTDIR)$(BINDIR)
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

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/prefetchfs $(DESTDIR)$(BINDIR)/prefetchfs-stat \
		$(DESTDIR)$(MOUNTHELPERDIR)/mount.fuse.prefetchfs \
		$(DESTDIR)$(SYSTEMDUNITDIR)/prefetchfs@.service \
		$(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(MAN8))) \
		$(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MAN1))) \
		$(addprefix $(DESTDIR)$(DOCDIR)/examples/,$(notdir $(EXAMPLES))) \
		$(addprefix $(DESTDIR)$(DOCDIR)/examples/fio/,$(notdir $(FIO_EXAMPLES)))
	-rmdir $(DESTDIR)$(DOCDIR)/examples/fio $(DESTDIR)$(DOCDIR)/examples \
		$(DESTDIR)$(DOCDIR) 2>/dev/null

clean:
	rm -f prefetchfs prefetchfs-stat $(LIB) $(ALL_OBJS) $(ALL_OBJS:.o=.d) $(CHECK_BINS) \
		tests/*.d $(TEST_HELPER_BINS) tests/helpers/*.d $(BENCH_BINS) \
		bench/*.d $(MAN8) $(MAN1)
	rm -f $(FUZZ_BINS)

.PHONY: all man tests bench check check-run deps demo install uninstall clean
.PHONY: fuzz fuzz-run
-include $(LIB_SRCS:.c=.d) $(FRONT_SRCS:.c=.d) $(STAT_SRCS:.c=.d) \
	$(CHECK_SRCS:.c=.d) $(BENCH_SRCS:.c=.d) $(TEST_HELPER_SRCS:.c=.d)
