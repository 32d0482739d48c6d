/*
 * fi_rma_pingpong: RMA latency as a ping-pong of fi_writedata, fabtests'
 * options and output columns (-o writedata, the default and only
 * operation: a plain write tells its target nothing, so the target could
 * not answer it). The client writes `size` bytes into the server's
 * registered region with 8 bytes of remote CQ data; the server sees the
 * remote completion (FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA on its receive
 * CQ, carrying the iteration number) and writes back. usec/xfer is half
 * the round trip. With -v each side fills what it writes with the
 * iteration's pattern and the other checks it, and the CQ data must be
 * the iteration number.
 *
 * Server: fi_rma_pingpong -p PROV -e rdm|msg [-B port];
 * client: fi_rma_pingpong -p PROV -e rdm|msg [-P port] SERVER_ADDR.
 * A provider without FI_RMA: "SKIP: <prov> lacks FI_RMA", exit 77.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "rma_common.h"

/* Waits for the peer's write: one receive-CQ completion, checked. */
static void wait_write(struct bench *b, uint64_t seq)
{
	struct fi_cq_data_entry e;
	b->rx_done += cq_poll(b, b->rxcq, &e, 1, "remote write", b->rx_done, b->rx_done + 1);
	if ((e.flags & (FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA)) != (FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA))
		die("remote write completion flags %#" PRIx64, (uint64_t) e.flags);
	if (b->o.verify && e.data != seq)
		die("remote CQ data %" PRIu64 ", want %" PRIu64, (uint64_t) e.data, seq);
}

static void write_peer(struct bench *b, size_t size, uint64_t seq)
{
	if (b->o.verify)
		fill(b->tx, size, seq);
	POST(b, fi_writedata(b->ep, b->tx, size, rma_desc, seq, b->peer, peer.addr, peer.key, &b->tx_ctx[0]),
	     "fi_writedata");
	wait_tx(b, b->tx_done + 1);
}

int main(int argc, char **argv)
{
	struct bench b;
	op = OP_WRITEDATA;
	argc = take_op_option(argc, argv, 1u << OP_WRITEDATA);
	parse_opts(&b, argc, argv, FI_EP_RDM, "RMA ping-pong latency with fi_writedata");
	require_rma(&b);
	b.cq_format = FI_CQ_FORMAT_DATA;
	if (b.o.ep_type == FI_EP_RDM) {
		b.tagged = 1;
		setup_rdm(&b, FI_TAGGED | FI_RMA, NULL);
	} else {
		setup_msg(&b, FI_MSG | FI_RMA, NULL);
	}
	setup_rma(&b);
	uint64_t seq = 0;
	print_header();
	for (int k = 0; k < b.o.nsizes; k++) {
		size_t size = b.o.sizes[k];
		long n = iters_for(&b, size);
		/* Both sides start a size together: the server says ready. */
		ctrl_post_recv(&b);
		if (b.is_client)
			ctrl_wait(&b, NULL, 0);
		else
			ctrl_send(&b, "ready", 6);
		double t0 = now_s();
		for (long i = -b.o.warmup; i < n; i++, seq++) {
			if (i == 0)
				t0 = now_s();
			if (b.is_client) {
				write_peer(&b, size, seq);
				wait_write(&b, seq);
				if (b.o.verify)
					check(b.rx, size, seq, "client (written by the server)");
			} else {
				wait_write(&b, seq);
				if (b.o.verify)
					check(b.rx, size, seq, "server (written by the client)");
				write_peer(&b, size, seq);
			}
		}
		print_result(size, n, 2.0 * (double) n, now_s() - t0);
		if (!b.is_client)
			ctrl_wait(&b, NULL, 0); /* the client's receive for "ready" is consumed */
		else
			ctrl_send(&b, "next", 5);
	}
	if (rma_mr)
		fi_close(&rma_mr->fid);
	teardown(&b);
	return 0;
}
