/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - KEYCACHE_DEBUG's log and the errors keycache raises (debug.c).
 * The reports are written above (core/report.c), through KC_DEBUG's hook.
 */
#ifndef KC_DIAG_H
#define KC_DIAG_H

#include "common/common.h"
#include "quirks/quirks.h"

/* debug.c: raise an error at the start (and write it to the log) */
#define KC_R_INIT_FAILED      1
#define KC_R_BAD_CONFIG       2
#define KC_R_INNER_MISSING    3
void kc_raise_at(KC_PROVCTX *pctx, int reason, const char *file, int line,
                 const char *fmt, ...);
#define kc_raise(pctx, reason, ...) \
    kc_raise_at(pctx, reason, KC_FILE_NAME, __LINE__, __VA_ARGS__)

/* debug.c: KEYCACHE_DEBUG=file:PATH,level:N,interval:S */
struct kc_debug_st {
    KC_DEBUG *next;              /* live instances, under dbg_lock */
    KC_PROVCTX *pctx;
    int level;
    uint64_t interval;           /* seconds between reports, 0 = none */
    KC_LOGTO to;                 /* where lines go, their prefix */
    time_t next_report;          /* whoever advances it writes the report */
    int linked, reported;
    KC_COUNTERS base[KC_STAT_SLOTS]; /* counters inherited over fork() */
    /* writes a report, when kc_debug_tick() finds one due (core/report.c) */
    void (*report)(KC_DEBUG *d, const char *when);
};
void kc_debug_init(KC_PROVCTX *pctx);
/* Append one log line to buf (of size len, filled to *used). */
void kc_debug_line(const KC_DEBUG *d, char *buf, size_t len, size_t *used,
                   const char *fmt, ...);
int kc_debug_level(const KC_PROVCTX *pctx);
uint64_t kc_debug_interval(const KC_PROVCTX *pctx);
void kc_debug_log(KC_PROVCTX *pctx, int level, const char *fmt, ...);
/* from kc_cache_get() when pctx->timed: a periodic report if one is due */
void kc_debug_tick(KC_PROVCTX *pctx, time_t now);

#endif
