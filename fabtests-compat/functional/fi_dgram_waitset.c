/*
 * fi_dgram_waitset: FI_EP_DGRAM endpoints whose completion queues belong
 * to a wait set (fi_poll(3): fi_wait_open, FI_WAIT_SET in fi_cq_attr,
 * fi_wait).
 *
 * Each side opens a wait set and both CQs with wait_obj FI_WAIT_SET on
 * it; every wait of the program is fi_wait on the set (bounded) followed
 * by reads of both CQs. With nothing pending, fi_wait times out with
 * -FI_ETIMEDOUT. The client introduces itself (HELLO/ACK), then -I times
 * sends a PING with a checked payload and waits for the server's PONG
 * echoing it, then says BYE. UDP may lose a datagram, so each request is
 * repeated (up to 5 times, 1 s apart) until its answer arrives, and the
 * server answers repeats again. A PING whose answer came only after
 * fi_wait returned 0 counts as woken by the wait set; at least one must.
 * A provider without DGRAM endpoints makes the program print "SKIP: ..."
 * and exit 77.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"

#define MAGIC 0x64777331u
#define NRX 8
#define PAY 512

enum { HELLO = 1, ACK, PING, PONG, BYE, BYEACK };

struct msg {
	uint32_t magic, type, seq, namelen;
	unsigned char name[128];
	unsigned char payload[PAY];
};

static struct fid_wait *ws;
static struct msg rx[NRX], tx;
static int wakeups, waits;

static void post_rx(int b)
{
	FT_POST(fi_recv(ft_ep, &rx[b], sizeof(rx[b]), NULL, FI_ADDR_UNSPEC, &rx[b]), "fi_recv");
}

static void send_msg(fi_addr_t dest, uint32_t type, uint32_t seq)
{
	tx.magic = MAGIC;
	tx.type = type;
	tx.seq = seq;
	if (type == PING || type == PONG)
		ft_fill(tx.payload, PAY, seq * 2 + (type == PONG));
	if (type == HELLO) {
		size_t len = sizeof(tx.name);
		int rc = fi_getname(&ft_ep->fid, tx.name, &len);
		if (rc)
			ft_die("fi_getname: %s", fi_strerror(-rc));
		tx.namelen = (uint32_t) len;
	}
	FT_POST(fi_send(ft_ep, &tx, sizeof(tx), NULL, dest, &tx), "fi_send");
	/* The send buffer is reused: wait for its completion. */
	{
		struct fi_cq_msg_entry e;
		struct fi_cq_err_entry err;
		double end = ft_now() + FT_TIMEOUT;
		int n;
		while (!(n = ft_cq_poll(ft_txcq, &e, &err, NULL)) && ft_now() < end) {
			int rc = fi_wait(ws, 100);
			if (rc && rc != -FI_ETIMEDOUT && rc != -FI_EAGAIN)
				ft_die("fi_wait (send): %s", fi_strerror(-rc));
		}
		if (n <= 0)
			ft_die("send of type %u: %s", type, n ? "error completion" : "no completion");
	}
}

/* Waits up to `secs` for a datagram: fi_wait on the set, then the receive
 * CQ. Returns the buffer index or -1. */
static int wait_rx(double secs, int *woken, int wait_first)
{
	double end = ft_now() + secs;
	*woken = 0;
	/* A PONG can be in the CQ before the client looks (the peer and the
	 * auto-progress thread are fast): waiting on the set first proves
	 * that a completion already queued wakes fi_wait at once. */
	if (wait_first) {
		int rc = fi_wait(ws, 200);
		waits++;
		if (rc == 0)
			*woken = 1;
		else if (rc != -FI_ETIMEDOUT && rc != -FI_EAGAIN)
			ft_die("fi_wait: %s", fi_strerror(-rc));
	}
	for (;;) {
		struct fi_cq_msg_entry e;
		struct fi_cq_err_entry err;
		int n = ft_cq_poll(ft_rxcq, &e, &err, NULL);
		if (n < 0)
			ft_die("receive: error completion %s", fi_strerror(-n));
		if (n)
			return (int) ((struct msg *) e.op_context - rx);
		(void) fi_cq_read(ft_txcq, NULL, 0);
		if (ft_now() >= end)
			return -1;
		int rc = fi_wait(ws, 200);
		waits++;
		if (rc == 0)
			*woken = 1;
		else if (rc != -FI_ETIMEDOUT && rc != -FI_EAGAIN)
			ft_die("fi_wait: %s", fi_strerror(-rc));
	}
}

static void open_objects(void)
{
	struct fi_wait_attr wa = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_SET, .size = 64 };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	int rc;
	if ((rc = fi_wait_open(ft_fabric, &wa, &ws)))
		ft_die("fi_wait_open: %s", fi_strerror(-rc));
	ca.wait_set = ws;
	if ((rc = fi_cq_open(ft_domain, &ca, &ft_txcq, NULL)) || (rc = fi_cq_open(ft_domain, &ca, &ft_rxcq, NULL)))
		ft_die("fi_cq_open(FI_WAIT_SET): %s", fi_strerror(-rc));
	if ((rc = fi_av_open(ft_domain, &aa, &ft_av, NULL)))
		ft_die("fi_av_open: %s", fi_strerror(-rc));
	ft_open_ep(ft_info);
	for (int b = 0; b < NRX; b++)
		post_rx(b);
	{
		double t0 = ft_now();
		rc = fi_wait(ws, 50);
		FT_CHECK(rc == -FI_ETIMEDOUT, "fi_wait on an idle set = %d (%s), want -FI_ETIMEDOUT", rc, fi_strerror(-rc));
		FT_CHECK(ft_now() - t0 >= 0.04, "fi_wait(50 ms) on an idle set returned after %.3f s", ft_now() - t0);
	}
}

/* Client: sends `type` until `answer` with `seq` comes back. */
static void request(uint32_t type, uint32_t seq, uint32_t answer)
{
	for (int tries = 0; tries < 5; tries++) {
		double end = ft_now() + 1.0;
		send_msg(ft_peer, type, seq);
		while (ft_now() < end) {
			int woken, b = wait_rx(end - ft_now(), &woken, answer == PONG);
			if (b < 0)
				break;
			struct msg *m = &rx[b];
			int match = m->magic == MAGIC && m->type == answer && m->seq == seq;
			if (match && answer == PONG) {
				long bad = ft_verify(m->payload, PAY, seq * 2 + 1);
				FT_CHECK(bad < 0, "PONG %u: byte %ld differs", seq, bad);
				wakeups += woken;
			}
			post_rx(b);
			if (match)
				return;
		}
		ft_log("request %u/%u repeated", type, seq);
	}
	ft_die("no answer %u to request %u (seq %u) after 5 tries", answer, type, seq);
}

static void run_client(void)
{
	if (fi_av_insert(ft_av, ft_info->dest_addr, 1, &ft_peer, 0, NULL) != 1)
		ft_die("fi_av_insert(server)");
	request(HELLO, 0, ACK);
	for (int i = 0; i < ft_opts.iters; i++)
		request(PING, (uint32_t) i, PONG);
	request(BYE, 0, BYEACK);
	FT_CHECK(wakeups > 0, "no PONG was reported by fi_wait returning 0 (%d waits)", waits);
	ft_log("%d of %d PONGs woke fi_wait", wakeups, ft_opts.iters);
}

static void run_server(void)
{
	double end = ft_now() + FT_TIMEOUT;
	int pings = 0;
	while (ft_now() < end) {
		int woken, b = wait_rx(end - ft_now(), &woken, 0);
		if (b < 0)
			break;
		struct msg *m = &rx[b];
		uint32_t type = m->type, seq = m->seq;
		if (m->magic != MAGIC) {
			FT_CHECK(0, "datagram with magic %#x", m->magic);
		} else if (type == HELLO) {
			if (ft_peer == FI_ADDR_UNSPEC && fi_av_insert(ft_av, m->name, 1, &ft_peer, 0, NULL) != 1)
				ft_die("fi_av_insert(client)");
			post_rx(b);
			send_msg(ft_peer, ACK, 0);
			continue;
		} else if (type == PING) {
			long bad = ft_verify(m->payload, PAY, seq * 2);
			FT_CHECK(bad < 0, "PING %u: byte %ld differs", seq, bad);
			pings++;
			post_rx(b);
			send_msg(ft_peer, PONG, seq);
			continue;
		} else if (type == BYE) {
			post_rx(b);
			send_msg(ft_peer, BYEACK, 0);
			FT_CHECK(pings >= ft_opts.iters, "%d PINGs before BYE, want %d", pings, ft_opts.iters);
			/* Answer a repeated BYE for a moment (our BYEACK may be lost). */
			while (wait_rx(0.5, &woken, 0) >= 0)
				;
			return;
		}
		post_rx(b);
	}
	ft_die("no BYE within %.0f s", FT_TIMEOUT);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_args(argc, argv, NULL, NULL);
	ft_ep_type = FI_EP_DGRAM;
	hints = ft_hints(FI_MSG);
	ft_require(hints, "dgram endpoints");
	ft_setup(hints);
	open_objects();
	if (ft_is_client())
		run_client();
	else
		run_server();
	fi_close(&ft_ep->fid);
	ft_ep = NULL;
	fi_close(&ft_txcq->fid);
	fi_close(&ft_rxcq->fid);
	ft_txcq = ft_rxcq = NULL;
	FT_RC(fi_close(&ws->fid), 0);
	return ft_finish("fi_dgram_waitset");
}
