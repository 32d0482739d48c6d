/*
 * flow_check: a sender faster than its receiver on a verbs RDM endpoint
 * (fabtests convention: the server with -B PORT [-s ADDR], the client with
 * -P PORT ADDR; built on fabtests-compat's shared.h). Run with a small
 * bound on unexpected messages (FI_VERBS_MAX_UNEXP_SZ=1048576 in the
 * guest). Steps, each printed as "ok STEP" or "FAIL STEP":
 *
 *  bounded   (server) while the client sends 512 tagged messages (about
 *            11 MB: 16000-byte eager ones, every 16th 100000 bytes) and
 *            the server drives progress for 3 s without posting a
 *            receive, its resident memory grows by less than 4 MiB (the
 *            messages' eager bytes alone are 7.7 MB)
 *  received  (server) then, one receive at a time, every message arrives
 *            whole and in order (one tag for all: the order of arrival
 *            is the order of matching)
 *  sent      (client) every send completes, none with an error (the
 *            receiver's back-pressure never becomes an error)
 *
 * FLOW_CHECK_SMALL=N makes the messages that are not 100000 bytes N bytes
 * long instead of 16000 (small ones leave in bundles, several to a
 * receive slot, so that the bound falls part way through one).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <rdma/fi_tagged.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 512
#define SMALL 16000
#define LARGE 100000
#define TAG 0x77
#define WINDOW_S 3.0
#define GROWTH_MAX (4L << 20)

static int step_failures;
static size_t small = SMALL;

static void step(const char *name)
{
	printf("%s %s\n", ft_failures == step_failures ? "ok" : "FAIL", name);
	fflush(stdout);
	step_failures = ft_failures;
}

static size_t size_of(int i)
{
	return i % 16 == 15 ? LARGE : small;
}

/* Resident set size in bytes (VmRSS of /proc/self/status), or -1. */
static long rss(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

static void client(void)
{
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	size_t off = 0;
	char *tx = malloc((size_t) COUNT * LARGE);
	int errors = 0;
	if (!tx)
		ft_die("malloc");
	ft_sync();
	for (int i = 0; i < COUNT; i++) {
		ft_fill(tx + off, size_of(i), (unsigned) i);
		FT_POST(fi_tsend(ft_ep, tx + off, size_of(i), NULL, ft_peer, TAG, NULL), "fi_tsend");
		off += size_of(i);
	}
	for (int i = 0; i < COUNT; i++)
		if (ft_cq_wait(ft_txcq, &e, &err, NULL) < 0) {
			if (!errors++)
				printf("send error completion: %s\n", fi_strerror(err.err));
		}
	FT_CHECK(errors == 0, "%d of %d sends completed with an error", errors, COUNT);
	step("sent");
	ft_sync();
	free(tx);
}

static void server(void)
{
	struct fi_cq_tagged_entry e;
	char *rx = malloc(LARGE);
	long before, grew;
	double end;
	if (!rx)
		ft_die("malloc");
	memset(rx, 0, LARGE);
	ft_sync();
	before = rss();
	end = ft_now() + WINDOW_S;
	while (ft_now() < end) {
		(void) fi_cq_read(ft_rxcq, NULL, 0);
		(void) fi_cq_read(ft_txcq, NULL, 0);
	}
	grew = rss() - before;
	printf("resident memory grew by %ld bytes in %.0f s without receives\n", grew, WINDOW_S);
	FT_CHECK(before > 0 && grew < GROWTH_MAX, "resident memory grew by %ld bytes (bound: %ld)", grew,
		 GROWTH_MAX);
	step("bounded");
	for (int i = 0; i < COUNT; i++) {
		long bad;
		FT_POST(fi_trecv(ft_ep, rx, LARGE, NULL, ft_peer, TAG, 0, NULL), "fi_trecv");
		ft_cq_ok(ft_rxcq, &e, "receive");
		FT_CHECK(e.len == size_of(i), "message %d: %zu bytes, sent %zu", i, e.len, size_of(i));
		bad = ft_verify(rx, size_of(i), (unsigned) i);
		FT_CHECK(bad < 0, "message %d: wrong byte at %ld", i, bad);
		if (ft_failures)
			break;
	}
	step("received");
	ft_sync();
	free(rx);
}

int main(int argc, char **argv)
{
	ft_ep_type = FI_EP_RDM;
	ft_prov = "verbs";
	ft_args(argc, argv, NULL, NULL);
	if (getenv("FLOW_CHECK_SMALL")) {
		small = strtoul(getenv("FLOW_CHECK_SMALL"), NULL, 10);
		if (small == 0 || small > LARGE)
			ft_die("FLOW_CHECK_SMALL: 1 to 100000 bytes");
	}
	ft_setup(ft_hints(FI_MSG | FI_TAGGED));
	ft_open_cqs(FI_CQ_FORMAT_TAGGED);
	ft_init_ep();
	if (ft_is_client())
		client();
	else
		server();
	return ft_finish("flow_check");
}
