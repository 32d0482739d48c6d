/*
 * rndv_check: large messages on the verbs RDM endpoint (issue 24's
 * rendezvous by RDMA READ), each case data-checked (fabtests convention:
 * the server with -B PORT [-s ADDR], the client with -P PORT ADDR; built
 * on fabtests-compat's shared.h). Tagged messages of 1 MiB unless said.
 * Steps, each printed as "ok STEP" or "FAIL STEP":
 *
 *  both_ways    client to server, then server to client, 64 KiB and 1 MiB
 *  unexpected   (server) a message that arrives before its receive is
 *               posted (the client's sync message follows it on the same
 *               connection, so it is there when the server posts)
 *  truncated    (server) a receive of 300000 bytes: FI_ETRUNC with the
 *               right olen, the first 300000 bytes in place; the send
 *               completes without error
 *  multi_iov    1 MiB + 3 sent from three buffers into four
 *  peek_claim   (server) FI_PEEK|FI_CLAIM finds an unexpected 1 MiB
 *               message with its length and tag, FI_CLAIM takes it whole;
 *               a second one is dropped by FI_CLAIM|FI_DISCARD, and its
 *               sender still completes
 *  sends_done   (client) every send completed without error
 *
 * -L asks for FI_MR_LOCAL (the entry must have it) and sends without
 * descriptors: the sender cannot announce such buffers and falls back to
 * segmented eager pieces; the same steps must pass. -D (with -L) registers
 * the buffers with FI_SEND | FI_RECV, as fabtests do, and passes their
 * descriptors, the multi-iov sender's three too: the sender announces the
 * application's registrations (the runner checks its log for no fallback).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <rdma/fi_tagged.h>

#define BIG (1 << 20)
#define SMALLER (64 << 10)
#define TRUNC 300000

static char *tx, *rx;
static int step_failures;
static int mr_local, use_desc;
static struct fid_mr *tx_mr, *rx_mr;
static void *tx_desc, *rx_desc;

static void step(const char *name)
{
	printf("%s %s\n", ft_failures == step_failures ? "ok" : "FAIL", name);
	fflush(stdout);
	step_failures = ft_failures;
}

static void extra(int opt, const char *arg)
{
	(void) arg;
	if (opt == 'L')
		mr_local = 1;
	if (opt == 'D')
		use_desc = 1;
}

/* One completion of `cq` with context `ctx`: 0, or the error (with `err`
 * filled). */
static int wait_ctx(struct fid_cq *cq, void *ctx, struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err)
{
	int n = ft_cq_wait(cq, e, err, NULL);
	void *got = n < 0 ? err->op_context : e->op_context;
	if (got != ctx)
		ft_die("a completion of context %p where %p was awaited", got, ctx);
	return n < 0 ? n : 0;
}

static void send_tagged(const char *buf, size_t len, uint64_t tag, void *ctx)
{
	FT_POST(fi_tsend(ft_ep, buf, len, tx_desc, ft_peer, tag, ctx), "fi_tsend");
}

static void recv_tagged(char *buf, size_t len, uint64_t tag, void *ctx)
{
	FT_POST(fi_trecv(ft_ep, buf, len, rx_desc, ft_peer, tag, 0, ctx), "fi_trecv");
}

/* A send of ours completes without error. */
static void sent(void *ctx, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int rc = wait_ctx(ft_txcq, ctx, &e, &err);
	FT_CHECK(rc == 0, "%s: send error %s", what, fi_strerror(-rc));
}

/* A receive completes with `len` bytes of message `seq`. */
static void received(void *ctx, size_t len, unsigned seq, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	long bad;
	int rc = wait_ctx(ft_rxcq, ctx, &e, &err);
	FT_CHECK(rc == 0, "%s: receive error %s", what, fi_strerror(-rc));
	if (rc)
		return;
	FT_CHECK(e.len == len, "%s: %zu bytes, want %zu", what, e.len, len);
	bad = ft_verify(rx, len, seq);
	FT_CHECK(bad < 0, "%s: byte %ld differs", what, bad);
}

static int ctx[16];

/* fi_mr_reg of `buf` for `access` into `mr`. */
static void register_buf(void *buf, size_t len, uint64_t access, struct fid_mr **mr)
{
	int rc = fi_mr_reg(ft_domain, buf, len, access, 0, 0, 0, mr, NULL);
	if (rc)
		ft_die("fi_mr_reg: %s", fi_strerror(-rc));
}

static void both_ways(void)
{
	static const size_t sizes[2] = { SMALLER, BIG };
	for (int i = 0; i < 2; i++) {
		unsigned seq = 10 + (unsigned) i;
		ft_sync();
		if (ft_is_client()) {
			ft_fill(tx, sizes[i], seq);
			send_tagged(tx, sizes[i], seq, &ctx[0]);
			sent(&ctx[0], "client to server");
			recv_tagged(rx, BIG, seq + 100, &ctx[1]);
			received(&ctx[1], sizes[i], seq + 100, "server to client");
		} else {
			memset(rx, 0, BIG);
			recv_tagged(rx, BIG, seq, &ctx[1]);
			received(&ctx[1], sizes[i], seq, "client to server");
			ft_fill(tx, sizes[i], seq + 100);
			send_tagged(tx, sizes[i], seq + 100, &ctx[0]);
			sent(&ctx[0], "server to client");
		}
	}
	step("both_ways");
}

/* The client sends message `seq` (tag `seq`), then syncs: the server
 * syncs before posting anything for it, so it waits as unexpected. The
 * two sends may complete in either order (an eager send completes once
 * it has left, one read by the receiver once it has been read). */
static void client_unexpected(unsigned seq)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int sync_ctx, seen = 0;
	char s[8];
	ft_fill(tx, BIG, seq);
	send_tagged(tx, BIG, seq, &ctx[2]);
	FT_POST(fi_recv(ft_ep, s, sizeof(s), NULL, ft_peer, NULL), "fi_recv(sync)");
	FT_POST(fi_send(ft_ep, NULL, 0, NULL, ft_peer, &sync_ctx), "fi_send(sync)");
	while (seen != 3) {
		int rc = ft_cq_wait(ft_txcq, &e, &err, NULL);
		void *c = rc < 0 ? err.op_context : e.op_context;
		FT_CHECK(rc > 0, "send error %s", fi_strerror(-rc));
		if (c == &ctx[2])
			seen |= 1;
		else if (c == &sync_ctx)
			seen |= 2;
		else
			ft_die("a send completion of context %p", c);
	}
	ft_cq_ok(ft_rxcq, &e, "sync receive");
}

static void unexpected(void)
{
	if (ft_is_client())
		return client_unexpected(20);
	ft_sync();
	memset(rx, 0, BIG);
	recv_tagged(rx, BIG, 20, &ctx[3]);
	received(&ctx[3], BIG, 20, "unexpected");
	step("unexpected");
}

static void truncated(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	long bad;
	int rc;
	ft_sync();
	if (ft_is_client()) {
		ft_fill(tx, BIG, 30);
		send_tagged(tx, BIG, 30, &ctx[4]);
		sent(&ctx[4], "truncated send");
		return;
	}
	memset(rx, 0, BIG);
	recv_tagged(rx, TRUNC, 30, &ctx[5]);
	rc = wait_ctx(ft_rxcq, &ctx[5], &e, &err);
	FT_CHECK(rc == -FI_ETRUNC, "receive: %d (%s), want FI_ETRUNC", rc, fi_strerror(-rc));
	if (rc == -FI_ETRUNC)
		FT_CHECK(err.olen == BIG - TRUNC, "olen %zu, want %d", err.olen, BIG - TRUNC);
	bad = ft_verify(rx, TRUNC, 30);
	FT_CHECK(bad < 0, "byte %ld differs", bad);
	FT_CHECK(rx[TRUNC] == 0, "a byte past the receive was written");
	step("truncated");
}

static void multi_iov(void)
{
	static const size_t tx_parts[3] = { 100000, 500003, BIG + 3 - 600003 };
	static const size_t rx_parts[4] = { 4096, 262144, 262144, BIG + 3 - 528384 };
	struct iovec iov[4];
	size_t off = 0;
	ft_sync();
	if (ft_is_client()) {
		/* Three separate buffers, the message's bytes in order. */
		char *parts[3];
		struct fid_mr *mrs[3] = { NULL };
		void *descs[3] = { NULL };
		struct fi_msg_tagged m = { .msg_iov = iov, .iov_count = 3, .addr = ft_peer, .tag = 40,
					   .context = &ctx[6] };
		for (int i = 0; i < 3; i++) {
			parts[i] = malloc(tx_parts[i]);
			if (!parts[i])
				ft_die("malloc");
		}
		ft_fill(tx, BIG + 3, 40);
		for (int i = 0; i < 3; i++) {
			memcpy(parts[i], tx + off, tx_parts[i]);
			iov[i] = (struct iovec) { parts[i], tx_parts[i] };
			off += tx_parts[i];
			if (use_desc) {
				register_buf(parts[i], tx_parts[i], FI_SEND, &mrs[i]);
				descs[i] = fi_mr_desc(mrs[i]);
				m.desc = descs;
			}
		}
		FT_POST(fi_tsendmsg(ft_ep, &m, FI_COMPLETION), "fi_tsendmsg");
		sent(&ctx[6], "multi-iov send");
		for (int i = 0; i < 3; i++) {
			if (mrs[i])
				fi_close(&mrs[i]->fid);
			free(parts[i]);
		}
		return;
	}
	{
		char *parts[4];
		struct fi_msg_tagged m = { .msg_iov = iov, .iov_count = 4, .addr = ft_peer, .tag = 40,
					   .context = &ctx[7] };
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		long bad;
		int rc;
		for (int i = 0; i < 4; i++) {
			parts[i] = calloc(1, rx_parts[i]);
			if (!parts[i])
				ft_die("calloc");
			iov[i] = (struct iovec) { parts[i], rx_parts[i] };
		}
		FT_POST(fi_trecvmsg(ft_ep, &m, FI_COMPLETION), "fi_trecvmsg");
		rc = wait_ctx(ft_rxcq, &ctx[7], &e, &err);
		FT_CHECK(rc == 0, "receive error %s", fi_strerror(-rc));
		FT_CHECK(rc || e.len == BIG + 3, "%zu bytes", e.len);
		for (int i = 0; i < 4; i++) {
			memcpy(rx + off, parts[i], rx_parts[i]);
			off += rx_parts[i];
			free(parts[i]);
		}
		bad = ft_verify(rx, BIG + 3, 40);
		FT_CHECK(bad < 0, "byte %ld differs", bad);
	}
	step("multi_iov");
}

/* fi_trecvmsg of `m` with `flags`, then its completion: 0 or the error. */
static int trecv_wait(struct fi_msg_tagged *m, uint64_t flags, struct fi_cq_tagged_entry *e)
{
	struct fi_cq_err_entry err;
	FT_POST(fi_trecvmsg(ft_ep, m, flags), "fi_trecvmsg");
	return wait_ctx(ft_rxcq, m->context, e, &err);
}

static void peek_claim(void)
{
	struct fi_context peek_ctx, peek2_ctx;
	struct iovec iov = { rx, BIG };
	struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = ft_peer };
	struct fi_cq_tagged_entry e;
	long bad;
	int rc;
	if (ft_is_client()) {
		client_unexpected(50);
		client_unexpected(51);
		return;
	}
	ft_sync();
	m.tag = 50;
	m.context = &peek_ctx;
	rc = trecv_wait(&m, FI_PEEK | FI_CLAIM, &e);
	FT_CHECK(rc == 0, "peek: %s", fi_strerror(-rc));
	FT_CHECK(rc || (e.len == BIG && e.tag == 50), "peek: len %zu tag %llu", e.len, (unsigned long long) e.tag);
	memset(rx, 0, BIG);
	rc = trecv_wait(&m, FI_CLAIM, &e);
	FT_CHECK(rc == 0, "claim: %s", fi_strerror(-rc));
	FT_CHECK(rc || e.len == BIG, "claim: %zu bytes", e.len);
	bad = ft_verify(rx, BIG, 50);
	FT_CHECK(bad < 0, "claim: byte %ld differs", bad);
	ft_sync();
	m.tag = 51;
	m.context = &peek2_ctx;
	rc = trecv_wait(&m, FI_PEEK | FI_CLAIM, &e);
	FT_CHECK(rc == 0, "second peek: %s", fi_strerror(-rc));
	rc = trecv_wait(&m, FI_CLAIM | FI_DISCARD, &e);
	FT_CHECK(rc == 0, "discard: %s", fi_strerror(-rc));
	step("peek_claim");
}

int main(int argc, char **argv)
{
	struct fi_info *h;
	ft_ep_type = FI_EP_RDM;
	ft_prov = "verbs";
	ft_args(argc, argv, "LD", extra);
	tx = malloc(BIG + 4);
	rx = malloc(BIG + 4);
	if (!tx || !rx)
		ft_die("malloc");
	h = ft_hints(FI_MSG | FI_TAGGED);
	if (mr_local)
		h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	ft_setup(h);
	if (mr_local)
		FT_CHECK(ft_info->domain_attr->mr_mode & FI_MR_LOCAL, "the entry has mr_mode %#x, no FI_MR_LOCAL",
			 ft_info->domain_attr->mr_mode);
	printf("provider %s, mr_mode %#x\n", ft_info->fabric_attr->prov_name, ft_info->domain_attr->mr_mode);
	ft_open_cqs(FI_CQ_FORMAT_TAGGED);
	if (use_desc) {
		register_buf(tx, BIG + 4, FI_SEND | FI_RECV, &tx_mr);
		register_buf(rx, BIG + 4, FI_SEND | FI_RECV, &rx_mr);
		tx_desc = fi_mr_desc(tx_mr);
		rx_desc = fi_mr_desc(rx_mr);
	}
	ft_init_ep();
	both_ways();
	unexpected();
	truncated();
	multi_iov();
	peek_claim();
	if (ft_is_client())
		step("sends_done");
	ft_sync();
	if (tx_mr)
		fi_close(&tx_mr->fid);
	if (rx_mr)
		fi_close(&rx_mr->fid);
	return ft_finish("rndv_check");
}
