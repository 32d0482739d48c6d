/*
 * Shared code of the fabtests-compat benchmark programs (fi_msg_pingpong,
 * fi_rdm_tagged_pingpong, fi_rdm_tagged_bw): option parsing with fabtests'
 * option names, endpoint setup on libfabric's public API only, bounded
 * busy-polling of completion queues, and fabtests-style result lines.
 *
 * Conventions (the fabtests server/client convention): the server is
 * started without an address and listens on -B PORT; the client is given
 * the server's address as the positional argument and -P PORT.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include "sizes.h"

#define BENCH_MAX_SIZES 64
#define BENCH_DEFAULT_PORT "9228"
/* Tags: data, and control (address exchange, window acknowledgements). */
#define TAG_DATA 0x1ULL
#define TAG_CTRL 0x2ULL
#define CTRL_LEN 256

struct bench_opts {
	const char *prov;
	const char *domain;
	enum fi_ep_type ep_type;
	long iters;
	int iters_set;
	size_t sizes[BENCH_MAX_SIZES];
	int nsizes;
	const char *src_addr;
	const char *src_port;
	const char *dst_port;
	const char *addr;
	int verify;
	int window;
	int warmup;
	int timeout_s;
	int oob;
};

/* One process's fabric objects and buffers. */
struct bench {
	struct bench_opts o;
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_cq *txcq, *rxcq;
	struct fid_av *av;
	struct fid_mr *mr;
	void *desc;
	char *mem;          /* one registered region: tx | rx slots | ctrl tx | ctrl rx */
	char *tx, *rx, *ctrl_tx, *ctrl_rx;
	size_t max_size, rx_slots;
	fi_addr_t peer;
	struct fi_context2 *tx_ctx, *rx_ctx, ctrl_tx_ctx, ctrl_rx_ctx;
	uint64_t tx_done, rx_done; /* completions seen (data + control) */
	int is_client;
	int tagged;         /* fi_tsend/fi_trecv instead of fi_send/fi_recv */
	enum fi_cq_format cq_format; /* set after parse_opts; 0: FI_CQ_FORMAT_CONTEXT */
	const char *name;
};

static inline void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "error: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

#define CHECK(call)                                                                 \
	do {                                                                        \
		int rc_ = (int) (call);                                             \
		if (rc_)                                                            \
			die("%s: %s (%d) at %s:%d", #call, fi_strerror(-rc_), rc_,  \
			    __FILE__, __LINE__);                                    \
	} while (0)

static inline double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

/* The default sweep (-S all): 1 B to 4 MiB, powers of two and their
 * midpoints. */
static inline int default_sizes(size_t *out)
{
	int n = 0;
	for (size_t s = 1; s <= (4u << 20); s <<= 1) {
		out[n++] = s;
		if (s >= 4 && s < (4u << 20))
			out[n++] = s + s / 2;
	}
	return n;
}

static inline void usage(const char *name, const char *what)
{
	fprintf(stderr,
		"Usage:\n  %s [OPTIONS]\t\tstart server\n  %s [OPTIONS] <srv_addr>\tconnect to server\n\n%s\n\n"
		"Options:\n"
		" -p <provider>\tprovider name, e.g. sockets, tcp, \"tcp;ofi_rxm\"\n"
		" -d <domain>\tdomain name\n"
		" -e <ep_type>\tendpoint type: msg|rdm\n"
		" -I <number>\titerations per size (default 1000; in a sweep, sizes above\n"
		"\t\t64 KiB run at most 64 MiB / size, at least 10)\n"
		" -S <size>\ttransfer size, 'all' (1 B..4 MiB sweep), or a comma list (1,64,1k)\n"
		" -s <address>\tsource address (server: bind here, e.g. 127.0.0.1)\n"
		" -B <port>\tsource port (server: %s)\n"
		" -P <port>\tdestination port (client: %s)\n"
		" -W <number>\twindow of outstanding transfers (bandwidth test, default 64)\n"
		" -w <number>\twarm-up iterations (default 10)\n"
		" -E\t\texchange endpoint names over a TCP socket on the -B/-P port\n"
		"\t\t(for providers whose addresses are not IP, e.g. shm)\n"
		" -T <seconds>\tgive up after this long without progress (default 30)\n"
		" -v\t\tverify received data\n"
		" -h\t\tthis help\n",
		name, name, what, BENCH_DEFAULT_PORT, BENCH_DEFAULT_PORT);
}

static inline void parse_opts(struct bench *b, int argc, char **argv, enum fi_ep_type dflt, const char *what)
{
	struct bench_opts *o = &b->o;
	int c;
	memset(b, 0, sizeof(*b));
	b->name = argv[0];
	o->ep_type = dflt;
	o->iters = 1000;
	o->window = 64;
	o->warmup = 10;
	o->timeout_s = 30;
	o->nsizes = default_sizes(o->sizes);
	while ((c = getopt(argc, argv, "p:d:e:I:S:s:B:P:W:w:T:Evh")) != -1) {
		switch (c) {
		case 'p': o->prov = optarg; break;
		case 'd': o->domain = optarg; break;
		case 'e':
			if (!strcmp(optarg, "msg"))
				o->ep_type = FI_EP_MSG;
			else if (!strcmp(optarg, "rdm"))
				o->ep_type = FI_EP_RDM;
			else
				die("unsupported endpoint type '%s'", optarg);
			break;
		case 'I': o->iters = atol(optarg); o->iters_set = 1; break;
		case 'S':
			if (!strcmp(optarg, "all")) {
				o->nsizes = default_sizes(o->sizes);
			} else {
				o->nsizes = parse_size_list(optarg, o->sizes, BENCH_MAX_SIZES);
				if (o->nsizes < 0)
					die("bad size list '%s'", optarg);
			}
			break;
		case 's': o->src_addr = optarg; break;
		case 'B': o->src_port = optarg; break;
		case 'P': o->dst_port = optarg; break;
		case 'W': o->window = atoi(optarg); break;
		case 'w': o->warmup = atoi(optarg); break;
		case 'T': o->timeout_s = atoi(optarg); break;
		case 'E': o->oob = 1; break;
		case 'v': o->verify = 1; break;
		default: usage(argv[0], what); exit(c == 'h' ? 0 : 1);
		}
	}
	if (optind < argc)
		o->addr = argv[optind];
	if (o->iters < 1 || o->window < 1 || o->nsizes < 1 || o->timeout_s < 1 || o->warmup < 0)
		die("bad option value");
	b->is_client = o->addr != NULL;
	if (!o->src_port && !b->is_client)
		o->src_port = BENCH_DEFAULT_PORT;
	if (!o->dst_port)
		o->dst_port = BENCH_DEFAULT_PORT;
	for (int i = 0; i < o->nsizes; i++)
		if (o->sizes[i] > b->max_size)
			b->max_size = o->sizes[i];
}

/* Iterations for one size: -I (default 1000); when several sizes run (or
 * -I is not given), sizes above 64 KiB run at most 64 MiB / size
 * iterations (at least 10) so the sweep stays short. */
static inline long iters_for(const struct bench *b, size_t size)
{
	long n = b->o.iters;
	if ((b->o.nsizes > 1 || !b->o.iters_set) && size > 65536) {
		long cap = (long) ((64u << 20) / size);
		if (cap < 10)
			cap = 10;
		if (n > cap)
			n = cap;
	}
	return n;
}

/* ---- out-of-band name exchange (-E) ---- */

/* A TCP connection for -E: the client connects to addr:port (retried
 * while nothing listens, up to timeout_s), the server accepts one on
 * 127.0.0.1:port; receives time out after timeout_s. */
static inline int oob_open(int is_client, const char *addr, const char *port, int timeout_s)
{
	int one = 1, s;
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_port = htons((uint16_t) atoi(port));
	if (is_client) {
		if (!addr || inet_pton(AF_INET, addr, &a.sin_addr) != 1)
			die("-E needs an IPv4 server address, got '%s'", addr ? addr : "(none)");
		double t0 = now_s();
		for (;;) {
			s = socket(AF_INET, SOCK_STREAM, 0);
			if (!connect(s, (struct sockaddr *) &a, sizeof(a)))
				break;
			close(s);
			if (now_s() - t0 > timeout_s)
				die("out-of-band connect to %s:%s timed out", addr, port);
			usleep(10000);
		}
	} else {
		int l = socket(AF_INET, SOCK_STREAM, 0);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *) &a, sizeof(a)) || listen(l, 1))
			die("out-of-band listen on port %s: %s", port, strerror(errno));
		struct timeval tv = { .tv_sec = timeout_s };
		setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		s = accept(l, NULL, NULL);
		if (s < 0)
			die("out-of-band accept: %s", strerror(errno));
		close(l);
	}
	struct timeval tv = { .tv_sec = timeout_s };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return s;
}

static inline int oob_socket(struct bench *b)
{
	return oob_open(b->is_client, b->o.addr, b->is_client ? b->o.dst_port : b->o.src_port, b->o.timeout_s);
}

/* Sends our name (length-prefixed) and returns the peer's in out. */
static inline size_t oob_swap(int s, const void *mine, size_t len, void *out, size_t cap)
{
	uint32_t n = (uint32_t) len, m = 0;
	if (send(s, &n, 4, MSG_NOSIGNAL) != 4 || send(s, mine, len, MSG_NOSIGNAL) != (ssize_t) len)
		die("out-of-band send failed");
	if (recv(s, &m, 4, MSG_WAITALL) != 4 || m > cap || recv(s, out, m, MSG_WAITALL) != (ssize_t) m)
		die("out-of-band receive failed (timeout or peer gone)");
	return m;
}

/* ---- setup ---- */

static inline struct fi_info *make_hints(struct bench *b, uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();
	if (!h)
		die("fi_allocinfo failed");
	h->caps = caps;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = b->o.ep_type;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	if (b->o.prov)
		h->fabric_attr->prov_name = strdup(b->o.prov);
	if (b->o.domain)
		h->domain_attr->name = strdup(b->o.domain);
	return h;
}

static inline void alloc_buffers(struct bench *b)
{
	size_t win = (size_t) b->o.window;
	b->rx_slots = b->o.verify ? win : 1;
	if (b->rx_slots * b->max_size > (256u << 20))
		b->rx_slots = 1;
	size_t ms = b->max_size ? b->max_size : 1;
	size_t total = ms + b->rx_slots * ms + 2 * CTRL_LEN;
	if (posix_memalign((void **) &b->mem, 4096, total))
		die("out of memory (%zu bytes)", total);
	memset(b->mem, 0, total);
	b->tx = b->mem;
	b->rx = b->tx + ms;
	b->ctrl_tx = b->rx + b->rx_slots * ms;
	b->ctrl_rx = b->ctrl_tx + CTRL_LEN;
	b->tx_ctx = calloc(win, sizeof(*b->tx_ctx));
	b->rx_ctx = calloc(win, sizeof(*b->rx_ctx));
	if (!b->tx_ctx || !b->rx_ctx)
		die("out of memory");
	if (b->info->domain_attr->mr_mode & FI_MR_LOCAL) {
		CHECK(fi_mr_reg(b->domain, b->mem, total, FI_SEND | FI_RECV, 0, 0, 0, &b->mr, NULL));
		b->desc = fi_mr_desc(b->mr);
	}
}

static inline void open_cqs(struct bench *b)
{
	struct fi_cq_attr ca = { 0 };
	ca.format = b->cq_format ? b->cq_format : FI_CQ_FORMAT_CONTEXT;
	ca.wait_obj = FI_WAIT_NONE;
	ca.size = (size_t) b->o.window * 2 + 64;
	CHECK(fi_cq_open(b->domain, &ca, &b->txcq, NULL));
	CHECK(fi_cq_open(b->domain, &ca, &b->rxcq, NULL));
}

static inline void bind_ep(struct bench *b)
{
	if (b->eq)
		CHECK(fi_ep_bind(b->ep, &b->eq->fid, 0));
	if (b->av)
		CHECK(fi_ep_bind(b->ep, &b->av->fid, 0));
	CHECK(fi_ep_bind(b->ep, &b->txcq->fid, FI_TRANSMIT));
	CHECK(fi_ep_bind(b->ep, &b->rxcq->fid, FI_RECV));
	CHECK(fi_enable(b->ep));
}

/* Busy-polls cq until it returns completions (at most count, into buf,
 * room for count entries of the CQ's format); dies on an error entry or
 * after timeout_s seconds without a completion (have and want, the
 * caller's count so far and its goal, only label that message). */
static inline size_t cq_poll(struct bench *b, struct fid_cq *cq, void *buf, size_t count, const char *what,
			     uint64_t have, uint64_t want)
{
	double last = 0;
	unsigned spins = 0;
	for (;;) {
		ssize_t n = fi_cq_read(cq, buf, count);
		if (n > 0)
			return (size_t) n;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(cq, &err, 0);
			die("%s completion error: %s (%d) provider: %s", what, fi_strerror(err.err), err.err,
			    fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
		}
		if (n != -FI_EAGAIN)
			die("fi_cq_read (%s): %s", what, fi_strerror((int) -n));
		if (++spins % 4096 == 0) {
			double t = now_s();
			if (last == 0)
				last = t;
			else if (t - last > b->o.timeout_s)
				die("no %s completion for %d s (have %" PRIu64 " of %" PRIu64 ")", what,
				    b->o.timeout_s, have, want);
		}
	}
}

/* Busy-polls cq until *done reaches target (cq_poll's limits). */
static inline void wait_cq(struct bench *b, struct fid_cq *cq, uint64_t *done, uint64_t target, const char *what)
{
	struct fi_cq_data_entry e[16]; /* room for any format a program picks */
	while (*done < target)
		*done += cq_poll(b, cq, e, 16, what, *done, target);
}

static inline void wait_tx(struct bench *b, uint64_t target) { wait_cq(b, b->txcq, &b->tx_done, target, "send"); }
static inline void wait_rx(struct bench *b, uint64_t target) { wait_cq(b, b->rxcq, &b->rx_done, target, "receive"); }

/* Retries a post while the provider says -FI_EAGAIN, driving progress by
 * reading the CQs (completions found are counted). */
#define POST(b, call, what)                                                                 \
	do {                                                                                \
		ssize_t r_;                                                                 \
		double t0_ = 0;                                                             \
		while ((r_ = (call)) == -FI_EAGAIN) {                                      \
			struct fi_cq_data_entry e_[16]; /* any CQ format */                 \
			ssize_t n_ = fi_cq_read((b)->txcq, e_, 16);                        \
			if (n_ > 0)                                                         \
				(b)->tx_done += (uint64_t) n_;                              \
			n_ = fi_cq_read((b)->rxcq, e_, 16);                                \
			if (n_ > 0)                                                         \
				(b)->rx_done += (uint64_t) n_;                              \
			if (t0_ == 0)                                                       \
				t0_ = now_s();                                              \
			else if (now_s() - t0_ > (b)->o.timeout_s)                         \
				die("%s: provider busy for %d s", what, (b)->o.timeout_s); \
		}                                                                           \
		if (r_)                                                                     \
			die("%s: %s (%zd)", what, fi_strerror((int) -r_), r_);              \
	} while (0)

/* Control messages (tagged TAG_CTRL on tagged endpoints): a send, waited
 * for; a receive into ctrl_rx; the wait for that receive, copying out
 * len bytes when p is not NULL. */
static inline void ctrl_send(struct bench *b, const void *p, size_t len)
{
	memcpy(b->ctrl_tx, p, len);
	if (b->tagged)
		POST(b, fi_tsend(b->ep, b->ctrl_tx, len, b->desc, b->peer, TAG_CTRL, &b->ctrl_tx_ctx), "fi_tsend(ctrl)");
	else
		POST(b, fi_send(b->ep, b->ctrl_tx, len, b->desc, b->peer, &b->ctrl_tx_ctx), "fi_send(ctrl)");
	wait_tx(b, b->tx_done + 1);
}

static inline void ctrl_post_recv(struct bench *b)
{
	if (b->tagged)
		POST(b, fi_trecv(b->ep, b->ctrl_rx, CTRL_LEN, b->desc, FI_ADDR_UNSPEC, TAG_CTRL, 0, &b->ctrl_rx_ctx),
		     "fi_trecv(ctrl)");
	else
		POST(b, fi_recv(b->ep, b->ctrl_rx, CTRL_LEN, b->desc, FI_ADDR_UNSPEC, &b->ctrl_rx_ctx), "fi_recv(ctrl)");
}

static inline void ctrl_wait(struct bench *b, void *p, size_t len)
{
	wait_rx(b, b->rx_done + 1);
	if (p)
		memcpy(p, b->ctrl_rx, len);
}

/* Says on stderr which provider, fabric and domain were picked. */
static inline void print_info(const struct bench *b)
{
	fprintf(stderr, "%s: provider %s, fabric %s, domain %s\n", b->name, b->info->fabric_attr->prov_name,
		b->info->fabric_attr->name, b->info->domain_attr->name);
}

/* Waits for one event of the expected kind on the EQ (bounded). */
static inline void wait_eq(struct bench *b, uint32_t want, struct fi_eq_cm_entry *entry)
{
	double t0 = now_s();
	for (;;) {
		uint32_t ev = 0;
		ssize_t n = fi_eq_read(b->eq, &ev, entry, sizeof(*entry), 0);
		if (n >= 0) {
			if (ev == want)
				return;
			die("unexpected EQ event %u (wanted %u)", ev, want);
		}
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry err = { 0 };
			fi_eq_readerr(b->eq, &err, 0);
			die("EQ error: %s (%d)", fi_strerror(err.err), err.err);
		}
		if (n != -FI_EAGAIN)
			die("fi_eq_read: %s", fi_strerror((int) -n));
		if (now_s() - t0 > b->o.timeout_s)
			die("no %s event for %d s", want == FI_CONNREQ ? "connection request" : "connected",
			    b->o.timeout_s);
		usleep(50);
	}
}

/* Connection-oriented setup (FI_EP_MSG): passive endpoint + accept on the
 * server, connect on the client. Receives may be pre-posted by pre_post
 * before the connection completes. */
static inline void setup_msg(struct bench *b, uint64_t caps, void (*pre_post)(struct bench *))
{
	struct fi_eq_attr ea = { 0 };
	struct fi_eq_cm_entry entry;
	b->hints = make_hints(b, caps);
	ea.wait_obj = FI_WAIT_UNSPEC;
	if (b->is_client)
		CHECK(fi_getinfo(FI_VERSION(1, 17), b->o.addr, b->o.dst_port, 0, b->hints, &b->info));
	else
		CHECK(fi_getinfo(FI_VERSION(1, 17), b->o.src_addr, b->o.src_port, FI_SOURCE, b->hints, &b->info));
	CHECK(fi_fabric(b->info->fabric_attr, &b->fabric, NULL));
	CHECK(fi_eq_open(b->fabric, &ea, &b->eq, NULL));
	if (!b->is_client) {
		CHECK(fi_passive_ep(b->fabric, b->info, &b->pep, NULL));
		CHECK(fi_pep_bind(b->pep, &b->eq->fid, 0));
		CHECK(fi_listen(b->pep));
		wait_eq(b, FI_CONNREQ, &entry);
		fi_freeinfo(b->info);
		b->info = entry.info;
	}
	CHECK(fi_domain(b->fabric, b->info, &b->domain, NULL));
	print_info(b);
	open_cqs(b);
	alloc_buffers(b);
	CHECK(fi_endpoint(b->domain, b->info, &b->ep, NULL));
	bind_ep(b);
	if (pre_post)
		pre_post(b);
	if (b->is_client)
		CHECK(fi_connect(b->ep, b->info->dest_addr, NULL, 0));
	else
		CHECK(fi_accept(b->ep, NULL, 0));
	wait_eq(b, FI_CONNECTED, &entry);
}

/* Reliable-datagram setup (FI_EP_RDM, tagged): the client inserts the
 * server's address (from fi_getinfo, or over the -E socket) and sends its
 * own name first in a control message; the server inserts it and answers. */
static inline void setup_rdm(struct bench *b, uint64_t caps, void (*pre_post)(struct bench *))
{
	struct fi_av_attr aa = { 0 };
	char name[CTRL_LEN], peer[CTRL_LEN];
	size_t namelen = sizeof(name), peerlen = 0;
	int oob = -1;
	b->hints = make_hints(b, caps);
	if (b->o.oob) {
		oob = oob_socket(b);
		CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, b->hints, &b->info));
	} else if (b->is_client) {
		CHECK(fi_getinfo(FI_VERSION(1, 17), b->o.addr, b->o.dst_port, 0, b->hints, &b->info));
	} else {
		CHECK(fi_getinfo(FI_VERSION(1, 17), b->o.src_addr, b->o.src_port, FI_SOURCE, b->hints, &b->info));
	}
	CHECK(fi_fabric(b->info->fabric_attr, &b->fabric, NULL));
	CHECK(fi_domain(b->fabric, b->info, &b->domain, NULL));
	print_info(b);
	open_cqs(b);
	alloc_buffers(b);
	aa.type = FI_AV_UNSPEC;
	aa.count = 4;
	CHECK(fi_av_open(b->domain, &aa, &b->av, NULL));
	CHECK(fi_endpoint(b->domain, b->info, &b->ep, NULL));
	bind_ep(b);
	CHECK(fi_getname(&b->ep->fid, name, &namelen));
	if (oob >= 0)
		peerlen = oob_swap(oob, name, namelen, peer, sizeof(peer));
	/* The control receive is posted before anything can arrive. */
	ctrl_post_recv(b);
	if (pre_post)
		pre_post(b);
	if (oob >= 0) {
		/* Both sides post their control receive before either sends. */
		char c = 0;
		if (send(oob, &c, 1, MSG_NOSIGNAL) != 1 || recv(oob, &c, 1, MSG_WAITALL) != 1)
			die("out-of-band sync failed");
	}
	if (b->is_client) {
		const void *dest = oob >= 0 ? (const void *) peer : b->info->dest_addr;
		if (!dest)
			die("fi_getinfo returned no destination address for %s:%s", b->o.addr, b->o.dst_port);
		if (fi_av_insert(b->av, dest, 1, &b->peer, 0, NULL) != 1)
			die("fi_av_insert of the server's address failed");
		ctrl_send(b, name, namelen);
		ctrl_wait(b, NULL, 0);
	} else {
		ctrl_wait(b, NULL, 0);
		if (fi_av_insert(b->av, b->ctrl_rx, 1, &b->peer, 0, NULL) != 1)
			die("fi_av_insert of the client's address failed");
		ctrl_send(b, "", 1);
	}
	(void) peerlen;
	if (oob >= 0)
		close(oob);
}

static inline void teardown(struct bench *b)
{
	if (b->ep)
		fi_close(&b->ep->fid);
	if (b->pep)
		fi_close(&b->pep->fid);
	if (b->mr)
		fi_close(&b->mr->fid);
	if (b->av)
		fi_close(&b->av->fid);
	if (b->txcq)
		fi_close(&b->txcq->fid);
	if (b->rxcq)
		fi_close(&b->rxcq->fid);
	if (b->eq)
		fi_close(&b->eq->fid);
	if (b->domain)
		fi_close(&b->domain->fid);
	if (b->fabric)
		fi_close(&b->fabric->fid);
	if (b->info)
		fi_freeinfo(b->info);
	if (b->hints)
		fi_freeinfo(b->hints);
	free(b->tx_ctx);
	free(b->rx_ctx);
	free(b->mem);
}

/* ---- data transfers ---- */

/* Posts the data receive into rx slot `slot` (any source, full length). */
static inline void post_rx(struct bench *b, size_t slot)
{
	char *buf = b->rx + (slot % b->rx_slots) * (b->max_size ? b->max_size : 1);
	size_t len = b->max_size;
	void *ctx = &b->rx_ctx[slot % (size_t) b->o.window];
	if (b->tagged)
		POST(b, fi_trecv(b->ep, buf, len, b->desc, FI_ADDR_UNSPEC, TAG_DATA, 0, ctx), "fi_trecv");
	else
		POST(b, fi_recv(b->ep, buf, len, b->desc, FI_ADDR_UNSPEC, ctx), "fi_recv");
}

static inline void post_tx(struct bench *b, size_t size, size_t slot)
{
	void *ctx = &b->tx_ctx[slot % (size_t) b->o.window];
	if (b->tagged)
		POST(b, fi_tsend(b->ep, b->tx, size, b->desc, b->peer, TAG_DATA, ctx), "fi_tsend");
	else
		POST(b, fi_send(b->ep, b->tx, size, b->desc, b->peer, ctx), "fi_send");
}

static inline void pre_post_one(struct bench *b) { post_rx(b, 0); }

/* ---- data pattern and results ---- */

static inline void fill(char *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char) ((seed * 31 + i) & 0xff);
}

static inline void check(const char *p, size_t n, uint64_t seed, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (char) ((seed * 31 + i) & 0xff))
			die("%s: data mismatch at byte %zu of %zu (seed %" PRIu64 ")", what, i, n, seed);
}

static inline void size_str(char *out, size_t cap, double v)
{
	if (v >= 1e9)
		snprintf(out, cap, "%.0fg", v / (1 << 30));
	else if (v >= (1 << 20))
		snprintf(out, cap, "%.0fm", v / (1 << 20));
	else if (v >= (1 << 10))
		snprintf(out, cap, "%.0fk", v / (1 << 10));
	else
		snprintf(out, cap, "%.0f", v);
}

static inline void print_header(void)
{
	printf("%-10s%-10s%-12s%-10s%12s%12s%12s\n", "bytes", "iters", "total", "time", "MB/sec", "usec/xfer",
	       "Mxfers/sec");
}

/* xfers: transfers timed (a ping-pong iteration is two). */
static inline void print_result(size_t size, long iters, double xfers, double sec)
{
	char tot[32], tm[32];
	double bytes = (double) size * xfers;
	size_str(tot, sizeof(tot), bytes);
	snprintf(tm, sizeof(tm), "%.2fs", sec);
	printf("%-10zu%-10ld%-12s%-10s%12.2f%12.2f%12.2f\n", size, iters, tot, tm, bytes / sec / 1e6,
	       sec * 1e6 / xfers, xfers / sec / 1e6);
	fflush(stdout);
}

/* Ping-pong over every size: the client sends first and waits for the
 * echo; one data receive is always pre-posted (by setup's pre_post). */
static inline void run_pingpong(struct bench *b)
{
	uint64_t seq = 0;
	print_header();
	for (int k = 0; k < b->o.nsizes; k++) {
		size_t size = b->o.sizes[k];
		long n = iters_for(b, size);
		double t0 = now_s();
		for (long i = -b->o.warmup; i < n; i++, seq++) {
			if (i == 0)
				t0 = now_s();
			if (b->is_client) {
				if (b->o.verify)
					fill(b->tx, size, seq);
				post_tx(b, size, 0);
				wait_tx(b, b->tx_done + 1);
				wait_rx(b, b->rx_done + 1);
				if (b->o.verify)
					check(b->rx, size, seq, "client");
				post_rx(b, 0);
			} else {
				wait_rx(b, b->rx_done + 1);
				if (b->o.verify) {
					check(b->rx, size, seq, "server");
					memcpy(b->tx, b->rx, size);
				}
				post_rx(b, 0);
				post_tx(b, size, 0);
				wait_tx(b, b->tx_done + 1);
			}
		}
		print_result(size, n, 2.0 * (double) n, now_s() - t0);
	}
}

#endif
