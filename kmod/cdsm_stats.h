/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cdsm counters: per-CPU, so that the fault path only increments a local
 * counter; summed when read.
 */
#ifndef _CDSM_STATS_H
#define _CDSM_STATS_H

#include <linux/percpu.h>
#include <linux/cdsm.h>

/**
 * enum cdsm_stat - the per-CPU counters, see struct cdsm_counters.
 * @CDSM_STAT_FAULTS:		faults seen.
 * @CDSM_STAT_TRACKED_FAULTS:	faults of tracked tasks recorded.
 * @CDSM_STAT_COMM_EVENTS:	communication events.
 * @CDSM_STAT_REARM_ARMED:	pages re-armed.
 * @CDSM_STAT_REARM_TAKEN:	hinting faults taken by tracked tasks.
 * @CDSM_STAT_DROPPED:		faults not recorded.
 * @CDSM_STAT_ALLOC_FAILURES:	allocations that failed.
 * @CDSM_STAT_EVENTS_LOST:	netlink events lost.
 * @CDSM_STAT_MIGRATED:		hinting faults that migrated the page.
 * @CDSM_NR_STATS:		number of counters.
 */
enum cdsm_stat {
	CDSM_STAT_FAULTS,
	CDSM_STAT_TRACKED_FAULTS,
	CDSM_STAT_COMM_EVENTS,
	CDSM_STAT_REARM_ARMED,
	CDSM_STAT_REARM_TAKEN,
	CDSM_STAT_DROPPED,
	CDSM_STAT_ALLOC_FAILURES,
	CDSM_STAT_EVENTS_LOST,
	CDSM_STAT_MIGRATED,
	CDSM_NR_STATS,
};

/**
 * struct cdsm_stats - one CPU's counters.
 * @v:	indexed by enum cdsm_stat.
 */
struct cdsm_stats {
	u64 v[CDSM_NR_STATS];
};

DECLARE_PER_CPU(struct cdsm_stats, cdsm_stats);

/**
 * cdsm_stat_add() - add to a counter of this CPU.
 * @s:	the counter.
 * @n:	the amount.
 */
static inline void cdsm_stat_add(enum cdsm_stat s, u64 n)
{
	this_cpu_add(cdsm_stats.v[s], n);
}

u64 cdsm_stat_sum(enum cdsm_stat s);

#endif /* _CDSM_STATS_H */
