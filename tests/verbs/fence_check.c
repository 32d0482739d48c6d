/*
 * fence_check: FI_FENCE on the verbs RDM endpoint (fabtests convention: the
 * server with -B PORT [-s ADDR], the client with -P PORT ADDR; built on
 * fabtests-compat's shared.h). The client posts a fetching atomic (which
 * the server's endpoint answers only when it makes progress: progress is
 * manual, and the server sleeps) and then an 8-byte RMA write into the
 * server's memory, which the server's device takes without its progress.
 * Two rounds, the write unfenced then fenced. Steps, each printed as
 * "ok STEP" or "FAIL STEP":
 *
 *  advertised  the entry has FI_FENCE in caps and tx caps
 *  control     (server) the unfenced write landed while the server slept:
 *              what the next step must not see
 *  held        (server) the fenced write had not landed when the server
 *              woke after 2 s: it waits for the atomic's answer
 *  landed      (server) in both rounds the write lands once the server
 *              makes progress again
 *  ordered     (client) the fenced write completed after the atomic, and
 *              the atomic fetched the value the previous round left
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <time.h>
#include <unistd.h>

#define SLEEP_S 2
#define STAMP 0x5eed0001u

static uint64_t target[2]; /* [0]: the atomic's, [1]: the write's */
static struct fid_mr *mr;
static struct {
	uint64_t addr, key;
} peer;
static int step_failures;

static void step(const char *name)
{
	printf("%s %s\n", ft_failures == step_failures ? "ok" : "FAIL", name);
	fflush(stdout);
	step_failures = ft_failures;
}

/* Registers `target` for remote access and swaps address and key with
 * the peer. */
static void exchange_keys(void)
{
	struct fi_cq_tagged_entry e;
	int rc = fi_mr_reg(ft_domain, target, sizeof(target), FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			   NULL);
	if (rc)
		ft_die("fi_mr_reg: %s", fi_strerror(-rc));
	struct {
		uint64_t addr, key;
	} mine = { ft_info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? (uint64_t) (uintptr_t) target : 0,
		   fi_mr_key(mr) };
	FT_POST(fi_recv(ft_ep, &peer, sizeof(peer), NULL, ft_peer, NULL), "fi_recv(key)");
	FT_POST(fi_send(ft_ep, &mine, sizeof(mine), NULL, ft_peer, NULL), "fi_send(key)");
	ft_cq_ok(ft_txcq, &e, "key send");
	ft_cq_ok(ft_rxcq, &e, "key receive");
}

static void client_round(int round, int fenced)
{
	static uint64_t add = 1, fetched, stamp;
	char ctx_atomic, ctx_write;
	struct fi_cq_tagged_entry e[2];
	struct iovec iov = { &stamp, sizeof(stamp) };
	struct fi_rma_iov r = { peer.addr + sizeof(uint64_t), sizeof(uint64_t), peer.key };
	struct fi_msg_rma m = { .msg_iov = &iov, .iov_count = 1, .addr = ft_peer, .rma_iov = &r,
				.rma_iov_count = 1, .context = &ctx_write };
	stamp = STAMP + (uint64_t) round;
	ft_sync();
	/* Let the server finish its sync and fall asleep first (see
	 * delivery_check.c). */
	nanosleep(&(struct timespec){ 0, 500000000L }, NULL);
	FT_POST(fi_fetch_atomic(ft_ep, &add, 1, NULL, &fetched, NULL, ft_peer, peer.addr, peer.key, FI_UINT64,
				FI_SUM, &ctx_atomic),
		"fi_fetch_atomic");
	FT_POST(fi_writemsg(ft_ep, &m, FI_COMPLETION | (fenced ? FI_FENCE : 0)), "fi_writemsg");
	ft_cq_ok(ft_txcq, &e[0], "first completion");
	ft_cq_ok(ft_txcq, &e[1], "second completion");
	printf("round %d (%s): completions in the order %s, %s\n", round, fenced ? "fenced" : "unfenced",
	       e[0].op_context == &ctx_atomic ? "atomic" : "write", e[1].op_context == &ctx_atomic ? "atomic" : "write");
	FT_CHECK(fetched == (uint64_t) round, "round %d: the atomic fetched %llu", round, (unsigned long long) fetched);
	if (fenced)
		FT_CHECK(e[0].op_context == &ctx_atomic && e[1].op_context == &ctx_write,
			 "the fenced write completed before the atomic");
	ft_sync();
}

/* Drives progress until the write of `round` is in target[1]. */
static int wait_landed(int round)
{
	volatile uint64_t *v = &target[1];
	double end = ft_now() + FT_TIMEOUT;
	while (*v != STAMP + (uint64_t) round && ft_now() < end) {
		(void) fi_cq_read(ft_rxcq, NULL, 0);
		(void) fi_cq_read(ft_txcq, NULL, 0);
	}
	return *v == STAMP + (uint64_t) round;
}

/* Returns whether the round's write landed. */
static int server_round(int round, int fenced)
{
	int landed;
	volatile uint64_t *v = &target[1];
	uint64_t seen;
	ft_sync();
	sleep(SLEEP_S);
	seen = *v;
	printf("round %d (%s): after %d s asleep the write's target holds %#llx\n", round,
	       fenced ? "fenced" : "unfenced", SLEEP_S, (unsigned long long) seen);
	if (fenced) {
		FT_CHECK(seen != STAMP + (uint64_t) round, "the fenced write landed before the atomic was answered");
		step("held");
	} else {
		FT_CHECK(seen == STAMP + (uint64_t) round, "the unfenced write had not landed after %d s", SLEEP_S);
		step("control");
	}
	landed = wait_landed(round);
	ft_sync();
	return landed;
}

int main(int argc, char **argv)
{
	struct fi_info *h;
	ft_ep_type = FI_EP_RDM;
	ft_prov = "verbs";
	ft_args(argc, argv, NULL, NULL);
	h = ft_hints(FI_MSG | FI_RMA | FI_ATOMIC | FI_FENCE);
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	ft_setup(h);
	FT_CHECK(ft_info->caps & FI_FENCE, "caps %#llx", (unsigned long long) ft_info->caps);
	FT_CHECK(ft_info->tx_attr->caps & FI_FENCE, "tx caps %#llx", (unsigned long long) ft_info->tx_attr->caps);
	step("advertised");
	ft_open_cqs(FI_CQ_FORMAT_TAGGED);
	ft_init_ep();
	exchange_keys();
	int landed = 0;
	for (int round = 0; round < 2; round++) {
		if (ft_is_client())
			client_round(round, round == 1);
		else
			landed += server_round(round, round == 1);
	}
	if (!ft_is_client()) {
		FT_CHECK(landed == 2, "%d of 2 writes landed", landed);
		FT_CHECK(target[0] == 2, "the atomics left %llu", (unsigned long long) target[0]);
		step("landed");
	} else {
		step("ordered");
	}
	fi_close(&mr->fid);
	return ft_finish("fence_check");
}
