/*
 * stat_int.h - what the files of prefetchfs-stat share (not installed):
 *   stat_main.c    the command line, reading the stats file, the loop
 *   stat_frame.c   one screen: totals, tiers, streams, plans
 *   stat_advice.c  the warning:, advice: and note: lines, wrapped to the
 *                  screen
 *
 * One thread; nothing here is thread-safe.
 */
#ifndef PF_STAT_INT_H
#define PF_STAT_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "pf_json.h"

/* One reading of the stats file. */
struct pf_stat_snap {
	char *text;
	size_t len;
	struct pf_json *root;
	double t;		/* CLOCK_MONOTONIC seconds when read */
};

/* A screen is drawn from the latest reading and the one before (NULL on
 * the first), @dt seconds apart. */
struct pf_stat_view {
	const struct pf_json *root;
	const struct pf_json *proot;	/* NULL: no previous reading */
	const struct pf_json *t;	/* "totals" */
	const struct pf_json *pt;	/* the previous "totals", or NULL */
	double dt;			/* 0 on the first screen */
};

/* The columns of the screen; lines are cut there (pf_stat_line), or
 * wrapped (pf_stat_wrap).  Set by pf_stat_frame(). */
extern int pf_stat_width;

/* printf() of one line, cut at the screen's width, as top does. */
__attribute__((format(printf, 1, 2)))
void pf_stat_line(const char *fmt, ...);

/*
 * "@tag: @text" wrapped at the screen's width (at most 80 columns, at
 * least 40), at spaces, the lines after the first indented under the
 * text: a warning is read whole, never cut.
 */
void pf_stat_wrap(const char *tag, const char *text);

/* "12.3M": bytes with a binary suffix, in at most 7 columns. */
const char *pf_stat_size(char *buf, size_t size, double v);

/* @key of @cur minus @key of @prev (the whole value if @prev is NULL),
 * never below 0. */
double pf_stat_delta(const struct pf_json *cur, const struct pf_json *prev,
		     const char *key);

/* The disk cache's or the shared cache's counters (@name "disk_cache",
 * "shared_cache"): at the top of the stats or in "transport"; or NULL. */
const struct pf_json *pf_stat_tier(const struct pf_json *root,
				   const char *name);

/* The daemon's warnings, the advice it gives and the advice read from the
 * numbers (fill too big, the disk cache bypassed...), then its notes, one
 * after another. */
void pf_stat_advice(const struct pf_stat_view *v);

/* One screen. */
void pf_stat_frame(const char *mnt, const struct pf_stat_snap *cur,
		   const struct pf_stat_snap *prev, bool tty);

#endif
