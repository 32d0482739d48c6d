/*
 * fi_unexpected_msg: messages from a sender the receiver has not put in its
 * AV yet. The client opens a second endpoint and tells the server its name
 * (over the first endpoint); the server does not insert it. From the second
 * endpoint the client sends five messages:
 *
 *   M0  tagged 0x100, 64 B        taken by a receive from FI_ADDR_UNSPEC
 *   M1  tagged 0x101, 64 B        |
 *   M2  tagged 0x102, -S bytes    | taken by receives directed at the
 *   M3  untagged, 200 B           | address fi_av_insert gives after they
 *   M4  tagged 0x103, 8 B         | arrived
 *
 * The server peeks (FI_PEEK, any source) until M4 is there, so all five
 * wait as unexpected messages (FI_ORDER_SAS); M2 is large enough to go by
 * whatever rendezvous the provider has (-S, default 1 MiB + 7). Then:
 *  - M0 to an undirected receive; with FI_SOURCE its source is
 *    FI_ADDR_NOTAVAIL (the sender is in no AV entry);
 *  - after fi_av_insert of the second endpoint's name: a receive directed
 *    at the client's first endpoint does not take M1 (cancelled later);
 *    receives directed at the new address take M1..M4 whole, with that
 *    address as their source (FI_SOURCE);
 *  - the server answers through the new address and the client's second
 *    endpoint receives it.
 * Upstream's fabtests 2.x `fi_unexpected_msg` makes the same sequence
 * (undirected, insert, directed) and hung on providers that kept such
 * messages unnamed. Run: -e rdm [-S size].
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "xfer.h"

#define TAG_NAME 0x4e4e
#define TAG_ANSWER 0x200

static struct {
	uint64_t tag; /* 0: untagged */
	size_t len; /* 0: ft_opts.size */
} msgs[] = {
	{ 0x100, 64 }, { 0x101, 64 }, { 0x102, 0 }, { 0, 200 }, { 0x103, 8 },
};
#define NMSG (sizeof(msgs) / sizeof(msgs[0]))

static int with_source;

static size_t len_of(unsigned i)
{
	return msgs[i].len ? msgs[i].len : ft_opts.size;
}

static void client(void)
{
	struct xf_ep ep2;
	struct fi_cq_tagged_entry e;
	char name[256], answer[16];
	size_t len = sizeof(name);
	char *tx[NMSG];
	int rc;

	xf_open_ep(&ep2, ft_info, ft_av, FI_CQ_FORMAT_TAGGED, 0);
	if ((rc = fi_getname(&ep2.ep->fid, name, &len)))
		ft_die("fi_getname(second endpoint): %s", fi_strerror(-rc));
	FT_POST(fi_tsend(ft_ep, name, len, NULL, ft_peer, TAG_NAME, NULL), "fi_tsend(name)");
	ft_cq_ok(ft_txcq, &e, "send of the second endpoint's name");

	for (unsigned i = 0; i < NMSG; i++) {
		size_t n = len_of(i);
		if (!(tx[i] = malloc(n)))
			ft_die("malloc");
		xf_fill_at(tx[i], n, 0x10000 * (size_t) i);
		if (msgs[i].tag)
			rc = (int) fi_tsend(ep2.ep, tx[i], n, NULL, ft_peer, msgs[i].tag, tx[i]);
		else
			rc = (int) fi_send(ep2.ep, tx[i], n, NULL, ft_peer, tx[i]);
		while (rc == -FI_EAGAIN) {
			(void) fi_cq_read(ep2.txcq, NULL, 0);
			rc = msgs[i].tag ? (int) fi_tsend(ep2.ep, tx[i], n, NULL, ft_peer, msgs[i].tag, tx[i])
					 : (int) fi_send(ep2.ep, tx[i], n, NULL, ft_peer, tx[i]);
		}
		if (rc)
			ft_die("send of M%u from the second endpoint: %s", i, fi_strerror(-rc));
	}
	FT_POST(fi_trecv(ep2.ep, answer, sizeof(answer), NULL, ft_peer, TAG_ANSWER, 0, answer),
		"fi_trecv(answer)");
	/* Drives the second endpoint until every send completed (a
	 * rendezvous completes once the server's directed receive took it). */
	for (unsigned i = 0; i < NMSG; i++)
		xf_cq_get(ep2.txcq, &e, "send from the second endpoint");
	xf_cq_get(ep2.rxcq, &e, "answer to the second endpoint");
	FT_CHECK(e.len == 5 && !memcmp(answer, "hello", 5), "answer: %zu bytes", e.len);
	xf_tsync();
	xf_close_ep(&ep2);
	for (unsigned i = 0; i < NMSG; i++)
		free(tx[i]);
}

/* Receives Mi with a receive from `src` and checks it. */
static void take(unsigned i, fi_addr_t src, fi_addr_t want_src, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t from = 0x5a5a;
	size_t n = len_of(i);
	char *buf = malloc(n + 16);
	int got;
	if (!buf)
		ft_die("malloc");
	memset(buf, 0xee, n + 16);
	if (msgs[i].tag)
		FT_POST(fi_trecv(ft_ep, buf, n, NULL, src, msgs[i].tag, 0, buf), "fi_trecv");
	else
		FT_POST(fi_recv(ft_ep, buf, n, NULL, src, buf), "fi_recv");
	got = ft_cq_wait(ft_rxcq, &e, &err, with_source ? &from : NULL);
	FT_CHECK(got == 1, "M%u (%s): error completion %s", i, what, got < 0 ? fi_strerror(-got) : "");
	if (got == 1) {
		FT_CHECK(e.op_context == buf, "M%u (%s): op_context %p, want %p", i, what, e.op_context, (void *) buf);
		FT_CHECK(e.len == n, "M%u (%s): len %zu, want %zu", i, what, e.len, n);
		if (msgs[i].tag)
			FT_CHECK(e.tag == msgs[i].tag, "M%u (%s): tag %#llx", i, what, (unsigned long long) e.tag);
		long bad = xf_verify_at(buf, n, 0x10000 * (size_t) i);
		FT_CHECK(bad < 0, "M%u (%s): byte %ld differs", i, what, bad);
		if (with_source)
			FT_CHECK(from == want_src, "M%u (%s): source %#llx, want %#llx", i, what,
				 (unsigned long long) from, (unsigned long long) want_src);
		ft_log("M%u (%s): %zu bytes, source %#llx", i, what, n, (unsigned long long) from);
	}
	free(buf);
}

static void server(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_msg_tagged m = { .addr = FI_ADDR_UNSPEC, .tag = msgs[NMSG - 1].tag };
	struct fi_context peek_ctx, wrong_ctx;
	char name[256], wrong[64];
	fi_addr_t peer2 = FI_ADDR_UNSPEC;
	double end;
	int rc, n;

	FT_POST(fi_trecv(ft_ep, name, sizeof(name), NULL, ft_peer, TAG_NAME, 0, NULL), "fi_trecv(name)");
	ft_cq_ok(ft_rxcq, &e, "receive of the second endpoint's name");

	/* Until the last message is here (the others came before it). */
	m.context = &peek_ctx;
	end = ft_now() + FT_TIMEOUT;
	do {
		if (ft_now() > end)
			ft_die("the client's last message did not arrive within %.0f s", FT_TIMEOUT);
		FT_POST(fi_trecvmsg(ft_ep, &m, FI_PEEK), "fi_trecvmsg(FI_PEEK)");
		n = ft_cq_wait(ft_rxcq, &e, &err, NULL);
		if (n < 0 && n != -FI_ENOMSG)
			ft_die("peek: %s", fi_strerror(-n));
	} while (n != 1);
	ft_log("all messages from the unnamed endpoint arrived");

	take(0, FI_ADDR_UNSPEC, FI_ADDR_NOTAVAIL, "undirected, before the insert");

	if ((rc = fi_av_insert(ft_av, name, 1, &peer2, 0, NULL)) != 1)
		ft_die("fi_av_insert(second endpoint) = %d", rc);
	/* Directed at the client's other endpoint: must leave M1 alone. */
	FT_POST(fi_trecv(ft_ep, wrong, sizeof(wrong), NULL, ft_peer, msgs[1].tag, 0, &wrong_ctx),
		"fi_trecv(other source)");
	FT_CHECK(xf_cq_quiet(ft_rxcq, NULL, 0.05), "a receive directed at the client's first endpoint completed");
	take(1, peer2, peer2, "directed, after the insert");
	take(2, peer2, peer2, "directed, large");
	take(3, peer2, peer2, "directed, untagged");
	take(4, peer2, peer2, "directed, last");

	rc = fi_cancel(&ft_ep->fid, &wrong_ctx);
	FT_CHECK(rc == 0, "fi_cancel of the receive for the other source: %s", fi_strerror(-rc));
	n = ft_cq_wait(ft_rxcq, &e, &err, NULL);
	FT_CHECK(n == -FI_ECANCELED && err.op_context == &wrong_ctx,
		 "the receive for the other source ended %s, want FI_ECANCELED", n == 1 ? "with a message" : fi_strerror(-n));

	FT_POST(fi_tsend(ft_ep, "hello", 5, NULL, peer2, TAG_ANSWER, NULL), "fi_tsend(answer)");
	ft_cq_ok(ft_txcq, &e, "send of the answer");
	xf_tsync();
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_opts.size = (1 << 20) + 7;
	ft_args(argc, argv, NULL, NULL);
	hints = ft_hints(FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE);
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	ft_require(hints, "FI_DIRECTED_RECV and FI_SOURCE on RDM");
	ft_setup(hints);
	with_source = (ft_info->caps & FI_SOURCE) != 0;
	ft_open_cqs(FI_CQ_FORMAT_TAGGED);
	ft_init_ep();
	xf_tsync();
	if (ft_is_client())
		client();
	else
		server();
	return ft_finish("fi_unexpected_msg");
}
