/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cdsm events on the generic netlink family "cdsm": queued from any context
 * (tracepoints included) into a fixed-size queue, sent by the worker.
 */
#ifndef _CDSM_NETLINK_H
#define _CDSM_NETLINK_H

#include <linux/types.h>
#include <linux/cdsm.h>

int cdsm_netlink_init(void);
void cdsm_netlink_exit(void);
void cdsm_event_app(enum cdsm_event event, u32 app_id);
void cdsm_event_task(enum cdsm_event event, u32 app_id, pid_t tid, pid_t tgid, u32 index,
		     const char *comm);
void cdsm_events_send(void);

#endif /* _CDSM_NETLINK_H */
