/*
 * conn_check: how RDM endpoints (verbs;ofi_rxm) connect. A parent forks
 * the endpoints' processes and drives them through pipes; every endpoint
 * is on ADDR (10.77.0.1) at a fixed port from -b PORT on, without
 * FI_RMA (hints: FI_MSG, FI_ORDER_SAS). Usage:
 *
 *   conn_check [-b PORT] [-a ADDR] [-r ROUNDS] cross
 *   conn_check [-b PORT] [-a ADDR] restart
 *   OXI_VERBS_MAX_CONNS=2 conn_check [-b PORT] [-a ADDR] lru
 *
 * cross: ROUNDS (20) rounds, each with fresh endpoints in two processes
 * that are told to send at the same instant (so both connect at once):
 * each sends 7 messages of 1000 B and one of 100000 B, data-checked and
 * in order at the other side; then, with both processes still open, the
 * parent counts their rdma-cm ids in state CONNECT (`rdma res show
 * cm_id`): one connection is two ids. Prints "ok cross_data" and "ok
 * cross_one_conn" (or FAIL with the round), and per round
 * "round N: K ids".
 *
 * restart: a survivor S and a peer K exchange a message, then K stops
 * (no progress) while S has 4 sends of 200000 B in flight to it (large
 * enough to wait for K to read them); K is killed (SIGKILL). Steps:
 *   killed_errors  S gets an error completion for each of the 4 sends
 *                  within 30 s
 *   fresh_conn     K is started again at the same port; S's next send to
 *                  the same AV entry is delivered (data-checked) and K's
 *                  answer reaches S
 *
 * lru: a hub talks to 4 leaves (processes) in turn, 3 rounds, each
 * message and answer data-checked, with no error completion anywhere
 * (lru_data); after each exchange (and 0.3 s of the hub's progress) the
 * parent counts the hub's connected rdma-cm ids: at most the bound
 * (OXI_VERBS_MAX_CONNS; 4 when unset) plus one being closed (lru_bound).
 *
 * Exit status 0 when every step passed.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include "check_util.h"

#define NMSG 8
#define SMALL 1000
#define LARGE 100000
#define INFLIGHT 4
#define INFLIGHT_LEN 200000
#define WAIT_S 30.0

static const char *addr = "10.77.0.1";
static int base = 48100;

/* One process's endpoint and what it needs: the fabric and domain of
 * the first entry, kept across rounds; the endpoint, its CQ and AV (the
 * peer's entry), fresh in each round; the message buffers. */
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static fi_addr_t peer;
static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_av *av;
static char *txb, *rxb;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static char pattern(int from, int msg, size_t i)
{
	return (char) ((from * 31 + msg * 7 + i) & 0xff);
}

static size_t msg_len(int msg)
{
	return msg == NMSG - 1 ? LARGE : SMALL;
}

static void setup(const char *step)
{
	struct fi_info *hints = fi_allocinfo();
	CHECK(step, hints, "fi_allocinfo");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT;
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("verbs");
	char port[16];
	snprintf(port, sizeof port, "%d", base);
	CALL(step, fi_getinfo(FI_VERSION(1, 17), addr, port, FI_SOURCE, hints, &info));
	fi_freeinfo(hints);
	CALL(step, fi_fabric(info->fabric_attr, &fabric, NULL));
	CALL(step, fi_domain(fabric, info, &domain, NULL));
	txb = calloc(1, INFLIGHT * INFLIGHT_LEN);
	rxb = calloc(1, NMSG * (size_t) INFLIGHT_LEN);
	CHECK(step, txb && rxb, "no memory");
}

/* A fresh endpoint at `port` (its own fi_getinfo for that address, in
 * the domain opened first), with the endpoint at `peer_port` in its AV. */
static void open_ep(const char *step, int port, int peer_port)
{
	struct fi_info *hints = fi_dupinfo(info), *i;
	char service[16];
	CHECK(step, hints, "fi_dupinfo");
	free(hints->src_addr);
	hints->src_addr = NULL;
	hints->src_addrlen = 0;
	snprintf(service, sizeof service, "%d", port);
	CALL(step, fi_getinfo(FI_VERSION(1, 17), addr, service, FI_SOURCE, hints, &i));
	fi_freeinfo(hints);
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = 256 };
	struct fi_av_attr aa = { .type = FI_AV_UNSPEC };
	CALL(step, fi_cq_open(domain, &ca, &cq, NULL));
	CALL(step, fi_av_open(domain, &aa, &av, NULL));
	CALL(step, fi_endpoint(domain, i, &ep, NULL));
	CALL(step, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CALL(step, fi_ep_bind(ep, &av->fid, 0));
	CALL(step, fi_enable(ep));
	struct sockaddr_in p = { .sin_family = AF_INET, .sin_port = htons((uint16_t) peer_port) };
	CHECK(step, inet_pton(AF_INET, addr, &p.sin_addr) == 1, "not an IPv4 address: %s", addr);
	CHECK(step, fi_av_insert(av, &p, 1, &peer, 0, NULL) == 1, "fi_av_insert");
	fi_freeinfo(i);
}

static void close_ep(void)
{
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
}

static struct fi_context ctx[2 * NMSG + INFLIGHT];

/* Reads one completion (progress included): 1 and `e`, or -1 and `err`
 * for an error completion, or 0 when nothing came. */
static int poll_cq(struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err)
{
	ssize_t n = fi_cq_read(cq, e, 1);
	if (n == 1)
		return 1;
	if (n == -FI_EAVAIL) {
		memset(err, 0, sizeof *err);
		fi_cq_readerr(cq, err, 0);
		return -1;
	}
	return 0;
}

/* Posts with `call(arg)`, retrying while the provider says -FI_EAGAIN
 * (upstream's rxm does while it connects) and driving progress. */
static void post(const char *step, ssize_t (*call)(void *), void *arg, const char *what)
{
	double end = now() + WAIT_S;
	for (;;) {
		ssize_t r = call(arg);
		if (!r)
			return;
		CHECK(step, r == -FI_EAGAIN && now() < end, "%s: %s (%zd)", what, fi_strerror((int) -r), r);
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		CHECK(step, poll_cq(&e, &err) >= 0, "%s: an error completion while posting: %s", what,
		      fi_strerror(err.err));
	}
}

static int cur;
static int me;
static ssize_t post_recv(void *unused)
{
	(void) unused;
	return fi_recv(ep, rxb + (size_t) cur * LARGE, LARGE, NULL, FI_ADDR_UNSPEC, &ctx[cur]);
}
static ssize_t post_send(void *unused)
{
	(void) unused;
	return fi_send(ep, txb + (size_t) cur * LARGE, msg_len(cur), NULL, peer, &ctx[NMSG + cur]);
}

/* One send: its buffer, length, destination and context. */
struct one_send {
	void *buf;
	size_t len;
	fi_addr_t dest;
	void *ctx;
};

static ssize_t send_one(void *arg)
{
	struct one_send *o = arg;
	return fi_send(ep, o->buf, o->len, NULL, o->dest, o->ctx);
}

/* Sends NMSG messages (after posting NMSG receives) and checks what
 * arrives: all of the peer's, whole, in order. */
static void exchange(const char *step, int wait_go, int rfd, int wfd)
{
	char c;
	for (cur = 0; cur < NMSG; cur++)
		post(step, post_recv, NULL, "fi_recv");
	for (int m = 0; m < NMSG; m++)
		for (size_t i = 0; i < msg_len(m); i++)
			txb[(size_t) m * LARGE + i] = pattern(me, m, i);
	if (wait_go) {
		CHECK(step, write(wfd, "r", 1) == 1, "pipe");
		CHECK(step, read(rfd, &c, 1) == 1, "pipe");
	}
	for (cur = 0; cur < NMSG; cur++)
		post(step, post_send, NULL, "fi_send");
	int sent = 0, got = 0;
	double end = now() + WAIT_S;
	while (sent < NMSG || got < NMSG) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int r = poll_cq(&e, &err);
		CHECK(step, r >= 0, "error completion: %s (%s)", fi_strerror(err.err),
		      fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
		CHECK(step, now() < end, "timed out: %d of %d sends, %d of %d receives", sent, NMSG, got, NMSG);
		if (!r)
			continue;
		if (e.flags & FI_SEND) {
			sent++;
			continue;
		}
		int m = (int) ((struct fi_context *) e.op_context - ctx);
		CHECK(step, m == got, "receive %d completed as number %d (order)", m, got);
		CHECK(step, e.len == msg_len(m), "message %d: %zu bytes, not %zu", m, e.len, msg_len(m));
		for (size_t i = 0; i < e.len; i++)
			CHECK(step, rxb[(size_t) m * LARGE + i] == pattern(1 - me, m, i), "message %d: byte %zu wrong", m,
			      i);
		got++;
	}
}

/* Keeps progressing until the parent writes to `rfd`. */
static void progress_until(int rfd)
{
	struct pollfd p = { .fd = rfd, .events = POLLIN };
	char c;
	while (poll(&p, 1, 5) == 0) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		poll_cq(&e, &err);
	}
	CHECK("pipe", read(rfd, &c, 1) == 1, "pipe");
}

/* Progress for `secs` seconds in which nothing may complete. */
static void quiet(const char *step, double secs, const char *why)
{
	double end = now() + secs;
	while (now() < end) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		CHECK(step, poll_cq(&e, &err) == 0, "%s", why);
	}
}

/* A child's end: says it is done ('f'), keeps progressing (its peers may
 * still need it) until the parent says so, closes. */
static void finish(const char *step, int rfd, int wfd)
{
	CHECK(step, write(wfd, "f", 1) == 1, "pipe");
	progress_until(rfd);
	close_ep();
	exit(0);
}

/* One side of the cross test: `rounds` rounds with fresh endpoints. */
static void cross_child(int side, int rounds, int rfd, int wfd)
{
	me = side;
	setup("cross_setup");
	for (int r = 0; r < rounds; r++) {
		int port = base + 2 * r + side, pport = base + 2 * r + 1 - side;
		open_ep("cross_open", port, pport);
		exchange("cross_data", 1, rfd, wfd);
		CHECK("cross", write(wfd, "d", 1) == 1, "pipe");
		progress_until(rfd);
		close_ep();
		CHECK("cross", write(wfd, "c", 1) == 1, "pipe");
	}
	exit(0);
}

/* rdma-cm ids of processes `a` and `b` in state CONNECT. */
static int count_ids(pid_t a, pid_t b, int round)
{
	FILE *f = popen("rdma res show cm_id 2>&1", "r");
	char l[512], pa[32], pb[32];
	int n = 0;
	if (!f)
		return -1;
	snprintf(pa, sizeof pa, " pid %d ", (int) a);
	snprintf(pb, sizeof pb, " pid %d ", (int) b);
	while (fgets(l, sizeof l, f)) {
		if (strstr(l, "state CONNECT") && (strstr(l, pa) || strstr(l, pb))) {
			n++;
			printf("round %d id: %s", round, l);
		}
	}
	pclose(f);
	return n;
}

static pid_t spawn(int *rfd, int *wfd, void (*run)(int, int, int, int), int side, int arg)
{
	int down[2], up[2];
	if (pipe(down) || pipe(up))
		die("spawn", "pipe");
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		close(down[1]);
		close(up[0]);
		run(side, arg, down[0], up[1]);
		exit(0);
	}
	close(down[0]);
	close(up[1]);
	*wfd = down[1];
	*rfd = up[0];
	return p;
}

/* Reads one byte from `fd`, expecting `want`, within WAIT_S: false when
 * the child died or said something else. */
static int expect(int fd, char want)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;
	return poll(&p, 1, (int) (WAIT_S * 1000) + 10000) == 1 && read(fd, &c, 1) == 1 && c == want;
}

static int reap(pid_t p)
{
	int st;
	if (waitpid(p, &st, 0) != p)
		return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int cross(int rounds)
{
	int r0, w0, r1, w1, bad_count = 0, ok = 1;
	pid_t a = spawn(&r0, &w0, cross_child, 0, rounds);
	pid_t b = spawn(&r1, &w1, cross_child, 1, rounds);
	for (int r = 0; r < rounds && ok; r++) {
		if (!expect(r0, 'r') || !expect(r1, 'r')) {
			ok = 0;
			break;
		}
		/* Both at once. */
		if (write(w0, "g", 1) != 1 || write(w1, "g", 1) != 1)
			ok = 0;
		if (!ok || !expect(r0, 'd') || !expect(r1, 'd')) {
			ok = 0;
			break;
		}
		/* Let a losing request's refusal settle. */
		usleep(300000);
		int n = count_ids(a, b, r);
		printf("round %d: %d ids\n", r, n);
		if (n != 2) {
			printf("FAIL cross_one_conn: round %d: %d rdma-cm ids connected, not 2 (one connection)\n", r, n);
			bad_count++;
		}
		if (write(w0, "x", 1) != 1 || write(w1, "x", 1) != 1 || !expect(r0, 'c') || !expect(r1, 'c'))
			ok = 0;
	}
	close(w0);
	close(w1);
	int ra = reap(a), rb = reap(b);
	if (!ok || !ra || !rb) {
		printf("FAIL cross_data: a process failed (see its FAIL line above)\n");
		return 1;
	}
	printf("ok cross_data\n");
	if (bad_count)
		return 1;
	printf("ok cross_one_conn\n");
	return 0;
}

/* The survivor: exchange, 4 sends in flight, their errors after the
 * kill, then a send to the restarted peer and its answer. */
static void survivor(int side, int unused, int rfd, int wfd)
{
	(void) unused;
	me = side;
	setup("killed_setup");
	open_ep("killed_setup", base, base + 1);
	exchange("killed_setup", 0, rfd, wfd);
	char c;
	CHECK("killed_errors", write(wfd, "d", 1) == 1 && read(rfd, &c, 1) == 1, "pipe");
	for (cur = 0; cur < INFLIGHT; cur++) {
		struct one_send o = { txb + (size_t) cur * INFLIGHT_LEN, INFLIGHT_LEN, peer, &ctx[2 * NMSG + cur] };
		post("killed_errors", send_one, &o, "fi_send");
	}
	/* Some progress, so the sends leave. */
	quiet("killed_errors", 0.5, "a send completed before the peer read it");
	CHECK("killed_errors", write(wfd, "p", 1) == 1 && read(rfd, &c, 1) == 1, "pipe");
	int errs = 0;
	double end = now() + WAIT_S;
	while (errs < INFLIGHT) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int r = poll_cq(&e, &err);
		CHECK("killed_errors", r <= 0, "a send to the killed peer completed without error (flags %#llx, len %zu, context %d)",
		      (unsigned long long) e.flags, e.len, (int) ((struct fi_context *) e.op_context - ctx));
		CHECK("killed_errors", now() < end, "%d of %d error completions in %.0f s", errs, INFLIGHT, WAIT_S);
		if (r < 0) {
			printf("error completion %d: %s (%s)\n", errs, fi_strerror(err.err),
			       fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
			errs++;
		}
	}
	printf("ok killed_errors\n");
	fflush(stdout);
	/* The peer is back (restarted at the same port): the same AV entry. */
	CHECK("fresh_conn", write(wfd, "e", 1) == 1 && read(rfd, &c, 1) == 1, "pipe");
	exchange("fresh_conn", 0, rfd, wfd);
	printf("ok fresh_conn\n");
	fflush(stdout);
	finish("fresh_conn", rfd, wfd);
}

/* The peer: exchange, then nothing until killed (first life), or an
 * exchange with the survivor (second life). */
static void victim(int side, int life, int rfd, int wfd)
{
	me = side;
	setup("killed_setup");
	open_ep("killed_setup", base + 1, base);
	if (life == 1) {
		exchange("killed_setup", 0, rfd, wfd);
		CHECK("killed_setup", write(wfd, "d", 1) == 1, "pipe");
		pause();
	}
	CHECK("fresh_conn", write(wfd, "r", 1) == 1, "pipe");
	exchange("fresh_conn", 0, rfd, wfd);
	finish("fresh_conn", rfd, wfd);
}

static int restart(void)
{
	int rs, ws, rk, wk;
	pid_t s = spawn(&rs, &ws, survivor, 0, 0);
	pid_t k = spawn(&rk, &wk, victim, 1, 1);
	int ok = expect(rs, 'd') && expect(rk, 'd') && write(ws, "g", 1) == 1 && expect(rs, 'p');
	kill(k, SIGKILL);
	waitpid(k, NULL, 0);
	close(rk);
	close(wk);
	ok = ok && write(ws, "k", 1) == 1 && expect(rs, 'e');
	/* Second life, same port: it is listening once it says 'r'. */
	k = spawn(&rk, &wk, victim, 1, 2);
	ok = ok && expect(rk, 'r') && write(ws, "g", 1) == 1;
	ok = ok && expect(rs, 'f') && expect(rk, 'f');
	if (write(ws, "x", 1) != 1 || write(wk, "x", 1) != 1)
		ok = 0;
	ok = reap(s) && ok;
	ok = reap(k) && ok;
	if (!ok)
		printf("FAIL restart: a process failed (see its FAIL line above)\n");
	return !ok;
}

#define LEAVES 4
#define LRU_ROUNDS 3

/* Waits for `sends` send and `recvs` receive completions; any error
 * completion fails `step`. Returns the last receive's length. */
static size_t await(const char *step, int sends, int recvs)
{
	size_t len = 0;
	double end = now() + WAIT_S;
	while (sends > 0 || recvs > 0) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int r = poll_cq(&e, &err);
		CHECK(step, r >= 0, "error completion: %s (%s)", fi_strerror(err.err),
		      fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
		CHECK(step, now() < end, "timed out: %d sends, %d receives missing", sends, recvs);
		if (r && (e.flags & FI_SEND))
			sends--;
		else if (r) {
			recvs--;
			len = e.len;
		}
	}
	return len;
}

static void fill(char *b, int from, int msg)
{
	for (size_t i = 0; i < SMALL; i++)
		b[i] = pattern(from, msg, i);
}

static void verify(const char *step, const char *b, size_t len, int from, int msg)
{
	CHECK(step, len == SMALL, "message %d from %d: %zu bytes", msg, from, len);
	for (size_t i = 0; i < SMALL; i++)
		CHECK(step, b[i] == pattern(from, msg, i), "message %d from %d: byte %zu wrong", msg, from, i);
}

/* The hub: talks to each leaf in turn, LRU_ROUNDS times; after each
 * exchange the parent counts its connections. */
static void hub(int side, int unused, int rfd, int wfd)
{
	fi_addr_t leaf[LEAVES];
	char c;
	(void) unused;
	me = side;
	setup("lru_setup");
	open_ep("lru_setup", base, base + 1);
	leaf[0] = peer;
	for (int i = 1; i < LEAVES; i++) {
		struct sockaddr_in p = { .sin_family = AF_INET, .sin_port = htons((uint16_t) (base + 1 + i)) };
		inet_pton(AF_INET, addr, &p.sin_addr);
		CHECK("lru_setup", fi_av_insert(av, &p, 1, &leaf[i], 0, NULL) == 1, "fi_av_insert");
	}
	for (int r = 0; r < LRU_ROUNDS; r++) {
		for (int i = 0; i < LEAVES; i++) {
			int m = r * LEAVES + i;
			CHECK("lru_data", fi_recv(ep, rxb, LARGE, NULL, FI_ADDR_UNSPEC, &ctx[0]) == 0, "fi_recv");
			fill(txb, 0, m);
			struct one_send o = { txb, SMALL, leaf[i], &ctx[1] };
			post("lru_data", send_one, &o, "fi_send");
			verify("lru_data", rxb, await("lru_data", 1, 1), 1 + i, r);
			/* Some progress, for the closing of an idle connection. */
			quiet("lru_data", 0.3, "a completion nothing was posted for");
			CHECK("lru_data", write(wfd, "s", 1) == 1 && read(rfd, &c, 1) == 1, "pipe");
		}
	}
	printf("ok lru_data\n");
	finish("lru_data", rfd, wfd);
}

/* A leaf: answers each of the hub's messages; no error completion. */
static void leaf(int side, int i, int rfd, int wfd)
{
	me = side;
	setup("lru_setup");
	open_ep("lru_setup", base + 1 + i, base);
	for (int r = 0; r < LRU_ROUNDS; r++) {
		CHECK("lru_data", fi_recv(ep, rxb, LARGE, NULL, FI_ADDR_UNSPEC, &ctx[0]) == 0, "fi_recv");
		if (r == 0)
			CHECK("lru_data", write(wfd, "r", 1) == 1, "pipe");
		verify("lru_data", rxb, await("lru_data", 0, 1), 0, r * LEAVES + i);
		fill(txb, side, r);
		struct one_send o = { txb, SMALL, peer, &ctx[1] };
		post("lru_data", send_one, &o, "fi_send");
		await("lru_data", 1, 0);
	}
	finish("lru_data", rfd, wfd);
}

/* The hub's rdma-cm ids in state CONNECT. */
static int count_one(pid_t p)
{
	return count_ids(p, p, -1);
}

static int lru(int bound)
{
	int rh, wh, rl[LEAVES], wl[LEAVES], ok = 1, most = 0;
	pid_t l[LEAVES];
	for (int i = 0; i < LEAVES; i++) {
		l[i] = spawn(&rl[i], &wl[i], leaf, 1 + i, i);
		ok = ok && expect(rl[i], 'r');
	}
	pid_t h = spawn(&rh, &wh, hub, 0, 0);
	for (int k = 0; ok && k < LRU_ROUNDS * LEAVES; k++) {
		if (!expect(rh, 's')) {
			ok = 0;
			break;
		}
		int n = count_one(h);
		printf("exchange %d: the hub has %d connected ids\n", k, n);
		most = n > most ? n : most;
		if (write(wh, "c", 1) != 1)
			ok = 0;
	}
	ok = ok && expect(rh, 'f');
	for (int i = 0; i < LEAVES; i++)
		ok = ok && expect(rl[i], 'f');
	if (write(wh, "x", 1) != 1)
		ok = 0;
	for (int i = 0; i < LEAVES; i++)
		if (write(wl[i], "x", 1) != 1)
			ok = 0;
	ok = reap(h) && ok;
	for (int i = 0; i < LEAVES; i++)
		ok = reap(l[i]) && ok;
	if (!ok) {
		printf("FAIL lru_data: a process failed (see its FAIL line above)\n");
		return 1;
	}
	/* One more than the bound while a close is being agreed. */
	if (most > bound + 1) {
		printf("FAIL lru_bound: the hub had %d connections, bound %d\n", most, bound);
		return 1;
	}
	printf("ok lru_bound (at most %d connections, bound %d)\n", most, bound);
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = 20, o;
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((o = getopt(argc, argv, "b:a:r:")) != -1) {
		switch (o) {
		case 'b':
			base = atoi(optarg);
			break;
		case 'a':
			addr = optarg;
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc)
		return 2;
	if (!strcmp(argv[optind], "cross"))
		return cross(rounds);
	if (!strcmp(argv[optind], "restart"))
		return restart();
	if (!strcmp(argv[optind], "lru"))
		return lru(getenv("OXI_VERBS_MAX_CONNS") ? atoi(getenv("OXI_VERBS_MAX_CONNS")) : LEAVES);
	return 2;
}
