/*
 * delivery_check: FI_DELIVERY_COMPLETE on the verbs RDM endpoint (fabtests
 * convention: the server with -B PORT [-s ADDR], the client with -P PORT
 * ADDR; built on fabtests-compat's shared.h). The hints ask for
 * FI_DELIVERY_COMPLETE in tx_attr.op_flags, as Open MPI 4.1's btl ofi
 * does. Progress is manual, so a server that sleeps processes nothing.
 * Steps, each printed as "ok STEP" or "FAIL STEP":
 *
 *  named        the entry is the verbs provider's own (prov_name "verbs",
 *               FI_EP_RDM, no "ofi_rxm" in the name: what btl ofi accepts)
 *               and its tx op_flags carry FI_DELIVERY_COMPLETE
 *  control      (client) while the server sleeps 3 s, a send with
 *               FI_TRANSMIT_COMPLETE completes within 2 s: the peer's
 *               device took it; this is what the next step must not do
 *  delivered    (client) while the server sleeps 3 s again, an eager send
 *               (4000 B) and a segmented one (100000 B) with the
 *               endpoint's default flags complete only after 2 s or more:
 *               once the server's endpoint has processed them (held as
 *               unexpected here, no receive being posted)
 *  received     (server) all three messages arrive whole
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <time.h>
#include <unistd.h>

#define SMALL 4000
#define LARGE 100000
#define SLEEP_S 3

static char tx[LARGE], rx[3][LARGE];
static int step_failures;

static void step(const char *name)
{
	printf("%s %s\n", ft_failures == step_failures ? "ok" : "FAIL", name);
	fflush(stdout);
	step_failures = ft_failures;
}

/* Seconds until `n` send completions arrive on the transmit CQ. */
static double wait_sends(int n, double start)
{
	struct fi_cq_tagged_entry e;
	for (int i = 0; i < n; i++)
		ft_cq_ok(ft_txcq, &e, "send");
	return ft_now() - start;
}

/* After a sync, a send of `len` bytes with the endpoint's default flags
 * (delivery complete) while the server sleeps: it must complete no sooner
 * than the server wakes. */
static void send_delivered(size_t len, unsigned seq, const char *what)
{
	double t;
	ft_sync();
	/* Our sync can end before the server's: its sync send completes only
	 * once our Delivered for it arrives, and until then the server still
	 * drives progress and would take this send at once. Half a second
	 * lets it finish its sync and fall asleep first. */
	nanosleep(&(struct timespec){ 0, 500000000L }, NULL);
	t = ft_now();
	ft_fill(tx, len, seq);
	FT_POST(fi_send(ft_ep, tx, len, NULL, ft_peer, NULL), what);
	t = wait_sends(1, t);
	FT_CHECK(t >= SLEEP_S - 1.0, "the %s send completed after %.2f s, before the receiver woke", what, t);
	printf("%s delivery complete after %.3f s\n", what, t);
}

static void client(void)
{
	struct iovec iov = { tx, SMALL };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = ft_peer };
	double t;
	ft_sync();
	ft_fill(tx, SMALL, 1);
	t = ft_now();
	FT_POST(fi_sendmsg(ft_ep, &m, FI_COMPLETION | FI_TRANSMIT_COMPLETE), "fi_sendmsg(transmit complete)");
	t = wait_sends(1, t);
	FT_CHECK(t < SLEEP_S - 1.0, "a transmit-complete send took %.2f s (the receiver was asleep)", t);
	printf("transmit complete after %.3f s\n", t);
	step("control");
	send_delivered(SMALL, 2, "eager");
	send_delivered(LARGE, 3, "segmented");
	step("delivered");
	ft_sync();
}

static void server(void)
{
	static const size_t len[3] = { SMALL, SMALL, LARGE };
	struct fi_cq_tagged_entry e;
	for (int i = 0; i < 3; i++) {
		ft_sync();
		sleep(SLEEP_S);
		FT_POST(fi_recv(ft_ep, rx[i], LARGE, NULL, ft_peer, NULL), "fi_recv");
		ft_cq_ok(ft_rxcq, &e, "receive");
		FT_CHECK(e.len == len[i], "message %d: %zu bytes", i + 1, e.len);
		FT_CHECK(ft_verify(rx[i], len[i], (unsigned) i + 1) < 0, "message %d: wrong bytes", i + 1);
	}
	step("received");
	ft_sync();
}

int main(int argc, char **argv)
{
	struct fi_info *h;
	ft_ep_type = FI_EP_RDM;
	ft_prov = "verbs";
	ft_args(argc, argv, NULL, NULL);
	h = ft_hints(FI_MSG);
	h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	ft_setup(h);
	FT_CHECK(!strcmp(ft_info->fabric_attr->prov_name, "verbs"), "prov_name %s", ft_info->fabric_attr->prov_name);
	FT_CHECK(ft_info->ep_attr->type == FI_EP_RDM, "ep type %d", (int) ft_info->ep_attr->type);
	FT_CHECK(ft_info->tx_attr->op_flags & FI_DELIVERY_COMPLETE, "tx op_flags %#llx",
		 (unsigned long long) ft_info->tx_attr->op_flags);
	step("named");
	ft_open_cqs(FI_CQ_FORMAT_TAGGED);
	ft_init_ep();
	if (ft_is_client())
		client();
	else
		server();
	return ft_finish("delivery_check");
}
