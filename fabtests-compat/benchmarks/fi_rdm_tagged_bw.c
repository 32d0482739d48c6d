/*
 * fi_rdm_tagged_bw: reliable-datagram (FI_EP_RDM) tagged streaming
 * bandwidth, fabtests' options and output. The client keeps a window (-W)
 * of fi_tsend in flight; the server keeps a window of fi_trecv posted and
 * acknowledges each completed window with a control message.
 * Server: fi_rdm_tagged_bw -p PROV [-B port];
 * client: fi_rdm_tagged_bw -p PROV [-P port] SERVER_ADDR.
 * -I counts messages (rounded up to whole windows).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "bench_common.h"

static void pre_post_window(struct bench *b)
{
	for (int j = 0; j < b->o.window; j++)
		post_rx(b, (size_t) j);
}

int main(int argc, char **argv)
{
	struct bench b;
	parse_opts(&b, argc, argv, FI_EP_RDM, "Tagged streaming bandwidth over a reliable-datagram (rdm) endpoint");
	if (b.o.ep_type != FI_EP_RDM)
		die("fi_rdm_tagged_bw runs on rdm endpoints only (-e rdm)");
	b.tagged = 1;
	setup_rdm(&b, FI_TAGGED, pre_post_window);
	const long w = b.o.window;
	uint64_t seq = 0;     /* window number, the data pattern's seed */
	size_t posted = (size_t) w; /* data receives posted so far (server) */
	print_header();
	for (int k = 0; k < b.o.nsizes; k++) {
		size_t size = b.o.sizes[k];
		long windows = (iters_for(&b, size) + w - 1) / w;
		long warm = b.o.warmup > 0 ? 1 : 0;
		double t0 = now_s();
		for (long i = -warm; i < windows; i++, seq++) {
			if (i == 0)
				t0 = now_s();
			if (b.is_client) {
				ctrl_post_recv(&b);
				if (b.o.verify)
					fill(b.tx, size, seq);
				for (long j = 0; j < w; j++)
					post_tx(&b, size, (size_t) j);
				wait_tx(&b, b.tx_done + (uint64_t) w);
				ctrl_wait(&b, NULL, 0);
			} else {
				wait_rx(&b, b.rx_done + (uint64_t) w);
				if (b.o.verify)
					for (size_t j = 0; j < b.rx_slots && j < (size_t) w; j++)
						check(b.rx + j * b.max_size, size, seq, "server");
				for (long j = 0; j < w; j++)
					post_rx(&b, posted++);
				ctrl_send(&b, "", 1);
			}
		}
		print_result(size, windows * w, (double) (windows * w), now_s() - t0);
	}
	teardown(&b);
	return 0;
}
