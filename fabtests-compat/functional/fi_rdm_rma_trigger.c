/*
 * fi_rdm_rma_trigger: triggered operations (fi_trigger(3)) on RDM
 * endpoints. The client posts operations with FI_TRIGGER and a struct
 * fi_triggered_context (FI_TRIGGER_THRESHOLD) as their context; the server
 * is the target and the receiver.
 *
 *  threshold  on a counter the client increments by hand: a write waits
 *             for 2, a read for 3, a tagged send for 4. Before each
 *             threshold nothing happens (no initiator completion, the
 *             target region keeps its sentinel, the server's tagged
 *             receive stays posted: checked after sync points while the
 *             counter is below); at each threshold exactly the due
 *             operation runs and completes with the triggered context as
 *             its op_context, with its data checked
 *  chained    on the counter bound to the endpoint with FI_WRITE: a
 *             triggered write with threshold "current + 1" runs once an
 *             ordinary write completes, and lands after it
 *
 * Run: -e rdm
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "onesided.h"

#define LEN 8192
#define TAG 0x7700
#define QUIET 0.2

static struct fid_cntr *tc, *wc; /* client: by hand, FI_WRITE */
static struct os_mr tgt, local;
static struct os_rkey peer;

static void bind_write_counter(struct fid_ep *ep)
{
	int rc;
	if (!ft_is_client())
		return;
	wc = os_open_cntr();
	if ((rc = fi_ep_bind(ep, &wc->fid, FI_WRITE)))
		ft_die("fi_ep_bind(counter, FI_WRITE): %s", fi_strerror(-rc));
}

/* Client: the initiator CQ stays empty for a while. */
static void nothing_yet(const char *when)
{
	FT_CHECK(xf_cq_quiet(ft_txcq, ft_rxcq, QUIET), "%s: a triggered operation completed before its threshold",
		 when);
	ft_log("%s: nothing completed", when);
}

/* Client: the next completion is the one with context `ctx`. */
static void fired(void *ctx, const char *what)
{
	struct fi_cq_tagged_entry e;
	if (!xf_cq_get(ft_txcq, &e, what))
		return;
	FT_CHECK(e.op_context == ctx, "%s: completion op_context %p, want the triggered context %p", what,
		 e.op_context, ctx);
}

/* Server state at a sync point: where the write target stands and
 * whether the tagged receive completed. */
static void server_state(int written, int received, const char *when)
{
	struct fi_cq_tagged_entry e;
	ft_log("%s: checking", when);
	if (written)
		FT_CHECK(xf_verify_at(tgt.buf, LEN, 0x100) < 0, "%s: the triggered write's data is not in place", when);
	else
		FT_CHECK(os_untouched(tgt.buf, LEN, 0x5a) < 0, "%s: the target region changed before the trigger", when);
	if (received == 1) {
		if (xf_cq_get(ft_rxcq, &e, "triggered tagged send's receive")) {
			FT_CHECK(e.tag == TAG && e.len == 100, "%s: receive tag %#llx len %zu", when,
				 (unsigned long long) e.tag, e.len);
			FT_CHECK(xf_verify_at(tgt.buf + 2 * LEN, 100, 0x300) < 0, "%s: received payload", when);
		}
	} else if (received == 0) {
		FT_CHECK(xf_cq_quiet(ft_rxcq, NULL, 0.02), "%s: the tagged receive completed before the trigger", when);
	}
}

static void phase_threshold(void)
{
	static struct fi_triggered_context tw, tr, ts;
	char *lb = local.buf;
	if (ft_is_client()) {
		struct iovec wiov = { lb, LEN }, riov = { lb + LEN, LEN }, siov = { lb + 2 * LEN, 100 };
		struct fi_rma_iov wr = { peer.addr, LEN, peer.key }, rr = { peer.addr + LEN, LEN, peer.key };
		struct fi_msg_rma wm = { .msg_iov = &wiov, .desc = &local.desc, .iov_count = 1, .addr = ft_peer,
					 .rma_iov = &wr, .rma_iov_count = 1, .context = &tw };
		struct fi_msg_rma rm = { .msg_iov = &riov, .desc = &local.desc, .iov_count = 1, .addr = ft_peer,
					 .rma_iov = &rr, .rma_iov_count = 1, .context = &tr };
		struct fi_msg_tagged sm = { .msg_iov = &siov, .desc = &local.desc, .iov_count = 1, .addr = ft_peer,
					    .tag = TAG, .context = &ts };
		os_set_trigger(&tw, tc, 2);
		os_set_trigger(&tr, tc, 3);
		os_set_trigger(&ts, tc, 4);
		xf_fill_at(lb, LEN, 0x100);
		memset(lb + LEN, 0, LEN);
		xf_fill_at(lb + 2 * LEN, 100, 0x300);
		FT_POST(fi_writemsg(ft_ep, &wm, FI_TRIGGER), "fi_writemsg(FI_TRIGGER)");
		FT_POST(fi_readmsg(ft_ep, &rm, FI_TRIGGER), "fi_readmsg(FI_TRIGGER)");
		FT_POST(fi_tsendmsg(ft_ep, &sm, FI_TRIGGER), "fi_tsendmsg(FI_TRIGGER)");
		nothing_yet("counter 0");
		os_sync();
		os_sync();
		FT_RC(fi_cntr_add(tc, 1), 0);
		nothing_yet("counter 1");
		os_sync();
		os_sync();
		FT_RC(fi_cntr_add(tc, 1), 0);
		fired(&tw, "triggered write at threshold 2");
		nothing_yet("counter 2");
		os_sync();
		os_sync();
		FT_RC(fi_cntr_add(tc, 1), 0);
		fired(&tr, "triggered read at threshold 3");
		FT_CHECK(xf_verify_at(lb + LEN, LEN, 0x200) < 0, "triggered read: data");
		nothing_yet("counter 3");
		os_sync();
		os_sync();
		FT_RC(fi_cntr_add(tc, 1), 0);
		fired(&ts, "triggered tagged send at threshold 4");
		os_sync();
	} else {
		memset(tgt.buf, 0x5a, LEN);
		xf_fill_at(tgt.buf + LEN, LEN, 0x200);
		FT_POST(fi_trecv(ft_ep, tgt.buf + 2 * LEN, LEN, tgt.desc, ft_peer, TAG, 0, &peer), "fi_trecv");
		os_sync();
		server_state(0, 0, "counter 0");
		os_sync();
		os_sync();
		server_state(0, 0, "counter 1");
		os_sync();
		os_sync();
		server_state(1, 0, "counter 2");
		os_sync();
		os_sync();
		server_state(1, 0, "counter 3");
		os_sync();
		/* the tagged message is the next receive completion: read it
		 * before a control receive could */
		server_state(1, 1, "counter 4");
		os_sync();
	}
	ft_log("threshold: done");
}

static void phase_chained(void)
{
	static struct fi_triggered_context t;
	static int ctx;
	char *lb = local.buf;
	size_t off = 3 * LEN;
	if (ft_is_client()) {
		struct iovec iov = { lb + off, LEN };
		struct fi_rma_iov r = { peer.addr + off, LEN, peer.key };
		struct fi_msg_rma m = { .msg_iov = &iov, .desc = &local.desc, .iov_count = 1, .addr = ft_peer,
					.rma_iov = &r, .rma_iov_count = 1, .context = &t };
		uint64_t now = fi_cntr_read(wc);
		os_set_trigger(&t, wc, (size_t) now + 1);
		xf_fill_at(lb + off, LEN, 0x400);      /* the triggered write: the whole range */
		xf_fill_at(lb + off + LEN, LEN / 2, 0x500); /* the ordinary write: the first half */
		FT_POST(fi_writemsg(ft_ep, &m, FI_TRIGGER), "fi_writemsg(FI_TRIGGER on the FI_WRITE counter)");
		nothing_yet("chained, before the ordinary write");
		FT_POST(fi_write(ft_ep, lb + off + LEN, LEN / 2, local.desc, ft_peer, peer.addr + off, peer.key, &ctx),
			"fi_write");
		fired(&ctx, "the ordinary write");
		fired(&t, "the triggered write chained on the FI_WRITE counter");
		FT_CHECK(fi_cntr_read(wc) == now + 2, "FI_WRITE counter %llu, want %llu", (unsigned long long) fi_cntr_read(wc),
			 (unsigned long long) now + 2);
		os_sync();
		os_sync();
	} else {
		os_sync();
		FT_CHECK(xf_verify_at(tgt.buf + off, LEN, 0x400) < 0,
			 "chained: the triggered write did not land after the ordinary write");
		os_sync();
	}
	ft_log("chained: done");
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	struct os_rkey mine = { 0, 0, 0 };
	char *tbuf, *lbuf;
	ft_args(argc, argv, NULL, NULL);
	if (ft_ep_type != FI_EP_RDM)
		ft_die("fi_rdm_rma_trigger runs on RDM endpoints (-e rdm)");
	hints = os_hints(FI_MSG | FI_TAGGED | FI_RMA | FI_TRIGGER);
	os_require(hints);
	ft_setup(hints);
	ft_before_enable = bind_write_counter;
	os_init();
	tbuf = malloc(4 * LEN);
	lbuf = malloc(5 * LEN); /* [3, 5) * LEN: the chained phase */
	if (!tbuf || !lbuf)
		ft_die("malloc");
	memset(tbuf, 0, 4 * LEN);
	os_reg(&tgt, tbuf, 4 * LEN, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RECV);
	os_reg(&local, lbuf, 5 * LEN, FI_READ | FI_WRITE | FI_SEND);
	mine = os_rkey_of(&tgt, 0, 4 * LEN);
	os_swap_keys(&mine, &peer, 1);
	if (ft_is_client())
		tc = os_open_cntr();
	phase_threshold();
	phase_chained();
	os_sync();
	os_unreg(&tgt);
	os_unreg(&local);
	free(tbuf);
	free(lbuf);
	fi_close(&ft_ep->fid);
	ft_ep = NULL;
	if (tc)
		FT_RC(fi_close(&tc->fid), 0);
	if (wc)
		FT_RC(fi_close(&wc->fid), 0);
	return os_finish("fi_rdm_rma_trigger");
}
