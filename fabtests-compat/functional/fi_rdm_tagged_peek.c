/*
 * fi_rdm_tagged_peek: FI_PEEK, FI_CLAIM and FI_DISCARD on tagged receives
 * (fi_trecvmsg) of an RDM endpoint. The client sends tagged messages and
 * stays idle; the server, once they have all arrived (a tagged sync that
 * FI_ORDER_SAS puts behind them), checks:
 *  - a peek that matches nothing completes as an error entry with err
 *    FI_ENOMSG and the peek's op_context (before and after messages came);
 *  - a matching peek reports tag, len, flags and remote CQ data without
 *    consuming the message (a second peek sees the same message; a peek
 *    with a buffer returns buf NULL or the buffer holding the first bytes);
 *  - FI_PEEK|FI_CLAIM then a receive with FI_CLAIM (same fi_context) takes
 *    the claimed message into the buffer, and a normal fi_trecv in between
 *    gets the next matching message, not the claimed one;
 *  - FI_PEEK|FI_CLAIM then FI_CLAIM|FI_DISCARD drops it (a later peek finds
 *    nothing); FI_PEEK|FI_DISCARD drops a message directly.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "xfer.h"

/* The client's messages: tag, length, remote CQ data (0: fi_tsend). */
static const struct {
	uint64_t tag;
	size_t len;
	uint64_t data;
} msgs[] = {
	{ 0x10, 100, 0xc0ffee }, /* P0: peeked, claimed, then taken by FI_CLAIM */
	{ 0x11, 200, 0 },        /* P1: left alone until the end */
	{ 0x10, 300, 0 },        /* P2: the normal receive's, while P0 is claimed */
	{ 0x20, 400, 0 },        /* P3: claimed, then discarded */
	{ 0x30, 500, 0 },        /* P4: discarded by the peek itself */
};
#define NMSG (sizeof(msgs) / sizeof(msgs[0]))

static char buf[1024];

/* fi_trecvmsg with `flags` for `tag`, into `len` bytes of buf (0: none).
 * Returns the completion: 1 (entry filled) or -err (err filled). */
static int op(uint64_t tag, uint64_t flags, struct fi_context *ctx, size_t len, struct fi_cq_tagged_entry *e,
	      struct fi_cq_err_entry *err)
{
	struct iovec iov = { buf, len };
	struct fi_msg_tagged m = { .msg_iov = len ? &iov : NULL, .iov_count = len ? 1 : 0, .addr = ft_peer,
				   .tag = tag, .ignore = 0, .context = ctx };
	FT_POST(fi_trecvmsg(ft_ep, &m, flags), "fi_trecvmsg");
	return ft_cq_wait(ft_rxcq, e, err, NULL);
}

/* A peek that must find nothing. */
static void expect_enomsg(uint64_t tag, const char *what)
{
	struct fi_context ctx;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int n = op(tag, FI_PEEK, &ctx, 0, &e, &err);
	FT_CHECK(n == -FI_ENOMSG, "%s: peek of tag %#llx completed %s, want an error entry with FI_ENOMSG", what,
		 (unsigned long long) tag, n == 1 ? "successfully" : fi_strerror(-n));
	if (n < 0)
		FT_CHECK(err.op_context == &ctx, "%s: FI_ENOMSG entry op_context %p, want %p", what, err.op_context,
			 (void *) &ctx);
}

/* A peek (with `extra` flags) that must find message `i`. */
static void expect_peek(int i, uint64_t extra, struct fi_context *ctx, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int n = op(msgs[i].tag, FI_PEEK | extra, ctx, 0, &e, &err);
	FT_CHECK(n == 1, "%s: peek of tag %#llx: %s", what, (unsigned long long) msgs[i].tag,
		 n < 0 ? fi_strerror(-n) : "ok");
	if (n != 1)
		return;
	FT_CHECK(e.op_context == ctx, "%s: op_context %p, want %p", what, e.op_context, (void *) ctx);
	FT_CHECK(e.tag == msgs[i].tag, "%s: tag %#llx", what, (unsigned long long) e.tag);
	FT_CHECK(e.len == msgs[i].len, "%s: len %zu, want %zu (message %d)", what, e.len, msgs[i].len, i);
	FT_CHECK((e.flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED), "%s: flags %#llx", what,
		 (unsigned long long) e.flags);
	if (msgs[i].data) {
		FT_CHECK(e.flags & FI_REMOTE_CQ_DATA, "%s: flags %#llx lack FI_REMOTE_CQ_DATA", what,
			 (unsigned long long) e.flags);
		FT_CHECK(e.data == msgs[i].data, "%s: data %#llx", what, (unsigned long long) e.data);
	}
}

/* A receive (flags 0 or FI_CLAIM) that must take message `i`. */
static void expect_recv(int i, uint64_t flags, struct fi_context *ctx, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int n;
	memset(buf, 0, sizeof(buf));
	n = op(msgs[i].tag, flags, ctx, sizeof(buf), &e, &err);
	FT_CHECK(n == 1, "%s: %s", what, n < 0 ? fi_strerror(-n) : "ok");
	if (n != 1)
		return;
	FT_CHECK(e.op_context == ctx, "%s: op_context %p, want %p", what, e.op_context, (void *) ctx);
	FT_CHECK(e.len == msgs[i].len, "%s: len %zu, want %zu (message %d)", what, e.len, msgs[i].len, i);
	FT_CHECK(e.tag == msgs[i].tag, "%s: tag %#llx", what, (unsigned long long) e.tag);
	FT_CHECK(xf_verify_at(buf, msgs[i].len, 0x1000 * (size_t) i) < 0, "%s: payload is not message %d's", what, i);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_args(argc, argv, NULL, NULL);
	hints = ft_hints(FI_MSG | FI_TAGGED);
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	ft_setup(hints);
	ft_open_cqs(FI_CQ_FORMAT_TAGGED);
	ft_init_ep();

	if (ft_is_client()) {
		static char tx[NMSG][1024];
		struct fi_cq_tagged_entry e;
		xf_tsync();
		for (unsigned i = 0; i < NMSG; i++) {
			xf_fill_at(tx[i], msgs[i].len, 0x1000 * (size_t) i);
			if (msgs[i].data)
				FT_POST(fi_tsenddata(ft_ep, tx[i], msgs[i].len, NULL, msgs[i].data, ft_peer, msgs[i].tag, NULL),
					"fi_tsenddata");
			else
				FT_POST(fi_tsend(ft_ep, tx[i], msgs[i].len, NULL, ft_peer, msgs[i].tag, NULL), "fi_tsend");
		}
		for (unsigned i = 0; i < NMSG; i++)
			xf_cq_get(ft_txcq, &e, "tagged send");
		xf_tsync();
		xf_tsync(); /* the server is done */
	} else {
		static struct fi_context c0, c1, c2, c3, c4, c5;
		expect_enomsg(0x10, "nothing sent yet");
		xf_tsync();
		xf_tsync(); /* all five messages are here */
		expect_enomsg(0x99, "no message with this tag");
		expect_peek(0, 0, &c0, "peek");
		expect_peek(0, 0, &c1, "second peek (the first did not consume)");
		/* A peek may copy data: if buf is the user's buffer, it holds
		 * the message's first bytes; len stays the message's. */
		{
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err;
			memset(buf, 0, sizeof(buf));
			int n = op(msgs[0].tag, FI_PEEK, &c1, 50, &e, &err);
			FT_CHECK(n == 1, "peek with a buffer: %s", n < 0 ? fi_strerror(-n) : "ok");
			if (n == 1) {
				FT_CHECK(e.len == msgs[0].len, "peek with a 50-byte buffer: len %zu, want %zu", e.len,
					 msgs[0].len);
				FT_CHECK(e.buf == NULL || e.buf == buf, "peek with a buffer: buf %p, want NULL or %p", e.buf,
					 (void *) buf);
				if (e.buf == buf)
					FT_CHECK(xf_verify_at(buf, 50, 0) < 0 && buf[50] == 0,
						 "peek with a buffer: data is not the message's first 50 bytes");
			}
		}
		expect_peek(0, FI_CLAIM, &c2, "peek+claim");
		/* P0 is claimed: a normal receive for its tag takes P2. */
		expect_recv(2, 0, &c3, "normal receive while P0 is claimed");
		expect_recv(0, FI_CLAIM, &c2, "FI_CLAIM receive of the claimed message");
		expect_enomsg(0x10, "after both tag-0x10 messages were received");
		/* Claim then discard. */
		expect_peek(3, FI_CLAIM, &c4, "peek+claim (to discard)");
		{
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err;
			int n = op(msgs[3].tag, FI_CLAIM | FI_DISCARD, &c4, 0, &e, &err);
			FT_CHECK(n == 1, "FI_CLAIM|FI_DISCARD: %s", n < 0 ? fi_strerror(-n) : "ok");
			if (n == 1)
				FT_CHECK(e.op_context == &c4, "FI_CLAIM|FI_DISCARD: op_context %p", e.op_context);
		}
		expect_enomsg(0x20, "after FI_CLAIM|FI_DISCARD");
		/* Peek and discard at once. */
		expect_peek(4, FI_DISCARD, &c5, "peek+discard");
		expect_enomsg(0x30, "after FI_PEEK|FI_DISCARD");
		/* The untouched message is still there and whole. */
		expect_peek(1, 0, &c0, "peek of the untouched message");
		expect_recv(1, 0, &c1, "receive of the untouched message");
		expect_enomsg(0x11, "after everything was received");
		FT_CHECK(xf_cq_quiet(ft_rxcq, NULL, 0.05), "extra receive completions");
		xf_tsync();
	}
	return ft_finish("fi_rdm_tagged_peek");
}
