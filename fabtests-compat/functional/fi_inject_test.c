/*
 * fi_inject_test: injected sends (-e rdm or -e msg).
 *  - fi_inject and fi_tinject of every size 0 .. tx_attr->inject_size from
 *    one buffer that is overwritten as soon as each call returns: every
 *    message arrives intact, in order, with its length;
 *  - no send completion for any of them (checked once the server has
 *    received them all);
 *  - fi_sendmsg / fi_tsendmsg with FI_INJECT: buffer overwritten at once,
 *    data intact, and (the CQ is not selective) one completion each;
 *  - inject_size + 1 bytes through fi_inject, fi_tinject, fi_injectdata and
 *    fi_sendmsg(FI_INJECT) is refused with an error (the man pages name no
 *    code: -FI_EMSGSIZE or -FI_EINVAL are accepted; -v prints it) and
 *    nothing of it reaches the peer.
 * Tagged calls are skipped when the endpoint lacks FI_TAGGED.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "xfer.h"

#define TAG_INJ 0x3000
#define W 128 /* receives posted at a time */

static int tagged_ok = 1;
static size_t isz;

/* Payload of message `seq` (its length is known separately). */
static size_t off_of(size_t seq)
{
	return seq * 3 + 1;
}

/* Server: receives `n` messages (tagged or not) whose seq starts at
 * `first` and whose length is len_of(i) for i = 0 .. n-1. */
static void receive_series(size_t n, int tagged, size_t first, size_t (*len_of)(size_t), const char *what)
{
	size_t cap = isz + 64, next = 0, done = 0;
	char *r = malloc(W * cap);
	int bad = 0;
	struct fi_cq_tagged_entry e;
	if (!r)
		ft_die("malloc");
	while (done < n) {
		while (next < n && next - done < W) {
			char *b = r + (next % W) * cap;
			void *ctx = (void *) (uintptr_t) (next + 1);
			if (tagged)
				FT_POST(fi_trecv(ft_ep, b, cap, NULL, ft_peer, TAG_INJ, 0, ctx), "fi_trecv");
			else
				FT_POST(fi_recv(ft_ep, b, cap, NULL, ft_peer, ctx), "fi_recv");
			next++;
		}
		if (!xf_cq_get(ft_rxcq, &e, what))
			break;
		size_t i = (size_t) (uintptr_t) e.op_context - 1;
		if (i >= n) {
			FT_CHECK(0, "%s: unknown op_context %p", what, e.op_context);
			break;
		}
		if (bad < 5 && (e.len != len_of(i) || xf_verify_at(r + (i % W) * cap, len_of(i), off_of(first + i)) >= 0)) {
			bad++;
			FT_CHECK(0, "%s: message %zu: len %zu (want %zu) or payload wrong", what, i, e.len, len_of(i));
		}
		done++;
	}
	free(r);
}

static size_t len_is_index(size_t i)
{
	return i;
}
static size_t len_msgs(size_t i)
{
	return i == 0 ? isz : isz / 2;
}
static size_t len_marker(size_t i)
{
	(void) i;
	return 5;
}

static void client(void)
{
	char *b = malloc(isz + 64);
	struct fi_cq_tagged_entry e;
	static char ack[8];
	if (!b)
		ft_die("malloc");
	/* The server acknowledges once it has every injected message. */
	FT_POST(fi_recv(ft_ep, ack, sizeof(ack), NULL, ft_peer, ack), "fi_recv(ack)");
	for (int t = 0; t < 1 + tagged_ok; t++) {
		for (size_t s = 0; s <= isz; s++) {
			xf_fill_at(b, s, off_of(s + (size_t) t * (isz + 1)));
			if (t)
				FT_POST(fi_tinject(ft_ep, b, s, ft_peer, TAG_INJ), "fi_tinject");
			else
				FT_POST(fi_inject(ft_ep, b, s, ft_peer), "fi_inject");
			memset(b, 0xa5, s); /* the call copied it */
		}
	}
	ft_cq_ok(ft_rxcq, &e, "ack of the injected messages");
	FT_CHECK(xf_cq_quiet(ft_txcq, NULL, 0.1), "fi_inject/fi_tinject produced a send completion");

	/* fi_sendmsg / fi_tsendmsg with FI_INJECT. */
	{
		size_t base = 2 * (isz + 1);
		struct iovec iov = { b, 0 };
		struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = ft_peer, .context = &iov };
		struct fi_msg_tagged tm = { .msg_iov = &iov, .iov_count = 1, .addr = ft_peer, .tag = TAG_INJ, .context = &m };
		for (size_t i = 0; i < 2; i++) {
			iov.iov_len = len_msgs(i);
			xf_fill_at(b, iov.iov_len, off_of(base + i));
			FT_POST(fi_sendmsg(ft_ep, &m, FI_INJECT), "fi_sendmsg(FI_INJECT)");
			memset(b, 0x5a, iov.iov_len);
		}
		if (tagged_ok) {
			for (size_t i = 0; i < 2; i++) {
				iov.iov_len = len_msgs(i);
				xf_fill_at(b, iov.iov_len, off_of(base + 2 + i));
				FT_POST(fi_tsendmsg(ft_ep, &tm, FI_INJECT), "fi_tsendmsg(FI_INJECT)");
				memset(b, 0x5a, iov.iov_len);
			}
		}
		for (int i = 0; i < 2 + 2 * tagged_ok; i++)
			if (xf_cq_get(ft_txcq, &e, "sendmsg(FI_INJECT) completion"))
				FT_CHECK(e.op_context == (i < 2 ? (void *) &iov : (void *) &m),
					 "sendmsg(FI_INJECT) completion %d: op_context %p", i, e.op_context);
		FT_CHECK(xf_cq_quiet(ft_txcq, NULL, 0.05), "extra send completions");
	}

	/* Above inject_size: refused, nothing sent. */
	{
		struct iovec iov = { b, isz + 1 };
		struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = ft_peer };
		ssize_t rc[4];
		const char *names[4] = { "fi_inject", "fi_tinject", "fi_injectdata", "fi_sendmsg(FI_INJECT)" };
		memset(b, 0x77, isz + 1);
		rc[0] = fi_inject(ft_ep, b, isz + 1, ft_peer);
		rc[1] = tagged_ok ? fi_tinject(ft_ep, b, isz + 1, ft_peer, TAG_INJ) : -FI_EMSGSIZE;
		rc[2] = fi_injectdata(ft_ep, b, isz + 1, 7, ft_peer);
		rc[3] = fi_sendmsg(ft_ep, &m, FI_INJECT);
		for (int i = 0; i < 4; i++) {
			FT_CHECK(rc[i] == -FI_EMSGSIZE || rc[i] == -FI_EINVAL,
				 "%s of inject_size + 1 = %zu bytes: %zd (%s), want an error (-FI_EMSGSIZE or -FI_EINVAL)",
				 names[i], isz + 1, rc[i], fi_strerror((int) -rc[i]));
			ft_log("%s of inject_size + 1: %zd (%s)", names[i], rc[i], fi_strerror((int) -rc[i]));
		}
		/* The next message the server gets is this marker. */
		xf_fill_at(b, 5, off_of(0x7777));
		FT_POST(fi_send(ft_ep, b, 5, NULL, ft_peer, b), "fi_send(marker)");
		xf_cq_get(ft_txcq, &e, "marker send");
		FT_CHECK(xf_cq_quiet(ft_txcq, NULL, 0.05), "a refused inject produced a completion");
	}
	free(b);
	ft_sync();
}

static void server(void)
{
	size_t n = isz + 1;
	struct fi_cq_tagged_entry e;
	receive_series(n, 0, 0, len_is_index, "fi_inject message");
	if (tagged_ok)
		receive_series(n, 1, n, len_is_index, "fi_tinject message");
	FT_POST(fi_send(ft_ep, "ack", 4, NULL, ft_peer, NULL), "fi_send(ack)");
	ft_cq_ok(ft_txcq, &e, "ack send");
	receive_series(2, 0, 2 * n, len_msgs, "fi_sendmsg(FI_INJECT) message");
	if (tagged_ok)
		receive_series(2, 1, 2 * n + 2, len_msgs, "fi_tsendmsg(FI_INJECT) message");
	/* Any part of a refused inject would arrive before the marker. */
	receive_series(1, 0, 0x7777, len_marker, "marker after refused injects");
	ft_sync();
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_args(argc, argv, NULL, NULL);
	hints = ft_hints(FI_MSG | FI_TAGGED);
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	tagged_ok = ft_probe_tagged(hints);
	ft_setup(hints);
	isz = ft_info->tx_attr->inject_size;
	ft_log("inject_size %zu", isz);
	FT_CHECK(isz > 0, "inject_size is 0");
	ft_open_cqs(FI_CQ_FORMAT_TAGGED);
	ft_init_ep();
	if (ft_is_client())
		client();
	else
		server();
	return ft_finish("fi_inject_test");
}
