/*
 * fi_rma_bw: RMA streaming bandwidth, fabtests' options and output
 * columns. -o write (default) | read | writedata | atomic picks the
 * operation (atomic: FI_SUM of 1 to each uint64 of the size, sizes that
 * are not a multiple of 8 or above the provider's atomic count skipped;
 * its Mxfers/sec column is the atomic rate); the
 * client is the initiator and keeps a window (-W) of operations in flight
 * against one region of the server, which is registered for remote access
 * and whose address and key (FI_MR_VIRT_ADDR / FI_MR_PROV_KEY honoured)
 * the server sends over the control channel. With writedata the server
 * counts the remote-CQ-data completions of each window and acknowledges
 * it, as fi_rdm_tagged_bw acknowledges messages.
 *
 * Before each size the server says "ready" (for -v reads: its region holds
 * the pattern); after it the client says "done" (for -v writes: the server
 * then checks its region; for atomics, that every word holds the number
 * of additions aimed at it). A provider without FI_RMA (FI_ATOMIC for
 * atomics): "SKIP: <prov> lacks FI_RMA", exit 77.
 *
 * Server: fi_rma_bw -p PROV -e rdm|msg [-o OP] [-B port];
 * client: fi_rma_bw -p PROV -e rdm|msg [-o OP] [-P port] SERVER_ADDR.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "rma_common.h"

static void post_rma(struct bench *b, size_t size, size_t j, uint64_t seq)
{
	void *ctx = &b->tx_ctx[j];
	uint64_t addr = peer.addr + (j % b->rx_slots) * b->max_size;
	if (op == OP_WRITE)
		POST(b, fi_write(b->ep, b->tx, size, rma_desc, b->peer, addr, peer.key, ctx), "fi_write");
	else if (op == OP_WRITEDATA)
		POST(b, fi_writedata(b->ep, b->tx, size, rma_desc, seq, b->peer, addr, peer.key, ctx), "fi_writedata");
	else if (op == OP_ATOMIC)
		POST(b, fi_atomic(b->ep, b->tx, size / 8, rma_desc, b->peer, addr, peer.key, FI_UINT64, FI_SUM, ctx),
		     "fi_atomic");
	else
		POST(b, fi_read(b->ep, b->rx + (j % b->rx_slots) * b->max_size, size, rma_desc, b->peer, addr, peer.key,
				ctx),
		     "fi_read");
}

/* Whether fi_atomic can carry `size` bytes of uint64 in one operation. */
static int atomic_size_ok(struct bench *b, size_t size)
{
	size_t count = 0;
	if (size % 8 || fi_atomicvalid(b->ep, FI_UINT64, FI_SUM, &count))
		return 0;
	return size / 8 >= 1 && size / 8 <= count;
}

/* Atomics: the words of every target slot start at 0 (server) ... */
static void zero_slots(struct bench *b, size_t size)
{
	for (size_t j = 0; j < b->rx_slots; j++)
		memset(b->rx + j * b->max_size, 0, size);
}

/* ... and end holding how many of the `ops` additions (post j of each
 * window of w goes to slot j % rx_slots) aimed at them. */
static void check_sums(struct bench *b, size_t size, long windows, long w)
{
	for (size_t s = 0; s < b->rx_slots && s < (size_t) w; s++) {
		uint64_t want = 0, got;
		for (long j = 0; j < w; j++)
			want += (size_t) j % b->rx_slots == s;
		want *= (uint64_t) windows;
		for (size_t k = 0; k < size / 8; k++) {
			memcpy(&got, b->rx + s * b->max_size + 8 * k, 8);
			if (got != want)
				die("atomic sums: slot %zu word %zu holds %" PRIu64 ", want %" PRIu64, s, k, got,
				    want);
		}
	}
}

int main(int argc, char **argv)
{
	struct bench b;
	argc = take_op_option(argc, argv, 0xf);
	parse_opts(&b, argc, argv, FI_EP_RDM, "RMA streaming bandwidth (-o write|read|writedata|atomic)");
	require_rma(&b);
	if (b.o.ep_type == FI_EP_RDM) {
		b.tagged = 1;
		setup_rdm(&b, FI_TAGGED | FI_RMA | (op == OP_ATOMIC ? FI_ATOMIC : 0), NULL);
	} else {
		setup_msg(&b, FI_MSG | FI_RMA | (op == OP_ATOMIC ? FI_ATOMIC : 0), NULL);
	}
	setup_rma(&b);
	const long w = b.o.window;
	uint64_t seq = 0;
	print_header();
	for (int k = 0; k < b.o.nsizes; k++) {
		size_t size = b.o.sizes[k];
		long windows = (iters_for(&b, size) + w - 1) / w;
		long warm = b.o.warmup > 0 ? 1 : 0;
		double t0;
		seq++;
		if (op == OP_ATOMIC && !atomic_size_ok(&b, size))
			continue;
		if (b.is_client) {
			ctrl_post_recv(&b);
			ctrl_wait(&b, NULL, 0); /* ready */
			if (op == OP_ATOMIC)
				for (size_t k = 0; k < size / 8; k++)
					memcpy(b.tx + 8 * k, &(uint64_t){ 1 }, 8);
			else if (b.o.verify && op != OP_READ)
				fill(b.tx, size, seq);
			t0 = now_s();
			for (long i = -warm; i < windows; i++) {
				if (i == 0)
					t0 = now_s();
				if (op == OP_WRITEDATA)
					ctrl_post_recv(&b);
				for (long j = 0; j < w; j++)
					post_rma(&b, size, (size_t) j, seq);
				wait_tx(&b, b.tx_done + (uint64_t) w);
				if (op == OP_WRITEDATA)
					wait_rx(&b, b.rx_done + 1); /* the window's ack */
				if (b.o.verify && op == OP_READ)
					for (size_t j = 0; j < b.rx_slots && j < (size_t) w; j++)
						check(b.rx + j * b.max_size, size, seq, "client read");
			}
			print_result(size, windows * w, (double) (windows * w), now_s() - t0);
			ctrl_post_recv(&b);
			ctrl_send(&b, "done", 5);
			ctrl_wait(&b, NULL, 0); /* checked */
		} else {
			if (b.o.verify && op == OP_READ)
				for (size_t j = 0; j < b.rx_slots; j++)
					fill(b.rx + j * b.max_size, size, seq);
			if (op == OP_ATOMIC)
				zero_slots(&b, size);
			ctrl_post_recv(&b);
			ctrl_send(&b, "ready", 6);
			t0 = now_s();
			if (op == OP_WRITEDATA) {
				/* the done message is already posted for: count data
				 * completions per window, then ack */
				for (long i = -warm; i < windows; i++) {
					if (i == 0)
						t0 = now_s();
					wait_rx(&b, b.rx_done + (uint64_t) w);
					ctrl_send(&b, "ack", 4);
				}
			}
			ctrl_wait(&b, NULL, 0); /* done */
			print_result(size, windows * w, (double) (windows * w), now_s() - t0);
			if (op == OP_ATOMIC)
				check_sums(&b, size, windows + warm, w);
			else if (b.o.verify && op != OP_READ)
				for (size_t j = 0; j < b.rx_slots && j < (size_t) w; j++)
					check(b.rx + j * b.max_size, size, seq, "server (write target)");
			ctrl_send(&b, "checked", 8);
		}
	}
	if (rma_mr)
		fi_close(&rma_mr->fid);
	teardown(&b);
	return 0;
}
