/*
 * fi_msg_pingpong: connected (FI_EP_MSG) send/receive ping-pong latency,
 * fabtests' options and output. Server: fi_msg_pingpong -p PROV [-B port];
 * client: fi_msg_pingpong -p PROV [-P port] SERVER_ADDR.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "bench_common.h"

int main(int argc, char **argv)
{
	struct bench b;
	parse_opts(&b, argc, argv, FI_EP_MSG, "Ping pong over a connected (msg) endpoint");
	if (b.o.ep_type != FI_EP_MSG)
		die("fi_msg_pingpong runs on msg endpoints only (-e msg)");
	b.tagged = 0;
	setup_msg(&b, FI_MSG, pre_post_one);
	run_pingpong(&b);
	teardown(&b);
	return 0;
}
