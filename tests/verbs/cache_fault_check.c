/*
 * cache_fault_check: the verbs MSG endpoint's registration cache and
 * fault paths, one server and one client over rdma-cm (fabtests
 * convention: the server with -B PORT [-s ADDR], the client with -P PORT
 * ADDR). One mode per run; each step prints "ok STEP ..." or "FAIL STEP:
 * why" (exit status 1 at the first failure).
 *
 *  -M  cache (entries with mr_mode 0: no descriptors, the provider's
 *      registration cache): the client sends from buffers the server
 *      checks byte for byte, and between sends
 *        cache_remap     munmaps a buffer and maps new memory with other
 *                        contents at the same address (MAP_FIXED)
 *        cache_free      frees a 1 MiB malloc block (mmap-backed) and
 *                        mallocs another
 *        cache_dontneed  drops a buffer's pages with MADV_DONTNEED and
 *                        writes it again (a fault in a watched range
 *                        must not hang)
 *        cache_reuse     rewrites a buffer in place (the cached
 *                        registration stays right)
 *        cache_count     sends from 16 separate mappings, then counts its
 *                        memory registrations (`rdma res show mr`): at
 *                        least 16 without a bound (they are cached), at
 *                        most FI_MR_CACHE_MAX_COUNT with one
 *      A stale registration would send the old contents: the server sees
 *      the wrong bytes.
 *  -D  depth: both sides post rx_size receives before connecting, then
 *      post tx_size sends without reading any CQ (the verbs CQ then holds
 *      up to tx_size + rx_size completions, the size the provider gives
 *      it), check that one more send is -FI_EAGAIN, then read every
 *      completion (nothing lost, no error, messages in order). With -c N
 *      the client's CQs are opened with size N (the application's CQ
 *      smaller than what is in flight).
 *  -R  rnr (run with OXI_VERBS_RNR_RETRY=1 on both sides): the server
 *      posts no receive; the client's send ends in an error completion
 *      FI_ENORX with prov_errno 13 (IBV_WC_RNR_RETRY_EXC_ERR) and a
 *      fi_cq_strerror text naming the peer and the verbs status; the
 *      next send is flushed (FI_ECANCELED, the queue pair is in the error
 *      state); the client shuts down and the server sees FI_SHUTDOWN.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "check_util.h"

static const char *prov = "verbs", *src_addr, *port = "47710", *dst;
static char mode;
static size_t client_cq_size;
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;
static struct fid_pep *pep;
static struct fid_ep *ep;
static struct fid_cq *txcq, *rxcq;
static struct fid_mr *mr;
static void *desc;
static char *region;
#define REGION (4 << 20)

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec + t.tv_nsec / 1e9;
}

/* One completion from cq within 30 s: 1, or 0 with *err filled for an
 * error completion. */
static int next_cq(const char *step, struct fid_cq *cq, struct fi_cq_data_entry *e, struct fi_cq_err_entry *err)
{
	double end = now() + 30;
	while (now() < end) {
		ssize_t n = fi_cq_read(cq, e, 1);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			CHECK(step, fi_cq_readerr(cq, err, 0) == 1, "fi_cq_readerr");
			return 0;
		}
		CHECK(step, n == -FI_EAGAIN, "fi_cq_read: %zd", n);
	}
	die(step, "no completion within 30 s");
	return 0;
}

static struct fi_cq_data_entry wait_cq(const char *step, struct fid_cq *cq)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	if (!next_cq(step, cq, &e, &err))
		die(step, "error completion %s (prov_errno %d): %s", fi_strerror(err.err), err.prov_errno,
		    fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
	return e;
}

static uint32_t wait_eq(const char *step)
{
	char buf[sizeof(struct fi_eq_cm_entry) + 64];
	uint32_t ev;
	ssize_t n = fi_eq_sread(eq, &ev, buf, sizeof(buf), 20000, 0);
	if (n == -FI_EAVAIL) {
		struct fi_eq_err_entry err = { 0 };
		fi_eq_readerr(eq, &err, 0);
		die(step, "EQ error %s", fi_strerror(err.err));
	}
	CHECK(step, n >= (ssize_t) sizeof(struct fi_eq_cm_entry), "fi_eq_sread: %zd", n);
	if (ev == FI_CONNREQ)
		info = ((struct fi_eq_cm_entry *) buf)->info;
	return ev;
}

/* Opens the endpoint on `info`, its CQs (size cq_size, 0: the provider's
 * default) and, for modes with descriptors, the region's registration;
 * posts `rx` receives of `rx_len` bytes from the region's second half. */
static void open_ep(size_t cq_size, size_t rx, size_t rx_len)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA, .size = cq_size };
	CALL("setup", fi_domain(fabric, info, &domain, NULL));
	CALL("setup", fi_endpoint(domain, info, &ep, NULL));
	CALL("setup", fi_cq_open(domain, &ca, &txcq, NULL));
	CALL("setup", fi_cq_open(domain, &ca, &rxcq, NULL));
	CALL("setup", fi_ep_bind(ep, &eq->fid, 0));
	CALL("setup", fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT));
	CALL("setup", fi_ep_bind(ep, &rxcq->fid, FI_RECV));
	CALL("setup", fi_enable(ep));
	CHECK("setup", !posix_memalign((void **) &region, 4096, REGION), "posix_memalign");
	memset(region, 0, REGION);
	if (mode != 'M') {
		CALL("setup", fi_mr_reg(domain, region, REGION, FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL));
		desc = fi_mr_desc(mr);
	}
	for (size_t i = 0; i < rx; i++)
		CALL("setup", fi_recv(ep, region + REGION / 2 + i * rx_len, rx_len, desc, 0, NULL));
}

static void connect_both(size_t cq_size, size_t rx, size_t rx_len)
{
	if (!dst) {
		CALL("setup", fi_passive_ep(fabric, info, &pep, NULL));
		CALL("setup", fi_pep_bind(pep, &eq->fid, 0));
		CALL("setup", fi_listen(pep));
		CHECK("setup", wait_eq("setup") == FI_CONNREQ, "no FI_CONNREQ");
		open_ep(0, rx, rx_len);
		CALL("setup", fi_accept(ep, NULL, 0));
	} else {
		open_ep(cq_size, rx, rx_len);
		CALL("setup", fi_connect(ep, info->dest_addr, NULL, 0));
	}
	CHECK("setup", wait_eq("setup") == FI_CONNECTED, "no FI_CONNECTED");
}

/* ---- -M: the registration cache ---- */

#define BIG (1 << 20)
static int round_no;

static char pattern(int r)
{
	return (char) ('A' + r % 50);
}

/* One checked transfer: the server posts a receive and says "go" (a small
 * inline send into the client's posted receive); the client sends `len`
 * bytes of the round's pattern from `buf`; the server checks them. */
static void client_round(const char *step, char *buf, size_t len)
{
	/* In malloc'd memory: a static buffer may lie in a file mapping, which
	 * the cache cannot watch (registered per operation, so not counted as
	 * an entry). */
	char *ack = region + 65536;
	memset(buf, pattern(round_no), len);
	wait_cq(step, rxcq); /* "go" */
	CALL(step, fi_recv(ep, ack, 64, NULL, 0, NULL));
	CALL(step, fi_send(ep, buf, len, NULL, 0, NULL));
	wait_cq(step, txcq);
	round_no++;
}

static void server_rounds(int n)
{
	char *rbuf = malloc(BIG);
	CHECK("cache", rbuf, "malloc");
	for (int r = 0; r < n; r++) {
		CALL("cache", fi_recv(ep, rbuf, BIG, NULL, 0, NULL));
		CALL("cache", fi_send(ep, "go", 3, NULL, 0, NULL));
		wait_cq("cache", txcq);
		struct fi_cq_data_entry e = wait_cq("cache", rxcq);
		size_t bad = 0;
		while (bad < e.len && rbuf[bad] == pattern(r))
			bad++;
		CHECK("cache", e.len > 0 && bad == e.len,
		      "round %d: byte %zu of %zu is '%c', want '%c' (a stale registration sends the old contents)",
		      r, bad, e.len, bad < e.len ? rbuf[bad] : '?', pattern(r));
	}
	printf("ok cache (server): %d rounds with the right contents\n", n);
}

/* Memory registrations of this process the device has (rdma tool). */
static int count_mrs(void)
{
	char cmd[64], line[512], pid[32];
	snprintf(cmd, sizeof(cmd), "rdma res show mr 2>&1");
	snprintf(pid, sizeof(pid), " pid %d ", (int) getpid());
	FILE *f = popen(cmd, "r");
	int n = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, pid))
			n++;
	pclose(f);
	return n;
}

#define MAPS 16
#define MAP_LEN 8192
/* Rounds the client runs: remap 2, free 2, dontneed 2, reuse 1, count 16. */
#define CACHE_ROUNDS (7 + MAPS)

static void *map_at(void *at, size_t len)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);
	CHECK("cache", p != MAP_FAILED, "mmap");
	return p;
}

static void client_cache(void)
{
	CALL("cache", fi_recv(ep, region, 64, NULL, 0, NULL)); /* the first "go" */

	char *p = map_at(NULL, 65536);
	client_round("cache_remap", p, 65536);
	CHECK("cache_remap", !munmap(p, 65536), "munmap");
	char *q = map_at(p, 65536);
	CHECK("cache_remap", q == p, "MAP_FIXED gave another address");
	client_round("cache_remap", q, 65536);
	printf("ok cache_remap: new contents sent from a buffer remapped at %p\n", (void *) q);

	/* Large blocks stay mmap-backed (no dynamic threshold). */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	char *b = malloc(BIG);
	CHECK("cache_free", b, "malloc");
	client_round("cache_free", b, BIG);
	uintptr_t old = (uintptr_t) b;
	free(b);
	b = malloc(BIG);
	CHECK("cache_free", b, "malloc");
	client_round("cache_free", b, BIG);
	printf("ok cache_free: the new block (%s address) sent its own contents\n",
	       (uintptr_t) b == old ? "same" : "another");
	free(b);

	client_round("cache_dontneed", q, 65536);
	CHECK("cache_dontneed", !madvise(q, 65536, MADV_DONTNEED), "madvise");
	client_round("cache_dontneed", q, 65536); /* writes the dropped pages first */
	printf("ok cache_dontneed\n");

	client_round("cache_reuse", q, 65536);
	printf("ok cache_reuse\n");
	CHECK("cache", !munmap(q, 65536), "munmap");

	char *maps[MAPS];
	for (int i = 0; i < MAPS; i++) {
		maps[i] = map_at(NULL, MAP_LEN);
		client_round("cache_count", maps[i], MAP_LEN);
	}
	int n = count_mrs();
	const char *bound = getenv("FI_MR_CACHE_MAX_COUNT");
	if (bound) {
		int max = atoi(bound);
		CHECK("cache_count", n >= 1 && n <= max, "%d registrations, want 1 to FI_MR_CACHE_MAX_COUNT=%d", n, max);
	} else {
		CHECK("cache_count", n >= MAPS, "%d registrations after %d buffers, want them cached", n, MAPS);
	}
	printf("ok cache_count: %d registrations after %d buffers (bound %s)\n", n, MAPS, bound ? bound : "default");
	for (int i = 0; i < MAPS; i++)
		munmap(maps[i], MAP_LEN);
	wait_cq("cache", rxcq); /* the server's last "go" never comes: see main */
}

/* ---- -D: queue depth ---- */

#define DEPTH_LEN 1024

static void depth(void)
{
	const char *step = dst ? "depth" : "depth (server)";
	size_t tx = info->tx_attr->size, rx = info->rx_attr->size;
	CHECK(step, tx <= rx && (tx + 1) * DEPTH_LEN <= REGION / 2, "tx_size %zu rx_size %zu", tx, rx);
	size_t n = 0;
	for (; n <= tx; n++) {
		char *m = region + n * DEPTH_LEN;
		*(uint32_t *) m = (uint32_t) n;
		memset(m + 4, (int) (n & 0xff), DEPTH_LEN - 4);
		ssize_t rc = fi_send(ep, m, DEPTH_LEN, desc, 0, NULL);
		if (rc == -FI_EAGAIN)
			break;
		CHECK(step, rc == 0, "send %zu: %s", n, fi_strerror((int) -rc));
	}
	CHECK(step, n == tx, "%zu sends went in before -FI_EAGAIN, want tx_size %zu", n, tx);
	for (size_t i = 0; i < n; i++)
		wait_cq(step, txcq);
	for (size_t i = 0; i < n; i++) {
		struct fi_cq_data_entry e = wait_cq(step, rxcq);
		const char *m = e.buf;
		CHECK(step, e.len == DEPTH_LEN && *(const uint32_t *) m == i && m[DEPTH_LEN - 1] == (char) (i & 0xff),
		      "message %zu: len %zu seq %u", i, e.len, *(const uint32_t *) m);
	}
	struct fi_cq_data_entry e;
	CHECK(step, fi_cq_read(txcq, &e, 1) == -FI_EAGAIN && fi_cq_read(rxcq, &e, 1) == -FI_EAGAIN,
	      "completions beyond what was posted");
	printf("ok %s: %zu sends in flight each way without reading (CQ size %zu, 0: the default), "
	       "%zu completions each, nothing lost\n", step, n, dst ? client_cq_size : 0, n);
}

/* ---- -R: RNR retry exhaustion ---- */

static void rnr(void)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	memset(region, 'r', 1024);
	CALL("rnr", fi_send(ep, region, 1024, desc, 0, NULL));
	CHECK("rnr", !next_cq("rnr", txcq, &e, &err), "the send to a peer without receives succeeded");
	const char *text = fi_cq_strerror(txcq, err.prov_errno, err.err_data, NULL, 0);
	CHECK("rnr", err.err == FI_ENORX && err.prov_errno == 13 && text && strstr(text, "peer ") &&
		     strstr(text, "RNR") && strstr(text, "verbs status 13"),
	      "err %d (%s) prov_errno %d text %s", err.err, fi_strerror(err.err), err.prov_errno,
	      text ? text : "(null)");
	printf("ok rnr: %s\n", text);
	CALL("rnr_flushed", fi_send(ep, region, 1024, desc, 0, NULL));
	CHECK("rnr_flushed", !next_cq("rnr_flushed", txcq, &e, &err), "a send after the error succeeded");
	text = fi_cq_strerror(txcq, err.prov_errno, err.err_data, NULL, 0);
	CHECK("rnr_flushed", err.err == FI_ECANCELED && err.prov_errno == 5 && text && strstr(text, "peer "),
	      "err %d prov_errno %d text %s", err.err, err.prov_errno, text ? text : "(null)");
	printf("ok rnr_flushed: %s\n", text);
	CALL("rnr_flushed", fi_shutdown(ep, 0));
}

int main(int argc, char **argv)
{
	int c;
	while ((c = getopt(argc, argv, "p:B:P:s:MDRc:")) != -1) {
		switch (c) {
		case 'M': case 'D': case 'R': mode = (char) c; break;
		case 'c': client_cq_size = (size_t) atol(optarg); break;
		case 'p': prov = optarg; break;
		case 'B': case 'P': port = optarg; break;
		case 's': src_addr = optarg; break;
		default: return 2;
		}
	}
	if (optind < argc)
		dst = argv[optind];
	if (!mode)
		return 2;
	setvbuf(stdout, NULL, _IONBF, 0);

	struct fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	/* -M: no FI_MR_LOCAL, so the provider registers (and caches). */
	hints->domain_attr->mr_mode = mode == 'M' ? 0 : FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (dst)
		CALL("getinfo", fi_getinfo(FI_VERSION(1, 17), dst, port, 0, hints, &info));
	else
		CALL("getinfo", fi_getinfo(FI_VERSION(1, 17), src_addr, port, FI_SOURCE, hints, &info));
	CHECK("getinfo", mode != 'M' || !(info->domain_attr->mr_mode & FI_MR_LOCAL), "mr_mode %#x",
	      info->domain_attr->mr_mode);
	CALL("getinfo", fi_fabric(info->fabric_attr, &fabric, NULL));
	struct fi_eq_attr ea = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	CALL("setup", fi_eq_open(fabric, &ea, &eq, NULL));

	switch (mode) {
	case 'M':
		connect_both(0, 0, 0);
		if (dst) {
			client_cache();
		} else {
			server_rounds(CACHE_ROUNDS);
			/* Tells the client the last round was checked. */
			CALL("cache", fi_send(ep, "go", 3, NULL, 0, NULL));
			wait_cq("cache", txcq);
		}
		break;
	case 'D':
		connect_both(client_cq_size, info->rx_attr->size, DEPTH_LEN);
		depth();
		break;
	case 'R':
		connect_both(0, 0, 0);
		if (dst) {
			rnr();
		} else {
			CHECK("rnr (server)", wait_eq("rnr (server)") == FI_SHUTDOWN, "no FI_SHUTDOWN");
			printf("ok rnr (server): the peer's shutdown after its error\n");
		}
		break;
	}
	return 0;
}
