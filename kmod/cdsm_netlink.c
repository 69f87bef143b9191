// SPDX-License-Identifier: GPL-2.0
/*
 * cdsm events on generic netlink. Producers run in atomic context, so an
 * event is only copied into a fixed queue there; the worker builds and
 * multicasts the messages with GFP_KERNEL. A full queue loses the event and
 * counts it (CDSM_STAT_EVENTS_LOST).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/spinlock.h>
#include <linux/string.h>
#include <net/genetlink.h>

#include "cdsm_netlink.h"
#include "cdsm_stats.h"

#define CDSM_EVENT_QUEUE_LEN 1024

/**
 * struct cdsm_event_rec - a queued event.
 * @event:	enum cdsm_event.
 * @app_id:	the application.
 * @tid:	the task, for task events.
 * @tgid:	its process.
 * @index:	its index in the application.
 * @comm:	its command name.
 */
struct cdsm_event_rec {
	u32 event;
	u32 app_id;
	pid_t tid;
	pid_t tgid;
	u32 index;
	char comm[CDSM_COMM_LEN];
};

static struct cdsm_event_rec cdsm_event_ring[CDSM_EVENT_QUEUE_LEN];
static unsigned int cdsm_event_head, cdsm_event_tail;
static DEFINE_SPINLOCK(cdsm_event_lock);

/*
 * Events name every tracked task of every user: joining the group needs
 * CAP_SYS_ADMIN. genl_bind() checks the flag with ns_capable() in the
 * socket's network namespace's user namespace; the family is not netnsok,
 * so it exists only in the initial network namespace, whose user namespace
 * is the initial one (6.1 and 6.12 both have the flag).
 */
static const struct genl_multicast_group cdsm_mcgrps[] = {
	{ .name = CDSM_GENL_MCGRP, .flags = GENL_MCAST_CAP_SYS_ADMIN },
};

static struct genl_family cdsm_genl_family = {
	.name = CDSM_GENL_NAME,
	.version = CDSM_GENL_VERSION,
	.maxattr = CDSM_A_MAX,
	.module = THIS_MODULE,
	.mcgrps = cdsm_mcgrps,
	.n_mcgrps = ARRAY_SIZE(cdsm_mcgrps),
};

/**
 * cdsm_netlink_init() - register the generic netlink family.
 *
 * Return: 0 or the error of genl_register_family().
 */
int cdsm_netlink_init(void)
{
	int err = genl_register_family(&cdsm_genl_family);

	if (err)
		pr_err("cannot register generic netlink family %s: %d\n",
		       CDSM_GENL_NAME, err);
	return err;
}

/**
 * cdsm_netlink_exit() - unregister the family.
 */
void cdsm_netlink_exit(void)
{
	genl_unregister_family(&cdsm_genl_family);
}

/*
 * Queues an event with its task fields (zero for application events).
 * Context: any but hard interrupt; does not sleep or allocate.
 */
static void cdsm_event_queue(enum cdsm_event event, u32 app_id, pid_t tid, pid_t tgid,
			     u32 index, const char *comm)
{
	struct cdsm_event_rec *e;
	unsigned long flags;

	spin_lock_irqsave(&cdsm_event_lock, flags);
	if (cdsm_event_head - cdsm_event_tail >= CDSM_EVENT_QUEUE_LEN) {
		spin_unlock_irqrestore(&cdsm_event_lock, flags);
		cdsm_stat_add(CDSM_STAT_EVENTS_LOST, 1);
		return;
	}
	e = &cdsm_event_ring[cdsm_event_head++ % CDSM_EVENT_QUEUE_LEN];
	memset(e, 0, sizeof(*e));
	e->event = event;
	e->app_id = app_id;
	e->tid = tid;
	e->tgid = tgid;
	e->index = index;
	if (comm)
		memcpy(e->comm, comm, sizeof(e->comm));
	spin_unlock_irqrestore(&cdsm_event_lock, flags);
}

/**
 * cdsm_event_app() - queue an application event for the worker to send.
 * @event:	CDSM_EVENT_APP_STARTED or CDSM_EVENT_APP_ENDED.
 * @app_id:	the application.
 *
 * Context: any but hard interrupt; does not sleep or allocate.
 */
void cdsm_event_app(enum cdsm_event event, u32 app_id)
{
	cdsm_event_queue(event, app_id, 0, 0, 0, NULL);
}

/**
 * cdsm_event_task() - queue a task event for the worker to send.
 * @event:	CDSM_EVENT_TASK_JOINED or CDSM_EVENT_TASK_EXITED.
 * @app_id:	the task's application.
 * @tid:	the task's thread id.
 * @tgid:	its process id.
 * @index:	its index in the application.
 * @comm:	its command name, CDSM_COMM_LEN bytes (NUL-padded).
 *
 * Context: any but hard interrupt; does not sleep or allocate.
 */
void cdsm_event_task(enum cdsm_event event, u32 app_id, pid_t tid, pid_t tgid, u32 index,
		     const char *comm)
{
	cdsm_event_queue(event, app_id, tid, tgid, index, comm);
}

static int cdsm_event_send(const struct cdsm_event_rec *e)
{
	struct sk_buff *skb;
	void *hdr;

	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return -ENOMEM;
	hdr = genlmsg_put(skb, 0, 0, &cdsm_genl_family, 0, CDSM_CMD_EVENT);
	if (!hdr)
		goto fail;
	if (nla_put_u32(skb, CDSM_A_EVENT, e->event) ||
	    nla_put_u32(skb, CDSM_A_APP_ID, e->app_id))
		goto fail;
	if (e->event == CDSM_EVENT_TASK_JOINED || e->event == CDSM_EVENT_TASK_EXITED) {
		if (nla_put_u32(skb, CDSM_A_TID, e->tid) ||
		    nla_put_u32(skb, CDSM_A_TGID, e->tgid) ||
		    nla_put_u32(skb, CDSM_A_TASK_INDEX, e->index) ||
		    nla_put_string(skb, CDSM_A_COMM, e->comm))
			goto fail;
	}
	genlmsg_end(skb, hdr);
	/* -ESRCH only says that nobody listens. */
	genlmsg_multicast(&cdsm_genl_family, skb, 0, 0, GFP_KERNEL);
	return 0;
fail:
	nlmsg_free(skb);
	return -EMSGSIZE;
}

/**
 * cdsm_events_send() - multicast the queued events.
 *
 * Context: process context (the worker); sleeps.
 */
void cdsm_events_send(void)
{
	struct cdsm_event_rec e;

	for (;;) {
		spin_lock_irq(&cdsm_event_lock);
		if (cdsm_event_tail == cdsm_event_head) {
			spin_unlock_irq(&cdsm_event_lock);
			return;
		}
		e = cdsm_event_ring[cdsm_event_tail++ % CDSM_EVENT_QUEUE_LEN];
		spin_unlock_irq(&cdsm_event_lock);
		if (cdsm_event_send(&e))
			cdsm_stat_add(CDSM_STAT_EVENTS_LOST, 1);
	}
}
