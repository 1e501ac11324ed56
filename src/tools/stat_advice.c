/*
 * stat_advice.c - the warning:, advice: and note: lines of prefetchfs-stat
 * (see stat_main.c).
 *
 * Warnings are what the daemon kept (the stats' "warnings": a server
 * ignoring Range, io_uring unavailable...) and what the numbers show went
 * wrong (failed reads, disk cache errors).  Advice names the option to
 * change and a value: the daemon's own (the stats' "advice"), and what is
 * read from the numbers here:
 *  - the fill is too big for its budget (3/4 of max_memory, or the disk
 *    cache's capacity less an eighth): the memory or cache_size that
 *    would hold it, rounded up to two digits, or cache_dir;
 *  - reads went past the disk cache because its writes lagged (staging,
 *    a tenth of max_memory, was full): more max_memory;
 *  - a server that ignores Range: what serves ranges, or a disk copy.
 * Notes are the daemon's (the stats' "notes"): what it saw of a reader
 * that an option of the mount's changes but no value is advised for (a
 * random reader's READs at the read-ahead's size: mmap read-around).
 * Each is wrapped at the screen's width (80 columns at most), never cut.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stat_int.h"

void pf_stat_wrap(const char *tag, const char *text)
{
	int width = pf_stat_width < 80 ? pf_stat_width : 80;
	int indent = (int)strlen(tag) + 2;
	int room;
	const char *p = text;
	bool first = true;

	if (width < 40)
		width = 40;
	room = width - indent;
	while (*p) {
		int n = (int)strlen(p);

		if (n > room) {
			/* the last space that keeps the line within room */
			n = room;
			while (n > 0 && p[n] != ' ')
				n--;
			if (n == 0)
				n = room;	/* one long word: cut it */
		}
		if (first)
			printf("%s: %.*s\n", tag, n, p);
		else
			printf("%*s%.*s\n", indent, "", n, p);
		first = false;
		p += n;
		while (*p == ' ')
			p++;
	}
}

/* "290M", "1.4G": @v bytes rounded up to two significant digits. */
static const char *about(char *buf, size_t size, double v)
{
	double unit = v >= 1024.0 * 1048576 ? 1024.0 * 1048576 : 1048576;
	double x = v / unit;
	double scale = x >= 10 ? pow(10, floor(log10(x)) - 1) : 0.1;

	x = ceil(x / scale - 1e-9) * scale;
	snprintf(buf, size, x >= 10 ? "%.0f%c" : "%.1f%c", x,
		 unit > 1048576 ? 'G' : 'M');
	return buf;
}

/* The fill could not start: what would hold the tree. */
static void fill_advice(const struct pf_stat_view *v)
{
	const struct pf_json *fl = pf_json_get(v->root, "fill");
	double total = pf_json_num(fl, "bytes_total", 0);
	double budget = pf_json_num(fl, "budget", 0);
	bool disk = strcmp(pf_json_str(fl, "budget_of", ""), "disk") == 0;
	const struct pf_json *dc = pf_stat_tier(v->root, "disk_cache");
	const char *root = pf_json_str(fl, "root", "");
	char msg[512], a[32], b[32];
	double have;

	if (strcmp(pf_json_str(fl, "state", ""), "too_big") != 0 ||
	    budget <= 0 || total <= 0)
		return;
	/* the budget is a fixed share of what holds it: scale that */
	have = disk ? pf_json_num(dc, "capacity", 0)
		    : pf_json_num(v->t, "memory_max", 0);
	about(a, sizeof(a), total * have / budget);
	if (disk)
		snprintf(msg, sizeof(msg), "the fill of %s%s (%s) does not fit "
			 "the disk cache: raise cache_size to about %s",
			 root[0] ? root : "/", root[0] ? "/" : "",
			 pf_stat_size(b, sizeof(b), total), a);
	else
		snprintf(msg, sizeof(msg), "the fill of %s%s (%s) does not fit "
			 "in 3/4 of max_memory: raise max_memory to about %s "
			 "or add cache_dir=DIR%s", root[0] ? root : "/",
			 root[0] ? "/" : "", pf_stat_size(b, sizeof(b), total),
			 a, dc ? "" : " (a disk cache)");
	pf_stat_wrap("advice", msg);
}

/* The disk cache: errors, and reads that went past it. */
static void disk_advice(const struct pf_stat_view *v)
{
	const struct pf_json *dc = pf_stat_tier(v->root, "disk_cache");
	double errors = pf_json_num(dc, "errors", 0);
	double uncached = pf_json_num(dc, "uncached", 0);
	char msg[512], a[32];

	if (!dc)
		return;
	if (errors > 0) {
		snprintf(msg, sizeof(msg), "the disk cache had %.0f I/O errors: "
			 "those blocks came from the source (the daemon's log "
			 "says which)", errors);
		pf_stat_wrap("warning", msg);
	}
	if (uncached > 0) {
		snprintf(msg, sizeof(msg), "%s went past the disk cache while its "
			 "writes lagged (staging, a tenth of max_memory, was "
			 "full): raise max_memory to keep them on disk",
			 pf_stat_size(a, sizeof(a), uncached));
		pf_stat_wrap("advice", msg);
	}
}

/* Each string of the array @key of the stats, as @tag lines. */
static void print_list(const struct pf_json *root, const char *key,
		       const char *tag)
{
	const struct pf_json *w = pf_json_get(root, key);

	if (!w || w->type != PF_JSON_ARR)
		return;
	for (w = w->child; w; w = w->next)
		if (w->type == PF_JSON_STR)
			pf_stat_wrap(tag, w->str);
}

/* Advice for what the daemon warned of. */
static void warning_advice(const struct pf_json *root)
{
	const struct pf_json *w = pf_json_get(root, "warnings");

	if (!w || w->type != PF_JSON_ARR)
		return;
	for (w = w->child; w; w = w->next)
		if (w->type == PF_JSON_STR && strstr(w->str, "ignores Range"))
			pf_stat_wrap("advice", "serve the files from a server "
				     "that answers Range requests (nginx, "
				     "S3), or keep them on local disk: "
				     "cache_dir=DIR, then prefetchfs-warm "
				     "MOUNTPOINT");
}

void pf_stat_advice(const struct pf_stat_view *v)
{
	double errors = pf_json_num(v->t, "fetch_errors", 0);
	char msg[256];

	print_list(v->root, "warnings", "warning");
	if (errors > 0) {
		snprintf(msg, sizeof(msg), "%.0f reads of the source failed "
			 "(their READs got an error; the daemon's log says "
			 "which)", errors);
		pf_stat_wrap("warning", msg);
	}
	warning_advice(v->root);
	print_list(v->root, "advice", "advice");
	/* the daemon's own advice on the fill, if any, says it already */
	if (!pf_json_get(v->root, "advice") ||
	    !pf_json_get(v->root, "advice")->child)
		fill_advice(v);
	disk_advice(v);
	print_list(v->root, "notes", "note");
}
