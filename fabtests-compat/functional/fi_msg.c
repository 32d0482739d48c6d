/*
 * fi_msg: two-sided messages over a connected FI_EP_MSG endpoint (or, with
 * -e rdm / -e dgram, over a connectionless one): -I round trips of -S
 * bytes each way, every payload checked, with fi_send/fi_recv, then the
 * same with fi_sendv/fi_recvv (two iovecs) and fi_sendmsg/fi_recvmsg; then
 * a batch of sends posted with FI_MORE but the last (the provider may hold
 * them back until then, and must not lose or reorder them).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <sys/uio.h>

static char *txbuf, *rxbuf;

/* One exchange of `size` bytes each way; `how` picks the call family:
 * 0 send/recv, 1 sendv/recvv, 2 sendmsg/recvmsg. */
static void exchange(size_t size, unsigned seq, int how)
{
	struct fi_cq_msg_entry e, re;
	size_t half = size / 2;
	struct iovec txv[2] = { { txbuf, half }, { txbuf + half, size - half } };
	struct iovec rxv[2] = { { rxbuf, half }, { rxbuf + half, size - half } };
	struct fi_msg tm = { .msg_iov = txv, .iov_count = 2, .addr = ft_peer, .context = txbuf };
	struct fi_msg rm = { .msg_iov = rxv, .iov_count = 2, .addr = ft_peer, .context = rxbuf };
	unsigned mine = seq * 2 + (ft_is_client() ? 0 : 1), theirs = seq * 2 + (ft_is_client() ? 1 : 0);
	long bad;

	ft_fill(txbuf, size, mine);
	memset(rxbuf, 0, size);
	if (how == 0)
		FT_POST(fi_recv(ft_ep, rxbuf, size, NULL, ft_peer, rxbuf), "fi_recv");
	else if (how == 1)
		FT_POST(fi_recvv(ft_ep, rxv, NULL, 2, ft_peer, rxbuf), "fi_recvv");
	else
		FT_POST(fi_recvmsg(ft_ep, &rm, FI_COMPLETION), "fi_recvmsg");
	/* The server answers only after its receive completes, so on an
	 * unreliable endpoint no message arrives before a posted buffer. */
	if (!ft_is_client())
		ft_cq_ok(ft_rxcq, &re, "receive");
	if (how == 0)
		FT_POST(fi_send(ft_ep, txbuf, size, NULL, ft_peer, txbuf), "fi_send");
	else if (how == 1)
		FT_POST(fi_sendv(ft_ep, txv, NULL, 2, ft_peer, txbuf), "fi_sendv");
	else
		FT_POST(fi_sendmsg(ft_ep, &tm, FI_COMPLETION), "fi_sendmsg");
	ft_cq_ok(ft_txcq, &e, "send");
	FT_CHECK(e.op_context == txbuf, "send context %p, want %p", e.op_context, (void *) txbuf);
	FT_CHECK(e.flags & FI_SEND, "send completion flags %#lx lack FI_SEND", (unsigned long) e.flags);
	if (ft_is_client())
		ft_cq_ok(ft_rxcq, &re, "receive");
	FT_CHECK(re.op_context == rxbuf, "receive context %p, want %p", re.op_context, (void *) rxbuf);
	FT_CHECK(re.len == size, "receive length %zu, want %zu", re.len, size);
	FT_CHECK((re.flags & (FI_RECV | FI_MSG)) == (FI_RECV | FI_MSG), "receive flags %#lx", (unsigned long) re.flags);
	bad = ft_verify(rxbuf, size, theirs);
	FT_CHECK(bad < 0, "size %zu, call family %d: byte %ld differs", size, how, bad);
}

/* FI_MORE: each side posts MORE_N receives, then (client first, server
 * after its receives complete) MORE_N sends with FI_MORE on all but the
 * last; every message arrives, in order, intact. */
#define MORE_N 4
#define MORE_LEN 64
static void more_batch(void)
{
	struct fi_cq_msg_entry e;
	struct iovec v[MORE_N];
	struct fi_msg m[MORE_N];
	unsigned mine = ft_is_client() ? 1000 : 2000, theirs = ft_is_client() ? 2000 : 1000;

	for (int i = 0; i < MORE_N; i++) {
		memset(rxbuf + i * MORE_LEN, 0, MORE_LEN);
		FT_POST(fi_recv(ft_ep, rxbuf + i * MORE_LEN, MORE_LEN, NULL, ft_peer, rxbuf + i * MORE_LEN),
			"fi_recv");
	}
	if (!ft_is_client())
		for (int i = 0; i < MORE_N; i++) {
			ft_cq_ok(ft_rxcq, &e, "FI_MORE batch receive");
			FT_CHECK(e.op_context == rxbuf + i * MORE_LEN, "batch receive %d completed out of order", i);
		}
	for (int i = 0; i < MORE_N; i++) {
		ft_fill(txbuf + i * MORE_LEN, MORE_LEN, mine + i);
		v[i] = (struct iovec) { txbuf + i * MORE_LEN, MORE_LEN };
		m[i] = (struct fi_msg) { .msg_iov = &v[i], .iov_count = 1, .addr = ft_peer, .context = &m[i] };
		FT_POST(fi_sendmsg(ft_ep, &m[i], FI_COMPLETION | (i + 1 < MORE_N ? FI_MORE : 0)),
			"fi_sendmsg(FI_MORE)");
	}
	for (int i = 0; i < MORE_N; i++)
		ft_cq_ok(ft_txcq, &e, "FI_MORE batch send");
	if (ft_is_client())
		for (int i = 0; i < MORE_N; i++) {
			ft_cq_ok(ft_rxcq, &e, "FI_MORE batch receive");
			FT_CHECK(e.op_context == rxbuf + i * MORE_LEN, "batch receive %d completed out of order", i);
		}
	for (int i = 0; i < MORE_N; i++) {
		long bad = ft_verify(rxbuf + i * MORE_LEN, MORE_LEN, theirs + i);
		FT_CHECK(bad < 0, "FI_MORE batch message %d: byte %ld differs", i, bad);
	}
	ft_log("FI_MORE batch of %d sends", MORE_N);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	size_t sizes[] = { 0, 1, 64, 4096, 65536, 1 << 20 };
	ft_args(argc, argv, NULL, NULL);
	hints = ft_hints(FI_MSG);
	ft_setup(hints);
	ft_open_cqs(FI_CQ_FORMAT_MSG);
	ft_init_ep();
	txbuf = malloc(1 << 20);
	rxbuf = malloc(1 << 20);
	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t size = sizes[s];
		if (size > ft_info->ep_attr->max_msg_size)
			continue;
		for (int i = 0; i < ft_opts.iters; i++)
			exchange(size, (unsigned) i, i % 3);
		ft_log("size %zu: %d round trips", size, ft_opts.iters);
	}
	more_batch();
	free(txbuf);
	free(rxbuf);
	return ft_finish("fi_msg");
}
