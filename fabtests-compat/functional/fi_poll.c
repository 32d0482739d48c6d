/*
 * fi_poll: a poll set (fi_poll(3)) over the completion queues (-t queue,
 * the default) or counters (-t counter) of a connected FI_EP_MSG pair.
 *
 * Each side opens a transmit and a receive CQ (and, with -t counter, a
 * send and a receive counter bound with FI_SEND / FI_RECV), each with a
 * context of its own, puts the CQs or the counters in one poll set
 * (fi_poll_open, fi_poll_add), and then, -I times, the client sends a
 * message and waits for the answer while the server waits for the
 * message and answers: every wait is fi_poll until the context of the
 * object being waited for comes back (bounded), after which the CQ must
 * hold the completion (queue) or the counter must have moved by one
 * (counter). Payloads are checked. With both CQs drained fi_poll returns
 * 0; fi_poll_del takes the objects out again and the poll set closes.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"

static int use_counters; /* -t counter */
static struct fid_poll *pollset;
static struct fid_cntr *txcntr, *rxcntr;
static char ctx_tx[] = "tx", ctx_rx[] = "rx";

static void extra_opt(int opt, const char *arg)
{
	if (opt == 't') {
		if (!strcmp(arg, "counter"))
			use_counters = 1;
		else if (strcmp(arg, "queue"))
			ft_die("-t queue|counter, not %s", arg);
	}
}

static void open_objects(void)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE, .size = 64 };
	struct fi_cntr_attr na = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE };
	struct fi_poll_attr pa = { .flags = 0 };
	int rc;
	if ((rc = fi_cq_open(ft_domain, &ca, &ft_txcq, ctx_tx)) || (rc = fi_cq_open(ft_domain, &ca, &ft_rxcq, ctx_rx)))
		ft_die("fi_cq_open: %s", fi_strerror(-rc));
	if (use_counters &&
	    ((rc = fi_cntr_open(ft_domain, &na, &txcntr, ctx_tx)) || (rc = fi_cntr_open(ft_domain, &na, &rxcntr, ctx_rx))))
		ft_die("fi_cntr_open: %s", fi_strerror(-rc));
	if ((rc = fi_poll_open(ft_domain, &pa, &pollset)))
		ft_die("fi_poll_open: %s", fi_strerror(-rc));
	if (use_counters) {
		if ((rc = fi_poll_add(pollset, &txcntr->fid, 0)) || (rc = fi_poll_add(pollset, &rxcntr->fid, 0)))
			ft_die("fi_poll_add(counter): %s", fi_strerror(-rc));
	} else if ((rc = fi_poll_add(pollset, &ft_txcq->fid, 0)) || (rc = fi_poll_add(pollset, &ft_rxcq->fid, 0))) {
		ft_die("fi_poll_add(cq): %s", fi_strerror(-rc));
	}
}

/* The endpoint, as ft_open_ep, with the counters bound too. */
static void open_ep(struct fi_info *info)
{
	int rc;
	if ((rc = fi_endpoint(ft_domain, info, &ft_ep, NULL)))
		ft_die("fi_endpoint: %s", fi_strerror(-rc));
	if ((rc = fi_ep_bind(ft_ep, &ft_txcq->fid, FI_TRANSMIT)) || (rc = fi_ep_bind(ft_ep, &ft_rxcq->fid, FI_RECV)) ||
	    (rc = fi_ep_bind(ft_ep, &ft_eq->fid, 0)))
		ft_die("fi_ep_bind: %s", fi_strerror(-rc));
	if (use_counters &&
	    ((rc = fi_ep_bind(ft_ep, &txcntr->fid, FI_SEND)) || (rc = fi_ep_bind(ft_ep, &rxcntr->fid, FI_RECV))))
		ft_die("fi_ep_bind(counter): %s", fi_strerror(-rc));
	if ((rc = fi_enable(ft_ep)))
		ft_die("fi_enable: %s", fi_strerror(-rc));
}

static void connect_pair(void)
{
	struct fi_eq_cm_entry cm;
	int rc;
	if (ft_is_client()) {
		open_ep(ft_info);
		if ((rc = fi_connect(ft_ep, ft_info->dest_addr, NULL, 0)))
			ft_die("fi_connect: %s", fi_strerror(-rc));
		ft_eq_expect(FI_CONNECTED, &cm, sizeof(cm));
	} else {
		ft_listen();
		ft_eq_expect(FI_CONNREQ, &cm, sizeof(cm));
		ft_conn_info = cm.info;
		open_ep(ft_conn_info);
		if ((rc = fi_accept(ft_ep, NULL, 0)))
			ft_die("fi_accept: %s", fi_strerror(-rc));
		ft_eq_expect(FI_CONNECTED, &cm, sizeof(cm));
	}
}

/* Contexts fi_poll returned that no wait has taken yet: a counter is
 * reported once per change, so a report that comes while waiting for the
 * other object must be kept. */
static int pending_tx, pending_rx;

/* fi_poll until `want`'s context has come back (bounded); every context
 * returned must be one of ours. */
static void poll_for(const char *want, const char *what)
{
	int *mine = want == ctx_tx ? &pending_tx : &pending_rx;
	double end = ft_now() + FT_TIMEOUT;
	while (!*mine && ft_now() < end) {
		void *ctx[4] = { NULL };
		int n = fi_poll(pollset, ctx, 4);
		if (n < 0)
			ft_die("fi_poll (%s): %s", what, fi_strerror(-n));
		if (n > 4)
			FT_CHECK(0, "fi_poll returned %d contexts for an array of 4", n);
		for (int i = 0; i < n && i < 4; i++) {
			if (ctx[i] == ctx_tx)
				pending_tx = 1;
			else if (ctx[i] == ctx_rx)
				pending_rx = 1;
			else
				FT_CHECK(0, "fi_poll (%s) returned context %p, not one of ours", what, ctx[i]);
		}
	}
	if (!*mine)
		ft_die("fi_poll did not report the %s %s within %.0f s (%s)", want, use_counters ? "counter" : "CQ",
		       FT_TIMEOUT, what);
	*mine = 0;
}

/* After fi_poll reported `which`: the CQ holds the completion; with
 * counters, the counter has reached `count`. */
static void take(struct fid_cq *cq, struct fid_cntr *cntr, uint64_t count, const char *what)
{
	struct fi_cq_msg_entry e;
	if (cntr) {
		uint64_t v = fi_cntr_read(cntr);
		FT_CHECK(v == count, "%s: counter %llu after fi_poll reported it, want %llu", what,
			 (unsigned long long) v, (unsigned long long) count);
		FT_CHECK(fi_cntr_readerr(cntr) == 0, "%s: counter errors %llu", what,
			 (unsigned long long) fi_cntr_readerr(cntr));
		ft_cq_ok(cq, &e, what);
		return;
	}
	struct fi_cq_err_entry err;
	int n = ft_cq_poll(cq, &e, &err, NULL);
	FT_CHECK(n == 1, "%s: fi_poll reported the CQ but fi_cq_read gave %d (%s)", what, n,
		 n < 0 ? fi_strerror(-n) : "nothing");
	if (n == 0)
		ft_cq_ok(cq, &e, what);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	size_t size;
	char *tx, *rx;
	ft_args(argc, argv, "t:", extra_opt);
	if (ft_ep_type != FI_EP_MSG)
		ft_die("fi_poll needs -e msg");
	hints = ft_hints(FI_MSG);
	ft_require(hints, "msg endpoints");
	ft_setup(hints);
	open_objects();
	connect_pair();
	size = ft_opts.size;
	tx = malloc(size ? size : 1);
	rx = malloc(size ? size : 1);
	for (int i = 0; i < ft_opts.iters; i++) {
		unsigned mine = 2 * (unsigned) i + (ft_is_client() ? 0 : 1), theirs = mine ^ 1;
		long bad;
		memset(rx, 0, size);
		ft_fill(tx, size, mine);
		FT_POST(fi_recv(ft_ep, rx, size, NULL, 0, rx), "fi_recv");
		if (ft_is_client()) {
			FT_POST(fi_send(ft_ep, tx, size, NULL, 0, tx), "fi_send");
			poll_for(ctx_tx, "send");
			take(ft_txcq, txcntr, (uint64_t) i + 1, "send");
			poll_for(ctx_rx, "receive");
			take(ft_rxcq, rxcntr, (uint64_t) i + 1, "receive");
		} else {
			poll_for(ctx_rx, "receive");
			take(ft_rxcq, rxcntr, (uint64_t) i + 1, "receive");
			FT_POST(fi_send(ft_ep, tx, size, NULL, 0, tx), "fi_send");
			poll_for(ctx_tx, "send");
			take(ft_txcq, txcntr, (uint64_t) i + 1, "send");
		}
		bad = ft_verify(rx, size, theirs);
		FT_CHECK(bad < 0, "message %d: byte %ld differs", i, bad);
	}
	ft_log("%d round trips through the poll set", ft_opts.iters);
	if (!use_counters) {
		void *ctx[4];
		int n = fi_poll(pollset, ctx, 4);
		FT_CHECK(n == 0, "fi_poll with both CQs drained returned %d", n);
	}
	if (use_counters) {
		FT_RC(fi_poll_del(pollset, &txcntr->fid, 0), 0);
		FT_RC(fi_poll_del(pollset, &rxcntr->fid, 0), 0);
	} else {
		FT_RC(fi_poll_del(pollset, &ft_txcq->fid, 0), 0);
		FT_RC(fi_poll_del(pollset, &ft_rxcq->fid, 0), 0);
	}
	/* Both sides are done before either closes its end. */
	{
		struct fi_cq_msg_entry e;
		FT_POST(fi_recv(ft_ep, rx, size, NULL, 0, rx), "fi_recv(final)");
		FT_POST(fi_send(ft_ep, tx, size, NULL, 0, tx), "fi_send(final)");
		ft_cq_ok(ft_txcq, &e, "final send");
		ft_cq_ok(ft_rxcq, &e, "final receive");
	}
	FT_RC(fi_close(&pollset->fid), 0);
	free(tx);
	free(rx);
	if (ft_ep)
		fi_close(&ft_ep->fid);
	ft_ep = NULL;
	if (txcntr)
		fi_close(&txcntr->fid);
	if (rxcntr)
		fi_close(&rxcntr->fid);
	return ft_finish("fi_poll");
}
