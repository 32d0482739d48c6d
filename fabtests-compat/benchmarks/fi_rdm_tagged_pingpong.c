/*
 * fi_rdm_tagged_pingpong: reliable-datagram (FI_EP_RDM) tagged ping-pong
 * latency with fi_tsend/fi_trecv, fabtests' options and output.
 * Server: fi_rdm_tagged_pingpong -p PROV [-B port];
 * client: fi_rdm_tagged_pingpong -p PROV [-P port] SERVER_ADDR.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "bench_common.h"

int main(int argc, char **argv)
{
	struct bench b;
	parse_opts(&b, argc, argv, FI_EP_RDM, "Tagged ping pong over a reliable-datagram (rdm) endpoint");
	if (b.o.ep_type != FI_EP_RDM)
		die("fi_rdm_tagged_pingpong runs on rdm endpoints only (-e rdm)");
	b.tagged = 1;
	setup_rdm(&b, FI_TAGGED, pre_post_one);
	run_pingpong(&b);
	teardown(&b);
	return 0;
}
