/*
 * mesh: N processes, one RDM endpoint each, every kind of traffic to every
 * peer with data checks (issue 26's mixed job: same-host peers and peers
 * in another network namespace under one endpoint).
 *
 *   mesh -p PROV -n N -r RANK -d DIR -s NODE [-v MAJOR.MINOR]
 *
 * The endpoint binds to NODE (fi_getinfo's node with FI_SOURCE, so that a
 * process in another network namespace binds to its veth address). The
 * out-of-band exchange goes through files in DIR, each written aside and
 * renamed into place: rank.R (its fi_getname address, the key and address
 * of its registered window), then ready.R once it has inserted every
 * address, so that no message arrives before its sender is in the AV and
 * FI_SOURCE must name it. -v picks the API version asked for (default
 * 1.17, what Debian 12's programs ask; 2.0 makes "tcp" the native 2.x RDM
 * provider).
 *
 * Then, in order, each step waiting for all its completions:
 *  - tagged all-to-all at 8 B, 4 KiB, 64 KiB and 1 MiB, the tag naming
 *    sender and size, received from FI_ADDR_UNSPEC: fi_cq_readfrom's
 *    source must be the fi_addr_t this process inserted for the sender;
 *  - an fi_inject to every peer, received untagged, source checked;
 *  - RMA writes (64 B and 128 KiB) into every peer's window, checked by
 *    the target after the barrier below (hints ask for FI_ORDER_SAW);
 *  - RMA reads (64 B and 256 KiB) of every peer's window, checked here;
 *  - FI_SUM of rank + 1 on a uint64 in every peer's window;
 *  - a barrier of tagged messages, then each rank checks its counter and
 *    the writes it received, then a second barrier before closing.
 * Every mr_mode bit it offers is followed (FI_MR_LOCAL descriptors,
 * FI_MR_VIRT_ADDR addresses or offsets, FI_MR_PROV_KEY keys,
 * FI_MR_ENDPOINT binding). Prints its address and provider, then
 * "mesh: rank R: N checks passed" and exits 0, or a "mesh: rank R: FAIL:"
 * line and exits 1. No wait lasts more than 30 s, the run more than 60 s.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXN 16
#define WAIT_S 30  /* one wait for completions or files */
#define LIMIT_S 60 /* the whole run */
#define NSIZES 4
#define MAXMSG (1u << 20)
#define SMALL 64
#define LARGE (128u * 1024)
#define READ_LEN (256u * 1024)
#define SLOT (LARGE + 4096)
#define WIN_HDR 4096 /* the counter at 0 */
#define WIN_LEN (WIN_HDR + MAXN * SLOT + READ_LEN)
#define READ_OFF (WIN_HDR + MAXN * SLOT)
#define MAGIC 0x6d657368u

static const size_t sizes[NSIZES] = { 8, 4096, 65536, MAXMSG };
/* Tags: kind in bits 40+, step in 16-39, sender in 0-15. */
#define TAG(kind, step, src) (((uint64_t) (kind) << 40) | ((uint64_t) (step) << 16) | (uint64_t) (src))
enum { K_MSG = 1, K_BAR, K_WSMALL, K_WLARGE, K_READ };
enum { OP_SEND, OP_RECV, OP_RECV_ANY, OP_RMA };

struct op {
	struct fi_context2 ctx; /* first: FI_CONTEXT/FI_CONTEXT2 modes */
	const char *what; /* for messages: "fi_tsend", "barrier receive"... */
	int kind, peer, done;
	uint64_t tag;
	char *buf;
	size_t len;
	uint32_t seed;
};

/* What each rank publishes in DIR/rank.R. */
struct card {
	uint32_t magic, rank, addrlen, pad;
	uint64_t key, base; /* the window's key, and how a peer names its byte 0 */
	char addr[256];
};

static int nprocs, rank = -1, checks;
static const char *phase = "setup";
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_ep *ep;
static struct fid_mr *win_mr, *loc_mr;
static void *loc_desc;
static uint64_t mr_mode;
static char *win, *loc;
static struct card cards[MAXN];
static fi_addr_t peer_addr[MAXN];
static int inj_seen[MAXN];

static void die(const char *fmt, ...)
{
	va_list ap;
	printf("mesh: rank %d: FAIL: %s: ", rank, phase);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

static void on_alarm(int sig)
{
	char m[160];
	int n = snprintf(m, sizeof(m), "mesh: rank %d: FAIL: %s: the run took over %d s\n", rank, phase, LIMIT_S);
	(void) sig;
	if (write(1, m, (size_t) n) < 0)
		_exit(2);
	_exit(1);
}

/* The bytes of one transfer, from its sender, receiver, kind and step. */
static uint32_t seed_of(int src, int dst, int kind, int step)
{
	return (uint32_t) (src * 7919 + dst * 104729 + kind * 31 + step * 1299709);
}

static void fill(char *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (char) (seed + i * 131 + (i >> 9));
}

/* Counts a check: P holds bytes FROM.. FROM+LEN of fill(SEED)'s pattern. */
static void check_bytes(const char *p, size_t len, size_t from, uint32_t seed, const char *what, int peer)
{
	for (size_t i = 0; i < len; i++) {
		size_t k = from + i;
		if (p[i] != (char) (seed + k * 131 + (k >> 9)))
			die("%s with rank %d: byte %zu of %zu is 0x%02x, want 0x%02x", what, peer, i, len,
			    (unsigned char) p[i], (unsigned char) (seed + k * 131 + (k >> 9)));
	}
	checks++;
}

static void expect_src(fi_addr_t src, int peer, const char *what)
{
	if (src != peer_addr[peer])
		die("%s from rank %d: fi_cq_readfrom gave source %#llx, want %#llx (the fi_addr_t inserted for it)",
		    what, peer, (unsigned long long) src, (unsigned long long) peer_addr[peer]);
	checks++;
}

static void complete(struct op *o, const struct fi_cq_tagged_entry *e, fi_addr_t src)
{
	if (o->done)
		die("a second completion for one %s (rank %d)", o->what, o->peer);
	o->done = 1;
	if (o->kind == OP_RECV) {
		if (!(e->flags & FI_RECV) || !(e->flags & FI_TAGGED) || e->tag != o->tag || e->len != o->len)
			die("tagged receive from rank %d: flags %#llx tag %#llx len %zu, want FI_RECV|FI_TAGGED, %#llx, %zu",
			    o->peer, (unsigned long long) e->flags, (unsigned long long) e->tag, e->len,
			    (unsigned long long) o->tag, o->len);
		expect_src(src, o->peer, "tagged message");
		check_bytes(o->buf, o->len, 0, o->seed, "tagged message", o->peer);
	} else if (o->kind == OP_RECV_ANY) {
		uint32_t hdr[2];
		memcpy(hdr, o->buf, sizeof(hdr));
		if (!(e->flags & FI_RECV) || e->len != 8 || hdr[0] != MAGIC || hdr[1] >= (uint32_t) nprocs ||
		    (int) hdr[1] == rank || inj_seen[hdr[1]]++)
			die("injected message: flags %#llx len %zu, header %#x %u", (unsigned long long) e->flags, e->len,
			    hdr[0], hdr[1]);
		expect_src(src, (int) hdr[1], "injected message");
	}
}

/* Reads what the CQ has; an error completion ends the run. */
static void progress(void)
{
	struct fi_cq_tagged_entry e[16];
	fi_addr_t src[16];
	ssize_t n = fi_cq_readfrom(cq, e, 16, src);
	if (n == -FI_EAGAIN)
		return;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err;
		memset(&err, 0, sizeof(err));
		fi_cq_readerr(cq, &err, 0);
		struct op *o = err.op_context;
		die("error completion for %s (rank %d): %s (%s)", o ? o->what : "(no context)", o ? o->peer : -1,
		    fi_strerror(err.err), fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
	}
	if (n < 0)
		die("fi_cq_readfrom: %s", fi_strerror((int) -n));
	for (ssize_t i = 0; i < n; i++)
		complete(e[i].op_context, &e[i], src[i]);
}

/* Posts with CALL, retrying -FI_EAGAIN while progressing, for WAIT_S. */
#define POST(what, peer, call)                                                                                         \
	do {                                                                                                           \
		time_t dl_ = time(NULL) + WAIT_S;                                                                      \
		ssize_t rc_;                                                                                           \
		while ((rc_ = (call)) == -FI_EAGAIN) {                                                                 \
			progress();                                                                                    \
			if (time(NULL) > dl_)                                                                          \
				die("%s to rank %d: -FI_EAGAIN for %d s", what, peer, WAIT_S);                         \
		}                                                                                                      \
		if (rc_)                                                                                               \
			die("%s to rank %d: %s", what, peer, fi_strerror((int) -rc_));                                 \
	} while (0)

static void wait_ops(struct op *ops, int n)
{
	time_t dl = time(NULL) + WAIT_S;
	for (;;) {
		int left = 0, first = -1;
		for (int i = 0; i < n; i++)
			if (!ops[i].done && !left++)
				first = i;
		if (!left)
			return;
		if (time(NULL) > dl)
			die("%d operations not complete after %d s (the first: %s, rank %d)", left, WAIT_S,
			    ops[first].what, ops[first].peer);
		progress();
	}
}

static struct op *new_ops(int n)
{
	struct op *ops = calloc((size_t) n, sizeof(*ops));
	if (!ops)
		die("out of memory");
	return ops;
}

/* Where a peer's window byte OFF is, as RMA names it. */
static uint64_t raddr(int peer, size_t off)
{
	return cards[peer].base + off;
}

/* The local area: per peer MAXMSG to send and MAXMSG to receive, then
 * per peer the two write sources and the two read destinations, then
 * small buffers (barrier, inject, atomic operand). */
#define L_TX(p) (loc + (size_t) (p) * MAXMSG)
#define L_RX(p) (loc + ((size_t) nprocs + (size_t) (p)) * MAXMSG)
#define L_RMA(p) (loc + (size_t) 2 * nprocs * MAXMSG + (size_t) (p) * RMA_LOCAL)
#define L_MISC (loc + (size_t) 2 * nprocs * MAXMSG + (size_t) nprocs * RMA_LOCAL)
#define RMA_LOCAL (2 * SMALL + LARGE + READ_LEN)
#define LOC_LEN ((size_t) 2 * nprocs * MAXMSG + (size_t) nprocs * RMA_LOCAL + 4096 * MAXN)

static void barrier(int round)
{
	struct op *ops = new_ops(2 * nprocs);
	int n = 0;
	phase = round == 1 ? "barrier" : "exit barrier";
	for (int p = 0; p < nprocs; p++) {
		if (p == rank)
			continue;
		struct op *o = &ops[n++];
		*o = (struct op) { .what = "barrier receive", .kind = OP_RECV, .peer = p, .tag = TAG(K_BAR, round, p),
				   .buf = L_MISC + 64 * p, .len = 8, .seed = seed_of(p, rank, K_BAR, round) };
		POST("barrier receive", p, fi_trecv(ep, o->buf, o->len, loc_desc, FI_ADDR_UNSPEC, o->tag, 0, &o->ctx));
	}
	for (int p = 0; p < nprocs; p++) {
		if (p == rank)
			continue;
		struct op *o = &ops[n++];
		*o = (struct op) { .what = "barrier send", .kind = OP_SEND, .peer = p, .buf = L_MISC + 2048 + 64 * p, .len = 8 };
		fill(o->buf, 8, seed_of(rank, p, K_BAR, round));
		POST("barrier send", p,
		     fi_tsend(ep, o->buf, 8, loc_desc, peer_addr[p], TAG(K_BAR, round, rank), &o->ctx));
	}
	wait_ops(ops, n);
	free(ops);
}

static void tagged_all_to_all(void)
{
	phase = "tagged all-to-all";
	for (int s = 0; s < NSIZES; s++) {
		struct op *ops = new_ops(2 * nprocs);
		int n = 0;
		for (int p = 0; p < nprocs; p++) {
			if (p == rank)
				continue;
			struct op *o = &ops[n++];
			*o = (struct op) { .what = "fi_trecv", .kind = OP_RECV, .peer = p, .tag = TAG(K_MSG, s, p), .buf = L_RX(p),
					   .len = sizes[s], .seed = seed_of(p, rank, K_MSG, s) };
			memset(o->buf, 0, o->len);
			POST("fi_trecv", p, fi_trecv(ep, o->buf, o->len, loc_desc, FI_ADDR_UNSPEC, o->tag, 0, &o->ctx));
		}
		for (int p = 0; p < nprocs; p++) {
			if (p == rank)
				continue;
			struct op *o = &ops[n++];
			*o = (struct op) { .what = "fi_tsend", .kind = OP_SEND, .peer = p, .buf = L_TX(p), .len = sizes[s] };
			fill(o->buf, o->len, seed_of(rank, p, K_MSG, s));
			POST("fi_tsend", p,
			     fi_tsend(ep, o->buf, o->len, loc_desc, peer_addr[p], TAG(K_MSG, s, rank), &o->ctx));
		}
		wait_ops(ops, n);
		free(ops);
	}
}

static void injects(void)
{
	struct op *ops = new_ops(nprocs);
	int n = 0;
	phase = "fi_inject";
	for (int p = 0; p < nprocs - 1; p++) {
		struct op *o = &ops[n++];
		*o = (struct op) { .what = "fi_recv of an injected message", .kind = OP_RECV_ANY, .peer = -1,
				   .buf = L_MISC + 1024 + 64 * p, .len = 8 };
		POST("fi_recv", -1, fi_recv(ep, o->buf, 8, loc_desc, FI_ADDR_UNSPEC, &o->ctx));
	}
	uint32_t hdr[2] = { MAGIC, (uint32_t) rank };
	for (int p = 0; p < nprocs; p++)
		if (p != rank)
			POST("fi_inject", p, fi_inject(ep, hdr, sizeof(hdr), peer_addr[p]));
	wait_ops(ops, n);
	free(ops);
}

static void rma(void)
{
	struct op *ops = new_ops(4 * nprocs);
	int n = 0;
	phase = "RMA write";
	for (int p = 0; p < nprocs; p++) {
		if (p == rank)
			continue;
		char *src = L_RMA(p);
		fill(src, SMALL, seed_of(rank, p, K_WSMALL, 0));
		fill(src + SMALL, LARGE, seed_of(rank, p, K_WLARGE, 0));
		size_t slot = WIN_HDR + (size_t) rank * SLOT;
		ops[n] = (struct op) { .what = "fi_write (64 B)", .kind = OP_RMA, .peer = p };
		POST(ops[n].what, p,
		     fi_write(ep, src, SMALL, loc_desc, peer_addr[p], raddr(p, slot), cards[p].key, &ops[n].ctx));
		n++;
		ops[n] = (struct op) { .what = "fi_write (128 KiB)", .kind = OP_RMA, .peer = p };
		POST(ops[n].what, p,
		     fi_write(ep, src + SMALL, LARGE, loc_desc, peer_addr[p], raddr(p, slot + 4096), cards[p].key,
			      &ops[n].ctx));
		n++;
	}
	wait_ops(ops, n);
	phase = "RMA read";
	n = 0;
	for (int p = 0; p < nprocs; p++) {
		if (p == rank)
			continue;
		char *small = L_RMA(p) + SMALL + LARGE, *large = small + SMALL;
		memset(small, 0, SMALL + READ_LEN);
		ops[n] = (struct op) { .what = "fi_read (64 B)", .kind = OP_RMA, .peer = p };
		POST(ops[n].what, p,
		     fi_read(ep, small, SMALL, loc_desc, peer_addr[p], raddr(p, READ_OFF + (size_t) rank * SMALL),
			     cards[p].key, &ops[n].ctx));
		n++;
		ops[n] = (struct op) { .what = "fi_read (256 KiB)", .kind = OP_RMA, .peer = p };
		POST(ops[n].what, p,
		     fi_read(ep, large, READ_LEN, loc_desc, peer_addr[p], raddr(p, READ_OFF), cards[p].key,
			     &ops[n].ctx));
		n++;
	}
	wait_ops(ops, n);
	for (int p = 0; p < nprocs; p++) {
		if (p == rank)
			continue;
		char *small = L_RMA(p) + SMALL + LARGE, *large = small + SMALL;
		uint32_t seed = seed_of(p, 0, K_READ, 0);
		check_bytes(small, SMALL, (size_t) rank * SMALL, seed, "fi_read (64 B)", p);
		check_bytes(large, READ_LEN, 0, seed, "fi_read (256 KiB)", p);
	}
	free(ops);
}

static void atomics(void)
{
	struct op *ops = new_ops(nprocs);
	int n = 0;
	size_t count = 0;
	uint64_t *operand = (uint64_t *) (L_MISC + 3072);
	phase = "atomic FI_SUM";
	ssize_t rc = fi_atomicvalid(ep, FI_UINT64, FI_SUM, &count);
	if (rc || count < 1)
		die("fi_atomicvalid(FI_UINT64, FI_SUM): %s, count %zu", fi_strerror((int) -rc), count);
	*operand = (uint64_t) rank + 1;
	for (int p = 0; p < nprocs; p++) {
		if (p == rank)
			continue;
		ops[n] = (struct op) { .what = "fi_atomic", .kind = OP_RMA, .peer = p };
		POST(ops[n].what, p,
		     fi_atomic(ep, operand, 1, loc_desc, peer_addr[p], raddr(p, 0), cards[p].key, FI_UINT64, FI_SUM,
			       &ops[n].ctx));
		n++;
	}
	wait_ops(ops, n);
	free(ops);
}

/* After the barrier: what the peers did to this rank's window. */
static void check_window(void)
{
	phase = "window checks";
	uint64_t want = (uint64_t) nprocs * (nprocs + 1) / 2 - (uint64_t) (rank + 1);
	uint64_t got = __atomic_load_n((uint64_t *) win, __ATOMIC_ACQUIRE);
	if (got != want)
		die("the FI_SUM counter is %llu, want %llu (every other rank adding its rank + 1)",
		    (unsigned long long) got, (unsigned long long) want);
	checks++;
	for (int p = 0; p < nprocs; p++) {
		if (p == rank)
			continue;
		char *slot = win + WIN_HDR + (size_t) p * SLOT;
		check_bytes(slot, SMALL, 0, seed_of(p, rank, K_WSMALL, 0), "fi_write (64 B) received", p);
		check_bytes(slot + 4096, LARGE, 0, seed_of(p, rank, K_WLARGE, 0), "fi_write (128 KiB) received", p);
	}
}

/* Writes DIR/NAME.RANK aside, then renames it into place. */
static void publish(const char *dir, const char *name, const void *p, size_t len)
{
	char tmp[4096], path[4096];
	snprintf(tmp, sizeof(tmp), "%s/.%s.%d.tmp", dir, name, rank);
	snprintf(path, sizeof(path), "%s/%s.%d", dir, name, rank);
	FILE *f = fopen(tmp, "wb");
	if (!f || fwrite(p, 1, len, f) != len || fclose(f) || rename(tmp, path))
		die("writing %s: %s", path, strerror(errno));
}

/* Waits for DIR/NAME.R of every rank; reads each into out[R] if given. */
static void gather(const char *dir, const char *name, struct card *out)
{
	time_t dl = time(NULL) + WAIT_S;
	for (int r = 0; r < nprocs; r++) {
		char path[4096];
		FILE *f;
		snprintf(path, sizeof(path), "%s/%s.%d", dir, name, r);
		while (!(f = fopen(path, "rb"))) {
			if (time(NULL) > dl)
				die("no %s after %d s (rank %d not started, or failed)", path, WAIT_S, r);
			usleep(10000);
		}
		if (out && (fread(&out[r], sizeof(*out), 1, f) != 1 || out[r].magic != MAGIC || out[r].rank != (uint32_t) r))
			die("%s: not a card of rank %d", path, r);
		fclose(f);
	}
}

static void format_addr(char *s, size_t n, const void *a)
{
	const struct sockaddr *sa = a;
	char ip[INET6_ADDRSTRLEN] = "?";
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = a;
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(s, n, "%s:%u", ip, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = a;
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(s, n, "[%s]:%u", ip, ntohs(in6->sin6_port));
	} else {
		snprintf(s, n, "(address family %d)", sa->sa_family);
	}
}

static struct fid_mr *reg(char *buf, size_t len, uint64_t access, uint64_t key)
{
	struct fid_mr *mr;
	int rc = fi_mr_reg(domain, buf, len, access, 0, key, 0, &mr, NULL);
	if (rc)
		die("fi_mr_reg: %s", fi_strerror(-rc));
	if ((mr_mode & FI_MR_ENDPOINT) && ((rc = fi_mr_bind(mr, &ep->fid, 0)) || (rc = fi_mr_enable(mr))))
		die("binding a registration to the endpoint: %s", fi_strerror(-rc));
	return mr;
}

#define CHECK(call)                                                                                                    \
	do {                                                                                                           \
		int rc_ = (int) (call);                                                                                \
		if (rc_)                                                                                               \
			die("%s: %s", #call, fi_strerror(-rc_));                                                       \
	} while (0)

int main(int argc, char **argv)
{
	const char *prov = NULL, *dir = NULL, *node = NULL;
	int major = 1, minor = 17, opt;
	while ((opt = getopt(argc, argv, "p:n:r:d:s:v:")) != -1) {
		if (opt == 'p')
			prov = optarg;
		else if (opt == 'n')
			nprocs = atoi(optarg);
		else if (opt == 'r')
			rank = atoi(optarg);
		else if (opt == 'd')
			dir = optarg;
		else if (opt == 's')
			node = optarg;
		else if (opt != 'v' || sscanf(optarg, "%d.%d", &major, &minor) != 2)
			goto usage;
	}
	if (!prov || !dir || !node || nprocs < 2 || nprocs > MAXN || rank < 0 || rank >= nprocs) {
usage:
		fprintf(stderr, "usage: mesh -p PROV -n N(2-%d) -r RANK -d DIR -s NODE [-v MAJOR.MINOR]\n", MAXN);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(LIMIT_S);

	struct fi_info *hints = fi_allocinfo(), *info;
	if (!hints)
		die("fi_allocinfo");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SOURCE;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	hints->tx_attr->msg_order = hints->rx_attr->msg_order = FI_ORDER_SAW;
	hints->fabric_attr->prov_name = strdup(prov);
	int rc = fi_getinfo(FI_VERSION(major, minor), node, NULL, FI_SOURCE, hints, &info);
	if (rc)
		die("fi_getinfo(-p %s, node %s, FI_SOURCE, API %d.%d): %s", prov, node, major, minor, fi_strerror(-rc));
	mr_mode = info->domain_attr->mr_mode;

	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 1024, .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .type = info->domain_attr->av_type, .count = MAXN };
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));

	struct card *me = &cards[rank];
	size_t alen = sizeof(me->addr);
	*me = (struct card) { .magic = MAGIC, .rank = (uint32_t) rank };
	CHECK(fi_getname(&ep->fid, me->addr, &alen));
	me->addrlen = (uint32_t) alen;
	char addr_s[128];
	format_addr(addr_s, sizeof(addr_s), me->addr);
	printf("mesh: rank %d: provider %s, address %s, mr_mode %s\n", rank, info->fabric_attr->prov_name, addr_s,
	       fi_tostr(&mr_mode, FI_TYPE_MR_MODE));

	if (posix_memalign((void **) &win, 4096, WIN_LEN) || posix_memalign((void **) &loc, 4096, LOC_LEN))
		die("out of memory");
	memset(win, 0, WIN_LEN);
	memset(loc, 0, LOC_LEN);
	fill(win + READ_OFF, READ_LEN, seed_of(rank, 0, K_READ, 0));
	uint64_t want_key = 0xa000 + (uint64_t) rank * 16;
	win_mr = reg(win, WIN_LEN, FI_REMOTE_READ | FI_REMOTE_WRITE, want_key);
	loc_mr = reg(loc, LOC_LEN, FI_SEND | FI_RECV | FI_READ | FI_WRITE, want_key + 1);
	loc_desc = (mr_mode & FI_MR_LOCAL) ? fi_mr_desc(loc_mr) : NULL;

	me->key = (mr_mode & FI_MR_PROV_KEY) ? fi_mr_key(win_mr) : want_key;
	me->base = (mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t) (uintptr_t) win : 0;
	phase = "address exchange";
	publish(dir, "rank", me, sizeof(*me));
	gather(dir, "rank", cards);
	for (int r = 0; r < nprocs; r++) {
		if ((rc = fi_av_insert(av, cards[r].addr, 1, &peer_addr[r], 0, NULL)) != 1)
			die("fi_av_insert of rank %d's address: %d", r, rc);
	}
	publish(dir, "ready", "", 0);
	gather(dir, "ready", NULL);

	tagged_all_to_all();
	injects();
	rma();
	atomics();
	barrier(1);
	check_window();
	barrier(2);

	phase = "close";
	CHECK(fi_close(&ep->fid));
	CHECK(fi_close(&win_mr->fid));
	CHECK(fi_close(&loc_mr->fid));
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&cq->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("mesh: rank %d: %d checks passed\n", rank, checks);
	return 0;
}
