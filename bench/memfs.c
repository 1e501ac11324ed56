/*
 * memfs - a minimal read-only FUSE filesystem serving one file from memory.
 * It is the "ceiling" reference: the fastest a FUSE filesystem whose data
 * is already in memory can be on this machine.
 *
 * Usage:
 *   bench/memfs [-f] [-o size=BYTES] MOUNTPOINT
 *   fusermount3 -u MOUNTPOINT
 *
 * The mount holds one file, /data, of size BYTES (default 1 GiB; suffixes
 * K, M, G, T are binary multiples).  Its bytes are generated once into a
 * malloc'd buffer before mounting, with the same pattern as
 * `bench/mkdata DIR 1 BYTES` writes to DIR/file-000000.bin, so the two can
 * be compared with cmp or `bench/trainer --check`.  READs are answered
 * with fuse_reply_buf() straight from the buffer by a multithreaded
 * session loop.  The file is opened with keep_cache=0 and without
 * direct_io, like slowfs and prefetchfs.
 *
 * Readiness: memfs mounts and then daemonizes, so the command returns
 * (status 0) once the filesystem is mounted; with -f it stays in the
 * foreground and prints "memfs: mounted ..." to stderr once mounted.
 * Kernel limits (-o max_background=, max_readahead=, ...) and thread
 * counts (-o max_threads=) take the usual libfuse options.
 */
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)

#include <fuse_lowlevel.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"

#define DATA_INO 2
#define DATA_NAME "data"

static struct {
	char *size_str;
	int show_help;
	uint64_t size;
	char *data;
	struct fuse_conn_info_opts *conn_opts;
} mf;

static void pf_obj_fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)mf.size;
		st->st_blocks = (blkcnt_t)((mf.size + 511) / 512);
	}
	st->st_blksize = 4096;
}

static void mf_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	fuse_apply_conn_info_opts(mf.conn_opts, conn);
}

static void mf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || strcmp(name, DATA_NAME)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = DATA_INO;
	e.attr_timeout = 86400.0;
	e.entry_timeout = 86400.0;
	pf_obj_fill_stat(DATA_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void mf_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	pf_obj_fill_stat(ino, &st);
	fuse_reply_attr(req, &st, 86400.0);
}

static void mf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t off, struct fuse_file_info *fi)
{
	static const char *const names[] = { ".", "..", DATA_NAME };
	char buf[512];
	size_t used = 0;
	off_t i;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (size > sizeof(buf))
		size = sizeof(buf);
	for (i = off; i < 3; i++) {
		struct stat st;
		size_t len;

		pf_obj_fill_stat(i == 2 ? DATA_INO : FUSE_ROOT_ID, &st);
		len = fuse_add_direntry(req, buf + used, size - used, names[i],
					&st, i + 1);
		if (len > size - used)
			break;
		used += len;
	}
	fuse_reply_buf(req, buf, used);
}

static void mf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != DATA_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fi->keep_cache = 0;
	fi->direct_io = 0;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void mf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	if (off < 0 || (uint64_t)off >= mf.size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > mf.size - (uint64_t)off)
		size = (size_t)(mf.size - (uint64_t)off);
	fuse_reply_buf(req, mf.data + off, size);
}

static const struct fuse_lowlevel_ops mf_ops = {
	.init = mf_init,
	.lookup = mf_lookup,
	.getattr = mf_getattr,
	.readdir = mf_readdir,
	.open = mf_open,
	.read = mf_read,
};

enum { KEY_HELP };

static const struct fuse_opt mf_opt_spec[] = {
	{ "size=%s", 0, 1 },
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_END
};

static int mf_opt_proc(void *data, const char *arg, int key,
		       struct fuse_args *outargs)
{
	(void)data;
	(void)arg;
	(void)outargs;
	if (key == KEY_HELP) {
		mf.show_help = 1;
		return 0;
	}
	return 1;
}

static void usage(const char *prog)
{
	printf(
"usage: %s [options] MOUNTPOINT\n"
"\n"
"Minimal in-memory FUSE filesystem with one read-only file, /data, whose\n"
"bytes equal those of `bench/mkdata DIR 1 SIZE` (DIR/file-000000.bin).\n"
"Mounts, then daemonizes (the command returns once mounted); -f keeps it\n"
"in the foreground. Unmount with: fusermount3 -u MOUNTPOINT\n"
"\n"
"memfs options:\n"
"    -o size=BYTES          size of /data (default 1G; K/M/G/T suffixes)\n"
"    -f                     foreground\n"
"    -h, --help             this help\n"
"\n"
"libfuse options:\n", prog);
	fflush(stdout);
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd = { 0 };
	struct fuse_loop_config *cfg;
	struct fuse_session *se = NULL;
	int handlers = 0, ret = 1;

	/* fuse_opt stores "size=%s" through the first member. */
	if (fuse_opt_parse(&args, &mf.size_str, mf_opt_spec, mf_opt_proc)) {
		fprintf(stderr, "memfs: bad arguments (see memfs --help)\n");
		return 1;
	}
	if (mf.show_help) {
		usage(argv[0]);
		return 0;
	}
	mf.size = 1ULL << 30;
	if (mf.size_str && parse_size(mf.size_str, &mf.size)) {
		fprintf(stderr, "memfs: bad size '%s' (e.g. 1G, 256M, 4096)\n",
			mf.size_str);
		goto out;
	}
	if (fuse_opt_insert_arg(&args, 1, "-oro,fsname=memfs,subtype=memfs"))
		goto out;
	mf.conn_opts = fuse_parse_conn_info_opts(&args);
	if (!mf.conn_opts || fuse_parse_cmdline(&args, &cmd))
		goto out;
	if (cmd.show_version) {
		printf("memfs using FUSE library %s\n", fuse_pkgversion());
		ret = 0;
		goto out;
	}
	if (!cmd.mountpoint) {
		fprintf(stderr,
			"memfs: need a MOUNTPOINT (see memfs --help)\n");
		goto out;
	}

	mf.data = malloc(mf.size ? mf.size : 1);
	if (!mf.data) {
		fprintf(stderr, "memfs: cannot allocate %llu bytes\n",
			(unsigned long long)mf.size);
		goto out;
	}
	/* bench/mkdata's file-000000.bin of seed 0 */
	fill_pattern(mf.data, mf.size, pattern_key(0, 0), 0);

	se = fuse_session_new(&args, &mf_ops, sizeof(mf_ops), NULL);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se))
		goto out;
	handlers = 1;
	if (fuse_session_mount(se, cmd.mountpoint))
		goto out;
	fprintf(stderr, "memfs: mounted /data (%llu bytes) on %s\n",
		(unsigned long long)mf.size, cmd.mountpoint);
	fflush(stderr);
	if (fuse_daemonize(cmd.foreground) == 0) {
		cfg = fuse_loop_cfg_create();
		if (cfg) {
			fuse_loop_cfg_set_max_threads(cfg, cmd.max_threads);
			if (cmd.max_idle_threads != UINT_MAX)
				fuse_loop_cfg_set_idle_threads(
					cfg, cmd.max_idle_threads);
			ret = fuse_session_loop_mt(se, cfg) != 0;
			fuse_loop_cfg_destroy(cfg);
		}
	}
	fuse_session_unmount(se);
out:
	if (handlers)
		fuse_remove_signal_handlers(se);
	if (se)
		fuse_session_destroy(se);
	free(cmd.mountpoint);
	free(mf.data);
	free(mf.conn_opts);
	free(mf.size_str);
	fuse_opt_free_args(&args);
	return ret;
}
