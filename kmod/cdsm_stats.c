// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm counters (see cdsm_stats.h).
 */
#include <linux/cpumask.h>

#include "cdsm_stats.h"

DEFINE_PER_CPU(struct cdsm_stats, cdsm_stats);

/**
 * cdsm_stat_sum() - a counter summed over every CPU.
 * @s:	the counter.
 *
 * Return: the total since load.
 */
u64 cdsm_stat_sum(enum cdsm_stat s)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu(cdsm_stats, cpu).v[s];
	return sum;
}
