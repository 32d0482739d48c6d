/*
 * fi_rdm_trigger_work: triggered messages and atomics, and deferred work
 * queues (fi_trigger(3)) on RDM endpoints. fi_rdm_rma_trigger covers
 * triggered RMA; this program covers the rest of the man page.
 *
 *  messages   the client posts an untagged send with FI_TRIGGER, the
 *             server an untagged receive with FI_TRIGGER, each on a
 *             counter it increments by hand: neither completes before its
 *             threshold (the message waits unexpected at the server), both
 *             complete after it with the triggered context as op_context
 *             and the payload checked
 *  atomics    triggered fetch (FI_SUM), compare (FI_CSWAP) and base
 *             (FI_SUM) atomics on one target word at thresholds 1, 2, 2:
 *             the server sees the word unchanged before each threshold,
 *             the fetched and compared values are the ones before
 *  work       fi_control(domain, FI_QUEUE_WORK) on the client: a deferred
 *             FI_OP_WRITE (no FI_COMPLETION: its completion counter counts
 *             it and the CQ stays empty), a deferred FI_OP_TSEND with
 *             FI_COMPLETION (a CQ entry too), matched by a deferred
 *             FI_OP_TRECV on the server; a chain FI_OP_CNTR_ADD ->
 *             FI_OP_CNTR_ADD / FI_OP_CNTR_SET -> FI_OP_ATOMIC; a request
 *             released by an error count (success plus error values);
 *             FI_CANCEL_WORK (then -FI_ENOENT) and FI_FLUSH_WORK (all, and
 *             by triggering counter): canceled work never runs
 *  bad input  a NULL triggered context, a NULL or foreign counter, an
 *             unknown event type, FI_TRIGGER with FI_INJECT, a NULL work
 *             request, an unknown op_type, a counter operation with a
 *             completion counter: the documented negative codes. Calls
 *             that could crash a provider run in a child process, so a
 *             crash is a failed check, not a lost run.
 *
 * Deferred operations name &work.context as their context (fi_trigger(3)
 * lets a provider require it; upstream's sockets does).
 *
 * Run: -e rdm (or -e msg: the same on a connected endpoint)
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "onesided.h"
#include <sys/wait.h>
#include <unistd.h>

#define LEN 4096
#define MSG_LEN 4000
#define TAG 0x7710
#define QUIET 0.2
#define NEVER_MS 200 /* a counter that must not move: how long we watch */

/* Target layout (server): [0, LEN) deferred write, [LEN, 2 LEN) deferred
 * tagged receive, [2 LEN, 3 LEN) triggered receive, then the atomic words. */
#define OFF_WRITE 0
#define OFF_TRECV LEN
#define OFF_RECV (2 * LEN)
#define OFF_WORDS (3 * LEN)
#define REGION (4 * LEN)

static struct os_mr tgt, local;
static struct os_rkey peer;

static uint64_t *word(char *base, int i)
{
	return (uint64_t *) (void *) (base + OFF_WORDS + 8 * i);
}

/* The next transmit completion is the one with context `ctx`. */
static void fired(struct fid_cq *cq, void *ctx, const char *what)
{
	struct fi_cq_tagged_entry e;
	if (!xf_cq_get(cq, &e, what))
		return;
	FT_CHECK(e.op_context == ctx, "%s: completion op_context %p, want %p", what, e.op_context, ctx);
}

/* Waits (bounded) for counter c to reach v. */
static void reaches(struct fid_cntr *c, uint64_t v, const char *what)
{
	int rc = fi_cntr_wait(c, v, (int) (FT_TIMEOUT * 1000));
	FT_CHECK(rc == 0, "%s: fi_cntr_wait(%llu) = %d (%s); value %llu, errors %llu", what, (unsigned long long) v,
		 rc, fi_strerror(rc < 0 ? -rc : rc), (unsigned long long) fi_cntr_read(c),
		 (unsigned long long) fi_cntr_readerr(c));
}

/* Counter c stays at v for NEVER_MS: canceled or not yet due work did not run. */
static void stays(struct fid_cntr *c, uint64_t v, const char *what)
{
	int rc = fi_cntr_wait(c, v + 1, NEVER_MS);
	FT_CHECK(rc != 0 && fi_cntr_read(c) == v, "%s: counter %llu, want it to stay %llu", what,
		 (unsigned long long) fi_cntr_read(c), (unsigned long long) v);
}

/* ---- messages ---- */

static void phase_messages(void)
{
	static struct fi_triggered_context t;
	struct fid_cntr *hand = os_open_cntr();
	char *lb = local.buf;
	if (ft_is_client()) {
		struct iovec iov = { lb, MSG_LEN };
		struct fi_msg m = { .msg_iov = &iov, .desc = &local.desc, .iov_count = 1, .addr = ft_peer,
				    .context = &t };
		os_set_trigger(&t, hand, 1);
		xf_fill_at(lb, MSG_LEN, 0x600);
		FT_POST(fi_sendmsg(ft_ep, &m, FI_TRIGGER), "fi_sendmsg(FI_TRIGGER)");
		FT_CHECK(xf_cq_quiet(ft_txcq, ft_rxcq, QUIET), "a triggered send completed before its threshold");
		FT_RC(fi_cntr_add(hand, 1), 0);
		fired(ft_txcq, &t, "triggered send at threshold 1");
		os_sync();
	} else {
		struct fi_cq_tagged_entry e;
		char *rb = tgt.buf + OFF_RECV;
		struct iovec iov = { rb, LEN };
		struct fi_msg m = { .msg_iov = &iov, .desc = &tgt.desc, .iov_count = 1, .addr = ft_peer,
				    .context = &t };
		memset(rb, 0x5a, LEN);
		os_set_trigger(&t, hand, 1);
		FT_POST(fi_recvmsg(ft_ep, &m, FI_TRIGGER), "fi_recvmsg(FI_TRIGGER)");
		/* The client's message (sent once its own threshold is reached)
		 * waits unexpected: the triggered receive is not posted yet. */
		FT_CHECK(xf_cq_quiet(ft_rxcq, ft_txcq, 2 * QUIET), "a triggered receive completed before its threshold");
		FT_RC(fi_cntr_add(hand, 1), 0);
		if (xf_cq_get(ft_rxcq, &e, "triggered receive at threshold 1")) {
			FT_CHECK(e.op_context == &t, "triggered receive: op_context %p, want %p", e.op_context,
				 (void *) &t);
			FT_CHECK(e.len == MSG_LEN, "triggered receive: len %zu, want %d", e.len, MSG_LEN);
			FT_CHECK(xf_verify_at(rb, MSG_LEN, 0x600) < 0, "triggered receive: payload");
		}
		os_sync();
	}
	FT_RC(fi_close(&hand->fid), 0);
	ft_log("messages: done");
}

/* ---- atomics ---- */

static void phase_atomics(void)
{
	static struct fi_triggered_context tf, tc, tb;
	if (ft_is_client()) {
		struct fid_cntr *hand = os_open_cntr();
		uint64_t *opnd = word(local.buf, 0), *cmp = word(local.buf, 1), *swp = word(local.buf, 2),
			 *res1 = word(local.buf, 3), *res2 = word(local.buf, 4), *one = word(local.buf, 5);
		struct fi_ioc o1 = { opnd, 1 }, oc = { swp, 1 }, ob = { one, 1 }, c = { cmp, 1 };
		struct fi_ioc r1 = { res1, 1 }, r2 = { res2, 1 };
		struct fi_rma_ioc rw = { peer.addr + OFF_WORDS, 1, peer.key };
		struct fi_msg_atomic mf = { .msg_iov = &o1, .desc = &local.desc, .iov_count = 1, .addr = ft_peer,
					    .rma_iov = &rw, .rma_iov_count = 1, .datatype = FI_UINT64, .op = FI_SUM,
					    .context = &tf };
		struct fi_msg_atomic mc = mf, mb = mf;
		struct fi_cq_tagged_entry e[2];
		mc.msg_iov = &oc;
		mc.op = FI_CSWAP;
		mc.context = &tc;
		mb.msg_iov = &ob;
		mb.context = &tb;
		*opnd = 5;
		*cmp = 15;
		*swp = 100;
		*one = 1;
		*res1 = *res2 = 0xdead;
		os_set_trigger(&tf, hand, 1);
		os_set_trigger(&tc, hand, 2);
		os_set_trigger(&tb, hand, 2);
		FT_POST(fi_fetch_atomicmsg(ft_ep, &mf, &r1, &local.desc, 1, FI_TRIGGER), "fi_fetch_atomicmsg(FI_TRIGGER)");
		FT_POST(fi_compare_atomicmsg(ft_ep, &mc, &c, &local.desc, 1, &r2, &local.desc, 1, FI_TRIGGER),
			"fi_compare_atomicmsg(FI_TRIGGER)");
		FT_POST(fi_atomicmsg(ft_ep, &mb, FI_TRIGGER), "fi_atomicmsg(FI_TRIGGER)");
		FT_CHECK(xf_cq_quiet(ft_txcq, ft_rxcq, QUIET), "a triggered atomic completed before its threshold");
		os_sync(); /* server: word still 10 */
		os_sync();
		FT_RC(fi_cntr_add(hand, 1), 0);
		fired(ft_txcq, &tf, "triggered fetch atomic at threshold 1");
		FT_CHECK(*res1 == 10, "triggered fetch atomic fetched %llu, want 10", (unsigned long long) *res1);
		FT_CHECK(xf_cq_quiet(ft_txcq, ft_rxcq, QUIET), "an atomic of threshold 2 completed at 1");
		os_sync(); /* server: word 15 */
		os_sync();
		FT_RC(fi_cntr_add(hand, 1), 0);
		/* Two completions, in either order (a compare waits for its
		 * value to come back, a base atomic may not). */
		if (xf_cq_get(ft_txcq, &e[0], "first atomic at threshold 2") &&
		    xf_cq_get(ft_txcq, &e[1], "second atomic at threshold 2"))
			FT_CHECK((e[0].op_context == &tc && e[1].op_context == &tb) ||
					 (e[0].op_context == &tb && e[1].op_context == &tc),
				 "completions at threshold 2: %p, %p; want %p and %p", e[0].op_context,
				 e[1].op_context, (void *) &tc, (void *) &tb);
		FT_CHECK(*res2 == 15, "triggered compare atomic fetched %llu, want 15", (unsigned long long) *res2);
		os_sync(); /* server: word 101 (swapped to 100, then + 1) */
		FT_RC(fi_close(&hand->fid), 0);
	} else {
		uint64_t *w = word(tgt.buf, 0);
		*w = 10;
		os_sync();
		FT_CHECK(*w == 10, "atomic target %llu before threshold 1, want 10", (unsigned long long) *w);
		os_sync();
		os_sync();
		FT_CHECK(*w == 15, "atomic target %llu at threshold 1, want 15", (unsigned long long) *w);
		os_sync();
		os_sync();
		FT_CHECK(*w == 101, "atomic target %llu at threshold 2, want 101", (unsigned long long) *w);
	}
	ft_log("atomics: done");
}

/* ---- deferred work ---- */

static int queue_work(struct fi_deferred_work *w)
{
	return fi_control(&ft_domain->fid, FI_QUEUE_WORK, w);
}

static void work_init(struct fi_deferred_work *w, struct fid_cntr *trig, uint64_t threshold, struct fid_cntr *comp,
		      enum fi_op_type type)
{
	memset(w, 0, sizeof(*w));
	w->threshold = threshold;
	w->triggering_cntr = trig;
	w->completion_cntr = comp;
	w->op_type = type;
}

static void cntr_work(struct fi_deferred_work *w, struct fi_op_cntr *op, struct fid_cntr *trig, uint64_t threshold,
		      enum fi_op_type type, struct fid_cntr *target, uint64_t value)
{
	work_init(w, trig, threshold, NULL, type);
	op->cntr = target;
	op->value = value;
	w->op.cntr = op;
}

/* A deferred tagged message (send or receive, as w's op_type says) of
 * iov with TAG to or from the peer; its context is &w->context. */
static void tagged_work(struct fi_deferred_work *w, struct fi_op_tagged *op, struct iovec *iov, void **desc,
			uint64_t flags)
{
	memset(op, 0, sizeof(*op));
	op->ep = ft_ep;
	op->msg.msg_iov = iov;
	op->msg.desc = desc;
	op->msg.iov_count = 1;
	op->msg.addr = ft_peer;
	op->msg.tag = TAG;
	op->msg.context = &w->context;
	op->flags = flags;
	w->op.tagged = op;
}

static void phase_work_server(void)
{
	static struct fi_deferred_work w;
	static struct fi_op_tagged op;
	static struct iovec iov;
	struct fid_cntr *trig = os_open_cntr(), *comp = os_open_cntr();
	char *rb = tgt.buf + OFF_TRECV;
	uint64_t *aw = word(tgt.buf, 1);
	memset(tgt.buf + OFF_WRITE, 0x5a, LEN);
	memset(rb, 0x5a, LEN);
	*aw = 7;
	iov.iov_base = rb;
	iov.iov_len = LEN;
	work_init(&w, trig, 1, comp, FI_OP_TRECV);
	tagged_work(&w, &op, &iov, &tgt.desc, 0);
	FT_RC(queue_work(&w), 0);
	FT_CHECK(xf_cq_quiet(ft_rxcq, NULL, QUIET) && fi_cntr_read(comp) == 0,
		 "deferred FI_OP_TRECV: something completed before its threshold");
	FT_RC(fi_cntr_add(trig, 1), 0); /* the tagged receive is posted now */
	os_sync();
	os_sync(); /* client: deferred write done */
	FT_CHECK(xf_verify_at(tgt.buf + OFF_WRITE, LEN, 0x700) < 0, "deferred FI_OP_WRITE: data not in place");
	os_sync();
	reaches(comp, 1, "deferred FI_OP_TRECV: its completion counter");
	FT_CHECK(xf_verify_at(rb, MSG_LEN, 0x800) < 0, "deferred FI_OP_TRECV: payload");
	/* No FI_COMPLETION: nothing at the endpoint. */
	FT_CHECK(xf_cq_quiet(ft_rxcq, NULL, QUIET), "deferred FI_OP_TRECV without FI_COMPLETION wrote a CQ entry");
	os_sync();
	os_sync(); /* client: chain done */
	FT_CHECK(*aw == 7 + 3, "deferred FI_OP_ATOMIC at the end of the chain: word %llu, want 10",
		 (unsigned long long) *aw);
	os_sync();
	FT_RC(fi_close(&trig->fid), 0);
	FT_RC(fi_close(&comp->fid), 0);
}

/* Deferred work the client checks alone: release by errors, cancel,
 * flush (counter operations only). */
static void phase_work_local(void)
{
	static struct fi_deferred_work we, wc, wf[3];
	static struct fi_op_cntr ce, cc, cf[3];
	struct fid_cntr *trig = os_open_cntr(), *errs = os_open_cntr(), *x = os_open_cntr(), *y = os_open_cntr();

	/* Deferred work counts errors too (success plus error values). */
	cntr_work(&we, &ce, errs, 2, FI_OP_CNTR_ADD, x, 1);
	FT_RC(queue_work(&we), 0);
	FT_RC(fi_cntr_add(errs, 1), 0);
	stays(x, 0, "deferred work at 1 of 2");
	FT_RC(fi_cntr_adderr(errs, 1), 0);
	reaches(x, 1, "deferred work released by one success and one error");

	/* FI_CANCEL_WORK: the request never runs; a second cancel finds nothing. */
	cntr_work(&wc, &cc, trig, 100, FI_OP_CNTR_ADD, x, 1);
	FT_RC(queue_work(&wc), 0);
	FT_RC(fi_control(&ft_domain->fid, FI_CANCEL_WORK, &wc), 0);
	FT_RC(fi_control(&ft_domain->fid, FI_CANCEL_WORK, &wc), -FI_ENOENT);
	FT_RC(fi_cntr_set(trig, 100), 0);
	stays(x, 1, "canceled deferred work");

	/* FI_FLUSH_WORK by triggering counter, then all. */
	cntr_work(&wf[0], &cf[0], trig, 200, FI_OP_CNTR_ADD, y, 1);
	cntr_work(&wf[1], &cf[1], errs, 50, FI_OP_CNTR_ADD, y, 10);
	cntr_work(&wf[2], &cf[2], trig, 201, FI_OP_CNTR_ADD, y, 100);
	for (int i = 0; i < 3; i++)
		FT_RC(queue_work(&wf[i]), 0);
	{
		struct fi_deferred_work by_cntr;
		memset(&by_cntr, 0, sizeof(by_cntr));
		by_cntr.triggering_cntr = errs;
		FT_RC(fi_control(&ft_domain->fid, FI_FLUSH_WORK, &by_cntr), 0);
	}
	FT_RC(fi_cntr_set(errs, 60), 0);
	stays(y, 0, "deferred work flushed by its triggering counter");
	FT_RC(fi_cntr_set(trig, 200), 0);
	reaches(y, 1, "deferred work on another counter survives a flush by counter");
	FT_RC(fi_control(&ft_domain->fid, FI_FLUSH_WORK, NULL), 0);
	FT_RC(fi_cntr_set(trig, 300), 0);
	stays(y, 1, "deferred work flushed with FI_FLUSH_WORK");

	fi_close(&trig->fid);
	fi_close(&errs->fid);
	fi_close(&x->fid);
	fi_close(&y->fid);
	ft_log("deferred work, local: done");
}

static void phase_work_client(void)
{
	static struct fi_deferred_work ww, ws, wa, w1, w2, w3;
	static struct fi_op_rma wop;
	static struct fi_op_tagged sop;
	static struct fi_op_atomic aop;
	static struct fi_op_cntr c1, c2, c3;
	static struct iovec wiov, siov;
	static struct fi_rma_iov wr;
	static struct fi_ioc aio;
	static struct fi_rma_ioc ar;
	struct fid_cntr *trig = os_open_cntr(), *comp = os_open_cntr(), *a = os_open_cntr(), *b = os_open_cntr(),
			*c = os_open_cntr();
	char *lb = local.buf;
	uint64_t *three = word(lb, 8);
	struct fi_cq_tagged_entry e;

	/* FI_OP_WRITE at trig >= 1, no FI_COMPLETION. */
	xf_fill_at(lb + OFF_WRITE, LEN, 0x700);
	wiov.iov_base = lb + OFF_WRITE;
	wiov.iov_len = LEN;
	wr.addr = peer.addr + OFF_WRITE;
	wr.len = LEN;
	wr.key = peer.key;
	work_init(&ww, trig, 1, comp, FI_OP_WRITE);
	wop.ep = ft_ep;
	wop.msg.msg_iov = &wiov;
	wop.msg.desc = &local.desc;
	wop.msg.iov_count = 1;
	wop.msg.addr = ft_peer;
	wop.msg.rma_iov = &wr;
	wop.msg.rma_iov_count = 1;
	wop.msg.context = &ww.context;
	ww.op.rma = &wop;
	/* FI_OP_TSEND at trig >= 2, with FI_COMPLETION. */
	xf_fill_at(lb + OFF_TRECV, MSG_LEN, 0x800);
	siov.iov_base = lb + OFF_TRECV;
	siov.iov_len = MSG_LEN;
	work_init(&ws, trig, 2, comp, FI_OP_TSEND);
	tagged_work(&ws, &sop, &siov, &local.desc, FI_COMPLETION);
	FT_RC(queue_work(&ww), 0);
	FT_RC(queue_work(&ws), 0);
	FT_CHECK(xf_cq_quiet(ft_txcq, NULL, QUIET), "deferred work completed before its threshold");
	FT_CHECK(fi_cntr_read(comp) == 0, "completion counter %llu before any threshold",
		 (unsigned long long) fi_cntr_read(comp));
	os_sync(); /* the server's deferred tagged receive is posted */
	FT_RC(fi_cntr_add(trig, 1), 0);
	reaches(comp, 1, "deferred FI_OP_WRITE: its completion counter");
	FT_CHECK(xf_cq_quiet(ft_txcq, NULL, QUIET), "deferred FI_OP_WRITE without FI_COMPLETION wrote a CQ entry");
	FT_CHECK(fi_cntr_read(comp) == 1, "deferred FI_OP_TSEND ran below its threshold (completion counter %llu)",
		 (unsigned long long) fi_cntr_read(comp));
	os_sync();
	os_sync();
	FT_RC(fi_cntr_add(trig, 1), 0);
	reaches(comp, 2, "deferred FI_OP_TSEND: its completion counter");
	if (xf_cq_get(ft_txcq, &e, "deferred FI_OP_TSEND with FI_COMPLETION"))
		FT_CHECK(e.op_context == &ws.context, "deferred FI_OP_TSEND: op_context %p, want %p", e.op_context,
			 (void *) &ws.context);
	os_sync();

	/* A chain: trig >= 3 adds 2 to a; a >= 2 adds 1 to b and sets c to
	 * 42; b >= 1 runs an atomic (+3 on the server's word) counted on comp. */
	cntr_work(&w1, &c1, trig, 3, FI_OP_CNTR_ADD, a, 2);
	cntr_work(&w2, &c2, a, 2, FI_OP_CNTR_ADD, b, 1);
	cntr_work(&w3, &c3, a, 2, FI_OP_CNTR_SET, c, 42);
	*three = 3;
	aio.addr = three;
	aio.count = 1;
	ar.addr = peer.addr + OFF_WORDS + 8;
	ar.count = 1;
	ar.key = peer.key;
	work_init(&wa, b, 1, comp, FI_OP_ATOMIC);
	aop.ep = ft_ep;
	aop.msg.msg_iov = &aio;
	aop.msg.desc = &local.desc;
	aop.msg.iov_count = 1;
	aop.msg.addr = ft_peer;
	aop.msg.rma_iov = &ar;
	aop.msg.rma_iov_count = 1;
	aop.msg.datatype = FI_UINT64;
	aop.msg.op = FI_SUM;
	aop.msg.context = &wa.context;
	wa.op.atomic = &aop;
	FT_RC(queue_work(&wa), 0);
	FT_RC(queue_work(&w3), 0);
	FT_RC(queue_work(&w2), 0);
	FT_RC(queue_work(&w1), 0);
	stays(comp, 2, "the chain before its first threshold");
	FT_RC(fi_cntr_add(trig, 1), 0);
	reaches(a, 2, "chain: FI_OP_CNTR_ADD on a");
	reaches(b, 1, "chain: FI_OP_CNTR_ADD on b");
	reaches(c, 42, "chain: FI_OP_CNTR_SET on c");
	reaches(comp, 3, "chain: the deferred FI_OP_ATOMIC's completion counter");
	FT_CHECK(fi_cntr_read(c) == 42, "FI_OP_CNTR_SET: c is %llu", (unsigned long long) fi_cntr_read(c));
	os_sync();
	os_sync();

	fi_close(&trig->fid);
	fi_close(&comp->fid);
	fi_close(&a->fid);
	fi_close(&b->fid);
	fi_close(&c->fid);
}

/* ---- fi_cancel ---- */

/* A triggered send not yet due is canceled by fi_cancel: an FI_ECANCELED
 * error completion with its context, and it never runs. Client only; the
 * message has a tag the server never receives, so a provider that runs
 * it anyway disturbs nothing else. */
static void phase_cancel(void)
{
	static struct fi_triggered_context t;
	struct fid_cntr *hand = os_open_cntr();
	struct iovec iov = { local.buf, 64 };
	struct fi_msg_tagged m = { .msg_iov = &iov, .desc = &local.desc, .iov_count = 1, .addr = ft_peer,
				   .tag = TAG + 0xdead, .context = &t };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t rc;
	os_set_trigger(&t, hand, 1);
	FT_POST(fi_tsendmsg(ft_ep, &m, FI_TRIGGER), "fi_tsendmsg(FI_TRIGGER)");
	rc = fi_cancel(&ft_ep->fid, &t);
	FT_CHECK(rc == 0, "fi_cancel of a triggered send not yet due: %zd (%s)", rc, fi_strerror((int) -rc));
	if (rc == 0) {
		memset(&err, 0, sizeof(err));
		FT_CHECK(ft_cq_wait(ft_txcq, &e, &err, NULL) == -FI_ECANCELED &&
				 err.op_context == &t,
			 "canceled triggered send: want an FI_ECANCELED error completion with its context, got err %d "
			 "op_context %p",
			 err.err, err.op_context);
	}
	FT_RC(fi_cntr_add(hand, 1), 0);
	FT_CHECK(xf_cq_quiet(ft_txcq, NULL, QUIET), "a canceled triggered send ran at its threshold");
	FT_RC(fi_close(&hand->fid), 0);
	ft_log("cancel: done");
}

/* ---- bad input ---- */

/* Runs `call` in a child and returns its result; a crash or hang of the
 * child is a failed check and returns INT32_MIN. */
static long in_child(long (*call)(void), const char *what)
{
	int status;
	pid_t pid;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		ft_die("fork: %s", strerror(errno));
	if (pid == 0) {
		alarm(10);
		_exit((int) (-call()) & 0xff);
	}
	if (waitpid(pid, &status, 0) != pid)
		ft_die("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status)) {
		FT_CHECK(0, "%s: the call crashed (signal %d)", what, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		return INT32_MIN;
	}
	return -(long) WEXITSTATUS(status);
}

static struct fi_triggered_context bad_t;
static char bad_buf[64];
static struct fid_cntr *bad_c; /* opened by the parent: the child only calls */

static long send_with_bad_trigger(void)
{
	struct iovec iov = { bad_buf, sizeof(bad_buf) };
	struct fi_msg m = { .msg_iov = &iov, .desc = &local.desc, .iov_count = 1, .addr = ft_peer, .context = &bad_t };
	return (long) fi_sendmsg(ft_ep, &m, FI_TRIGGER);
}

static struct fi_deferred_work *bad_w;

static long queue_bad_work(void)
{
	return fi_control(&ft_domain->fid, FI_QUEUE_WORK, bad_w);
}

/* FI_QUEUE_WORK of `w` in a child must return `want`. */
static void bad_work(struct fi_deferred_work *w, int want, const char *what)
{
	long rc;
	bad_w = w;
	rc = in_child(queue_bad_work, what);
	if (rc != INT32_MIN)
		FT_CHECK(rc == want, "%s: %ld (%s), want %d", what, rc, fi_strerror((int) -rc), want);
}

static void phase_bad_input(void)
{
	struct fid_cntr *hand = os_open_cntr(), *other = NULL;
	struct fi_deferred_work w;
	struct fi_op_cntr op;
	struct iovec iov = { bad_buf, sizeof(bad_buf) };
	struct fi_msg m = { .msg_iov = &iov, .desc = &local.desc, .iov_count = 1, .addr = ft_peer, .context = NULL };
	long rc;
	int n = 0;
	bad_c = hand;

	/* A triggered operation without a triggered context. */
	FT_RC(fi_sendmsg(ft_ep, &m, FI_TRIGGER), -FI_EINVAL);
	/* An unknown event type. */
	os_set_trigger(&bad_t, hand, 1);
	bad_t.event_type = (enum fi_trigger_event) 77;
	m.context = &bad_t;
	FT_RC(fi_sendmsg(ft_ep, &m, FI_TRIGGER), -FI_EINVAL);
	/* The rest may be accepted, or crash, where a provider does not
	 * check: each runs in a child, so that neither a crash nor an
	 * operation queued on bad input affects what follows. */
	/* An XPU trigger (needs FI_XPU, which the program did not ask for). */
	os_set_trigger(&bad_t, hand, 1);
	bad_t.event_type = FI_TRIGGER_XPU;
	rc = in_child(send_with_bad_trigger, "FI_TRIGGER_XPU");
	if (rc != INT32_MIN)
		FT_CHECK(rc == -FI_ENOSYS || rc == -FI_EINVAL, "FI_TRIGGER_XPU: %ld, want -FI_ENOSYS or -FI_EINVAL", rc);
	/* FI_TRIGGER with FI_INJECT: the buffer could not be read later. */
	os_set_trigger(&bad_t, hand, 1);
	FT_RC(fi_sendmsg(ft_ep, &m, FI_TRIGGER | FI_INJECT), -FI_EINVAL);
	/* A NULL counter in the triggered context. */
	os_set_trigger(&bad_t, NULL, 1);
	rc = in_child(send_with_bad_trigger, "FI_TRIGGER with a NULL counter");
	if (rc != INT32_MIN)
		FT_CHECK(rc == -FI_EINVAL, "FI_TRIGGER with a NULL counter: %ld, want -FI_EINVAL", rc);
	/* A counter of another domain. */
	{
		struct fid_domain *d2;
		struct fi_cntr_attr a = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
		if (fi_domain(ft_fabric, ft_info, &d2, NULL) == 0) {
			if (fi_cntr_open(d2, &a, &other, NULL) == 0) {
				os_set_trigger(&bad_t, other, 1);
				rc = in_child(send_with_bad_trigger, "FI_TRIGGER on another domain's counter");
				if (rc != INT32_MIN)
					FT_CHECK(rc == -FI_EINVAL,
						 "FI_TRIGGER on another domain's counter: %ld, want -FI_EINVAL", rc);
				fi_close(&other->fid);
				n++;
			}
			fi_close(&d2->fid);
		}
	}
	/* Deferred work: NULL request, NULL triggering counter, unknown
	 * op_type, a counter operation with a completion counter, a NULL
	 * operation. */
	bad_work(NULL, -FI_EINVAL, "FI_QUEUE_WORK with a NULL request");
	cntr_work(&w, &op, NULL, 1, FI_OP_CNTR_ADD, bad_c, 1);
	bad_work(&w, -FI_EINVAL, "FI_QUEUE_WORK with a NULL triggering counter");
	cntr_work(&w, &op, hand, 1, FI_OP_CNTR_ADD, hand, 1);
	w.op_type = (enum fi_op_type) 99;
	bad_work(&w, -FI_ENOSYS, "FI_QUEUE_WORK with op_type 99");
	cntr_work(&w, &op, hand, 1, FI_OP_CNTR_ADD, hand, 1);
	w.completion_cntr = hand;
	bad_work(&w, -FI_EINVAL, "FI_QUEUE_WORK of FI_OP_CNTR_ADD with a completion counter");
	work_init(&w, hand, 1, NULL, FI_OP_SEND);
	w.op.msg = NULL;
	bad_work(&w, -FI_EINVAL, "FI_QUEUE_WORK of FI_OP_SEND with a NULL operation");
	/* Nothing above was queued: the counter releases nothing. */
	FT_RC(fi_cntr_add(hand, 5), 0);
	FT_CHECK(xf_cq_quiet(ft_txcq, NULL, QUIET), "a refused triggered operation ran");
	FT_RC(fi_close(&hand->fid), 0);
	ft_log("bad input: done (%d with a second domain)", n);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	struct os_rkey mine = { 0, 0, 0 };
	char *tbuf, *lbuf;
	ft_args(argc, argv, NULL, NULL);
	if (ft_ep_type != FI_EP_RDM && ft_ep_type != FI_EP_MSG)
		ft_die("fi_rdm_trigger_work runs on RDM or MSG endpoints (-e rdm, -e msg)");
	hints = os_hints(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_TRIGGER);
	os_require(hints);
	ft_setup(hints);
	os_init();
	tbuf = calloc(1, REGION);
	lbuf = calloc(1, REGION);
	if (!tbuf || !lbuf)
		ft_die("calloc");
	os_reg(&tgt, tbuf, REGION, OS_ACCESS_ALL);
	os_reg(&local, lbuf, REGION, OS_ACCESS_ALL);
	mine = os_rkey_of(&tgt, 0, REGION);
	os_swap_keys(&mine, &peer, 1);
	phase_messages();
	phase_atomics();
	/* The client-only parts first: a provider failing the two-sided
	 * deferred work below still gets them checked. */
	if (ft_is_client()) {
		phase_bad_input();
		phase_work_local();
		phase_cancel();
	}
	os_sync();
	if (ft_is_client())
		phase_work_client();
	else
		phase_work_server();
	ft_log("deferred work: done");
	os_sync();
	os_unreg(&tgt);
	os_unreg(&local);
	free(tbuf);
	free(lbuf);
	return os_finish("fi_rdm_trigger_work");
}
