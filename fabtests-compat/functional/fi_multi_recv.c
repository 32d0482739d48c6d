/*
 * fi_multi_recv: FI_MULTI_RECV receive buffers on an RDM endpoint.
 *
 * The server sets FI_OPT_MIN_MULTI_RECV before enabling its endpoint
 * (fi_getopt must return it, before and after fi_enable) and posts
 * multi-recv buffers with fi_recvmsg(FI_MULTI_RECV). The client sends
 * messages of up to MIN - 64 bytes, first before the buffers are posted
 * (unexpected path), then after (expected path). For every message the
 * server checks: op_context is the buffer being filled, buf lies in it at
 * or after the end of the previous message (packed, in order, no overlap),
 * len and payload are the message's; the buffer is released (FI_MULTI_RECV
 * on the last message's completion, or a completion of its own) exactly
 * when less than MIN bytes remain, never earlier; the next message then
 * starts at the beginning of the next posted buffer. At the end, fi_cancel
 * of the buffers still posted (one partly filled) gives one FI_ECANCELED
 * error completion each.
 *
 * -O: the hints also name FI_MULTI_RECV as the default receive op flag
 * (hints->rx_attr->op_flags), as many programs ask for it; fi_getinfo
 * must still return the entry (op flags in hints are the application's
 * defaults, not a filter, fi_getinfo(3)), with FI_MULTI_RECV among its
 * caps. The test then runs as without -O.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "xfer.h"

#define BUFSZ 8192
#define MIN_MR 1500
#define NBUF 6
#define K1 20 /* messages before the buffers are posted */
#define K2 20 /* after */

static char bufs[NBUF][BUFSZ];
static struct fi_context ctxs[NBUF];

static size_t msg_len(int j)
{
	return j == 7 ? 0 : (size_t) (j * 397 + 11) % (MIN_MR - 64);
}

/* The endpoint, as ft_open_ep, with FI_OPT_MIN_MULTI_RECV set before
 * fi_enable (server) and read back. */
static void open_ep(void)
{
	size_t min = MIN_MR, got = 0, len = sizeof(got);
	int rc;
	if ((rc = fi_endpoint(ft_domain, ft_info, &ft_ep, NULL)))
		ft_die("fi_endpoint: %s", fi_strerror(-rc));
	if ((rc = fi_ep_bind(ft_ep, &ft_txcq->fid, FI_TRANSMIT)) || (rc = fi_ep_bind(ft_ep, &ft_rxcq->fid, FI_RECV)) ||
	    (rc = fi_ep_bind(ft_ep, &ft_av->fid, 0)))
		ft_die("fi_ep_bind: %s", fi_strerror(-rc));
	if (!ft_is_client()) {
		FT_RC(fi_setopt(&ft_ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)), 0);
		FT_RC(fi_getopt(&ft_ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got, &len), 0);
		FT_CHECK(got == MIN_MR && len == sizeof(size_t), "fi_getopt before enable: %zu (optlen %zu), want %d", got,
			 len, MIN_MR);
	}
	if ((rc = fi_enable(ft_ep)))
		ft_die("fi_enable: %s", fi_strerror(-rc));
	ft_oob_exchange(ft_ep);
	if (!ft_is_client()) {
		got = 0, len = sizeof(got);
		FT_RC(fi_getopt(&ft_ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got, &len), 0);
		FT_CHECK(got == MIN_MR, "fi_getopt after enable: %zu, want %d", got, MIN_MR);
	}
	ft_exchange_addresses();
}

static void post(int b)
{
	struct iovec iov = { bufs[b], BUFSZ };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = ft_peer, .context = &ctxs[b] };
	FT_POST(fi_recvmsg(ft_ep, &m, FI_MULTI_RECV), "fi_recvmsg(FI_MULTI_RECV)");
}

/* Receiver state: the buffer being filled and where its data ends. */
static int cur;
static char *end; /* end of the last message placed in bufs[cur] */
static int released[NBUF];

/* Handles one completion; returns 1 if it was a message. */
static int take(int j)
{
	struct fi_cq_tagged_entry e;
	int b;
	if (!xf_cq_get(ft_rxcq, &e, "multi-recv completion"))
		return 1;
	b = (int) ((struct fi_context *) e.op_context - ctxs);
	if (b < 0 || b >= NBUF) {
		FT_CHECK(0, "completion with unknown op_context %p", e.op_context);
		return 1;
	}
	if (!(e.flags & FI_RECV)) {
		/* A release of its own. */
		FT_CHECK(e.flags & FI_MULTI_RECV, "completion with neither FI_RECV nor FI_MULTI_RECV: %#llx",
			 (unsigned long long) e.flags);
		FT_CHECK(b == cur && !released[b], "release of buffer %d while filling buffer %d", b, cur);
		FT_CHECK((size_t) (bufs[b] + BUFSZ - end) < MIN_MR, "buffer %d released with %zu bytes free (min %d)", b,
			 (size_t) (bufs[b] + BUFSZ - end), MIN_MR);
		released[b] = 1;
		cur = b + 1;
		end = bufs[cur];
		return 0;
	}
	FT_CHECK(b == cur, "message %d went to buffer %d, want %d", j, b, cur);
	FT_CHECK((e.flags & (FI_RECV | FI_MSG)) == (FI_RECV | FI_MSG), "message %d: flags %#llx", j,
		 (unsigned long long) e.flags);
	FT_CHECK(e.len == msg_len(j), "message %d: len %zu, want %zu", j, e.len, msg_len(j));
	char *p = e.buf;
	if (p < bufs[b] || p + e.len > bufs[b] + BUFSZ) {
		FT_CHECK(0, "message %d: buf %p outside buffer %d [%p, %p)", j, (void *) p, b, (void *) bufs[b],
			 (void *) (bufs[b] + BUFSZ));
		return 1;
	}
	FT_CHECK(p >= end, "message %d at offset %td overlaps the previous one (ends at %td)", j, p - bufs[b],
		 end - bufs[b]);
	FT_CHECK(p < end + 64, "message %d at offset %td: a gap of %td bytes after the previous one", j,
		 p - bufs[b], p - end);
	FT_CHECK(xf_verify_at(p, e.len, 0x1000 * (size_t) j) < 0, "message %d: payload", j);
	ft_log("message %d: buffer %d offset %td len %zu flags %#llx", j, b, p - bufs[b], e.len,
	       (unsigned long long) e.flags);
	end = p + e.len;
	size_t left = (size_t) (bufs[b] + BUFSZ - end);
	if (e.flags & FI_MULTI_RECV) {
		FT_CHECK(left < MIN_MR, "buffer %d released with %zu bytes free (min %d)", b, left, MIN_MR);
		released[b] = 1;
		cur = b + 1;
		end = bufs[cur];
	} else if (left < MIN_MR) {
		/* Must be released now: a separate completion comes next. */
		struct fi_cq_tagged_entry r;
		if (xf_cq_get(ft_rxcq, &r, "release")) {
			FT_CHECK(r.op_context == &ctxs[b] && (r.flags & FI_MULTI_RECV) && !(r.flags & FI_RECV),
				 "buffer %d has %zu bytes free (< min %d) but was not released (next completion: ctx %p "
				 "flags %#llx)",
				 b, left, MIN_MR, r.op_context, (unsigned long long) r.flags);
			if (r.op_context == &ctxs[b]) {
				released[b] = 1;
				cur = b + 1;
				end = bufs[cur];
			}
		}
	}
	return 1;
}

/* fi_cancel of the buffers still posted (the one being filled and the
 * unused ones): one FI_ECANCELED error completion each. */
static void cancel_rest(void)
{
	int seen[NBUF] = { 0 };
	for (int b = cur; b < NBUF; b++)
		FT_RC(fi_cancel(&ft_ep->fid, &ctxs[b]), 0);
	for (int b = cur; b < NBUF; b++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int n = ft_cq_wait(ft_rxcq, &e, &err, NULL);
		FT_CHECK(n == -FI_ECANCELED, "canceled multi-recv buffer: completion %d (%s), want FI_ECANCELED", n,
			 n < 0 ? fi_strerror(-n) : "success");
		if (n < 0) {
			int i = (int) ((struct fi_context *) err.op_context - ctxs);
			FT_CHECK(i >= cur && i < NBUF, "canceled multi-recv buffer: op_context %p", err.op_context);
			if (i >= cur && i < NBUF)
				seen[i]++;
		}
	}
	for (int b = cur; b < NBUF; b++)
		FT_CHECK(seen[b] == 1, "buffer %d canceled %d times", b, seen[b]);
	FT_CHECK(xf_cq_quiet(ft_rxcq, NULL, 0.05), "extra completions after the cancels");
}

static void receive(int from, int to)
{
	for (int j = from; j < to;)
		j += take(j);
}

static void send_msgs(int from, int to)
{
	static char tx[K1 + K2][MIN_MR];
	struct fi_cq_tagged_entry e;
	for (int j = from; j < to; j++) {
		xf_fill_at(tx[j], msg_len(j), 0x1000 * (size_t) j);
		FT_POST(fi_send(ft_ep, tx[j], msg_len(j), NULL, ft_peer, tx[j]), "fi_send");
	}
	for (int j = from; j < to; j++)
		xf_cq_get(ft_txcq, &e, "send");
}

static int op_flags_hint; /* -O */

static void extra_opt(int opt, const char *arg)
{
	(void) arg;
	if (opt == 'O')
		op_flags_hint = 1;
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_args(argc, argv, "O", extra_opt);
	hints = ft_hints(FI_MSG | FI_TAGGED | FI_MULTI_RECV);
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	if (op_flags_hint)
		hints->rx_attr->op_flags = FI_MULTI_RECV;
	ft_setup(hints);
	if (op_flags_hint)
		FT_CHECK(ft_info->caps & FI_MULTI_RECV, "entry for rx_attr->op_flags FI_MULTI_RECV lacks the cap: %#llx",
			 (unsigned long long) ft_info->caps);
	ft_open_cqs(FI_CQ_FORMAT_TAGGED);
	open_ep();
	if (ft_is_client()) {
		send_msgs(0, K1);
		xf_tsync(); /* server: all K1 are here, unexpected */
		xf_tsync(); /* server: buffers for round 2 posted */
		send_msgs(K1, K1 + K2);
		xf_tsync();
	} else {
		end = bufs[0];
		xf_tsync();
		for (int b = 0; b < NBUF / 2; b++)
			post(b);
		receive(0, K1);
		for (int b = NBUF / 2; b < NBUF; b++)
			post(b);
		xf_tsync();
		receive(K1, K1 + K2);
		FT_CHECK(released[0] && released[1], "buffers 0 and 1 were not both released");
		FT_CHECK(cur >= 2, "only %d buffers used", cur + 1);
		cancel_rest();
		xf_tsync();
	}
	return ft_finish("fi_multi_recv");
}
