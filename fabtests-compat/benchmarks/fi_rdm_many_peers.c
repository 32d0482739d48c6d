/*
 * fi_rdm_many_peers: one reliable-datagram (FI_EP_RDM) endpoint, the hub,
 * exchanging tagged messages with many peer endpoints spread over a few
 * processes. It measures what a process pays per peer: connection setup
 * time, resident memory per connected (then idle) peer, and the aggregate
 * message rate against that with a single peer.
 *
 * Hub:   fi_rdm_many_peers -p PROV [-s ADDR] -B PORT -n PEERS [-I MSGS] [-S SIZE] [-W WINDOW] [-v]
 * Peers: fi_rdm_many_peers -p PROV -P PORT -n PEERS -c COUNT -o FIRST [-S SIZE] [-v] HUB_ADDR
 *        (one process runs COUNT peer endpoints numbered FIRST.., sharing
 *        one domain, AV and CQ; several such processes add up to PEERS).
 * -E (both sides, for providers whose addresses no port names, shm): the
 *        hub's name travels over a TCP connection to 127.0.0.1:PORT
 *        instead (one peer process; bench_common.h's oob_open).
 * -U (both sides, with the same -I): incast instead of echo. Every peer
 *        endpoint sends MSGS/PEERS messages to the hub (the peer process
 *        round-robin over its endpoints, WINDOW sends outstanding), and
 *        the hub counts them: the rate is the hub's, from the first data
 *        message to the last. Many senders into one endpoint, as an MPI
 *        rank receives from the others of its host.
 *
 * Protocol, all tagged: each peer sends TAG_CTRL "hello" (its index and
 * name); the hub inserts the name, answers "go", the peer answers "ready".
 * Setup time is from the first hello to the last ready. Then the hub sends
 * MSGS TAG_DATA messages round-robin over the peers with at most WINDOW
 * outstanding; each peer echoes every one back, and the hub checks the
 * echo (with -v, every byte; always the sequence number and the peer that
 * answered). Finally the hub sends "bye" to every peer.
 *
 * Result line (stdout, one line):
 *   many_peers peers N setup_ms T msgs M size S rate_msgs_per_s R
 *   rss_idle_kib A rss_connected_kib B rss_per_peer_bytes C
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "bench_common.h"

#define MSG_HELLO 1
#define MSG_GO 2
#define MSG_READY 3
#define MSG_BYE 4
#define NAME_MAX_LEN 200

/* A control message: what, which peer, and (hello) the peer's name. */
struct ctrl {
	uint32_t what;
	uint32_t peer;
	uint32_t namelen;
	char name[NAME_MAX_LEN];
};

/* Every posted operation's context: the fi_context2 the provider may use,
 * then what the completion is for. */
struct op {
	struct fi_context2 fi;
	int kind;    /* OP_* */
	int ep;      /* peer process: index of the local endpoint */
	size_t slot; /* buffer slot */
};

enum { OP_CTRL_RX, OP_CTRL_TX, OP_DATA_RX, OP_DATA_TX };

struct opts {
	const char *prov, *src_addr, *src_port, *dst_port, *addr;
	long npeers, count, first, msgs;
	size_t size;
	int window, timeout_s, verify, oob, incast;
};

static struct opts o = {
	.npeers = 1, .msgs = 10000, .size = 8, .window = 64, .timeout_s = 30,
};

static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void parse(int argc, char **argv)
{
	int c;
	while ((c = getopt(argc, argv, "p:s:B:P:n:c:o:I:S:W:T:vEUh")) != -1) {
		switch (c) {
		case 'p': o.prov = optarg; break;
		case 's': o.src_addr = optarg; break;
		case 'B': o.src_port = optarg; break;
		case 'P': o.dst_port = optarg; break;
		case 'n': o.npeers = atol(optarg); break;
		case 'c': o.count = atol(optarg); break;
		case 'o': o.first = atol(optarg); break;
		case 'I': o.msgs = atol(optarg); break;
		case 'S': o.size = (size_t) atol(optarg); break;
		case 'W': o.window = atoi(optarg); break;
		case 'T': o.timeout_s = atoi(optarg); break;
		case 'v': o.verify = 1; break;
		case 'E': o.oob = 1; break;
		case 'U': o.incast = 1; break;
		default:
			fprintf(stderr,
				"usage: %s -p PROV [-s ADDR] -B PORT -n PEERS [-I MSGS] [-S SIZE] [-W WINDOW] [-T S] [-v] [-E] [-U]\n"
				"       %s -p PROV -P PORT -n PEERS -c COUNT -o FIRST [-S SIZE] [-I MSGS] [-W WINDOW] [-v] [-E] [-U] HUB_ADDR\n",
				argv[0], argv[0]);
			exit(c == 'h' ? 0 : 1);
		}
	}
	if (optind < argc)
		o.addr = argv[optind];
	if (o.npeers < 1 || o.msgs < 1 || o.window < 1 || o.timeout_s < 1 || o.size < 8 || o.first < 0)
		die("bad option value (-S must be at least 8 bytes: the sequence number)");
	if (o.count == 0)
		o.count = o.npeers - o.first;
	if (o.count < 1 || o.first + o.count > o.npeers)
		die("peers FIRST..FIRST+COUNT-1 (-o, -c) must lie within the -n PEERS the hub serves");
	if (!o.src_port)
		o.src_port = BENCH_DEFAULT_PORT;
	if (!o.dst_port)
		o.dst_port = BENCH_DEFAULT_PORT;
}

static struct fi_info *hints(void)
{
	struct bench b;
	memset(&b, 0, sizeof(b));
	b.o.prov = o.prov;
	b.o.ep_type = FI_EP_RDM;
	struct fi_info *h = make_hints(&b, FI_TAGGED);
	/* Memory registration is not needed for this test's buffers. */
	h->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	return h;
}

/* The data pattern of message seq: its number first, then bytes from it. */
static void stamp(char *p, uint64_t seq)
{
	memcpy(p, &seq, 8);
	if (o.verify)
		fill(p + 8, o.size - 8, seq);
}

static uint64_t unstamp(const char *p, const char *who)
{
	uint64_t seq;
	memcpy(&seq, p, 8);
	if (o.verify)
		check(p + 8, o.size - 8, seq, who);
	return seq;
}

/* Posts a tagged receive; -FI_EAGAIN (the CQ has no room for its
 * completion yet) is retried for at most the timeout. */
static void post_trecv(struct fid_ep *ep, void *buf, size_t len, uint64_t tag, void *ctx)
{
	double t0 = now_s();
	ssize_t r;
	while ((r = fi_trecv(ep, buf, len, NULL, FI_ADDR_UNSPEC, tag, 0, ctx)) == -FI_EAGAIN)
		if (now_s() - t0 > o.timeout_s)
			die("fi_trecv: provider busy for %d s", o.timeout_s);
	if (r)
		die("fi_trecv: %s (%zd)", fi_strerror((int) -r), r);
}

static void cq_fail(struct fid_cq *cq, ssize_t n, const char *who)
{
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };
		fi_cq_readerr(cq, &err, 0);
		die("%s: completion error: %s (%d) provider: %s", who, fi_strerror(err.err), err.err,
		    fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
	}
	die("%s: fi_cq_read: %s", who, fi_strerror((int) -n));
}

/* Sends wait here when the provider says -FI_EAGAIN, and go out, in
 * order, from the main loops: a completion handler never blocks. */
struct pending {
	struct fid_ep *ep;
	void *buf;
	size_t len;
	fi_addr_t dest;
	uint64_t tag;
	void *ctx;
};

struct sendq {
	struct pending *q;
	size_t head, tail, cap;
};

static void sendq_init(struct sendq *q, size_t cap)
{
	q->q = calloc(cap, sizeof(*q->q));
	q->cap = cap;
	if (!q->q)
		die("out of memory");
}

/* Posts queued sends until the provider has no room for more. */
static void sendq_flush(struct sendq *q)
{
	while (q->head != q->tail) {
		struct pending *s = &q->q[q->head % q->cap];
		ssize_t r = fi_tsend(s->ep, s->buf, s->len, NULL, s->dest, s->tag, s->ctx);
		if (r == -FI_EAGAIN)
			return;
		if (r)
			die("fi_tsend: %s (%zd)", fi_strerror((int) -r), r);
		q->head++;
	}
}

static void sendq_push(struct sendq *q, struct fid_ep *ep, void *buf, size_t len, fi_addr_t dest, uint64_t tag,
		       void *ctx)
{
	if (q->tail - q->head == q->cap)
		die("more sends waiting than the program allows (%zu)", q->cap);
	q->q[q->tail++ % q->cap] = (struct pending) { ep, buf, len, dest, tag, ctx };
	sendq_flush(q);
}

/* ---- the hub ---- */

struct hub {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	fi_addr_t *peer;     /* by peer index */
	char *hello_seen;    /* by peer index */
	struct ctrl *crx, *ctx;
	struct op *crx_op, *ctx_op;
	size_t ncrx;         /* control receive slots */
	char *drx, *dtx;     /* data receive / send slots, window each */
	struct op *drx_op, *dtx_op;
	long hellos, readies, ctrl_sent, ctrl_done;
	long data_sent, data_back, data_txdone;
	double t_first, t_ready;
	double t_data0, t_data1; /* incast: first and last data message */
	int *dtx_free;       /* stack of free send slots */
	int ndtx_free;
	struct sendq sq;
};

static void hub_post_ctrl_rx(struct hub *h, size_t i)
{
	h->crx_op[i] = (struct op) { .kind = OP_CTRL_RX, .slot = i };
	post_trecv(h->ep, &h->crx[i], sizeof(struct ctrl), TAG_CTRL, &h->crx_op[i]);
}

static void hub_post_data_rx(struct hub *h, size_t i)
{
	h->drx_op[i] = (struct op) { .kind = OP_DATA_RX, .slot = i };
	post_trecv(h->ep, h->drx + i * o.size, o.size, TAG_DATA, &h->drx_op[i]);
}

static void hub_send_ctrl(struct hub *h, uint32_t what, uint32_t peer)
{
	size_t i = (size_t) peer;
	h->ctx[i] = (struct ctrl) { .what = what, .peer = peer };
	h->ctx_op[i] = (struct op) { .kind = OP_CTRL_TX, .slot = i };
	sendq_push(&h->sq, h->ep, &h->ctx[i], offsetof(struct ctrl, name), h->peer[i], TAG_CTRL, &h->ctx_op[i]);
	h->ctrl_sent++;
}

static void hub_on_ctrl(struct hub *h, size_t slot)
{
	struct ctrl c = h->crx[slot];
	hub_post_ctrl_rx(h, slot);
	if (c.peer >= (uint32_t) o.npeers)
		die("hub: control message from peer %u of %ld", c.peer, o.npeers);
	if (c.what == MSG_HELLO) {
		if (h->hello_seen[c.peer]++)
			die("hub: second hello from peer %u", c.peer);
		if (c.namelen > NAME_MAX_LEN)
			die("hub: peer %u sent a %u-byte name", c.peer, c.namelen);
		if (h->hellos++ == 0)
			h->t_first = now_s();
		if (fi_av_insert(h->av, c.name, 1, &h->peer[c.peer], 0, NULL) != 1)
			die("hub: fi_av_insert of peer %u failed", c.peer);
		hub_send_ctrl(h, MSG_GO, c.peer);
	} else if (c.what == MSG_READY) {
		if (++h->readies == o.npeers)
			h->t_ready = now_s();
	} else {
		die("hub: unexpected control message %u from peer %u", c.what, c.peer);
	}
}

/* Messages each peer endpoint sends the hub in incast mode. */
static long incast_per_peer(void)
{
	long per = o.msgs / o.npeers;
	return per > 0 ? per : 1;
}

static void hub_on_data(struct hub *h, size_t slot)
{
	uint64_t seq = unstamp(h->drx + slot * o.size, "hub");
	if (o.incast) {
		/* seq = peer + PEERS * k, k < the per-peer count */
		if (seq >= (uint64_t) (incast_per_peer() * o.npeers))
			die("hub: incast message %" PRIu64 " out of range", seq);
		h->t_data1 = now_s();
		if (h->data_back == 0)
			h->t_data0 = h->t_data1;
	} else if (seq >= (uint64_t) h->data_sent) {
		die("hub: echo of message %" PRIu64 " that was never sent", seq);
	}
	h->data_back++;
	hub_post_data_rx(h, slot);
}

static void hub_poll(struct hub *h)
{
	struct fi_cq_tagged_entry e[32];
	sendq_flush(&h->sq);
	ssize_t n = fi_cq_read(h->cq, e, 32);
	if (n == -FI_EAGAIN)
		return;
	if (n < 0)
		cq_fail(h->cq, n, "hub");
	for (ssize_t k = 0; k < n; k++) {
		struct op *op = e[k].op_context;
		switch (op->kind) {
		case OP_CTRL_RX: hub_on_ctrl(h, op->slot); break;
		case OP_CTRL_TX: h->ctrl_done++; break;
		case OP_DATA_RX: hub_on_data(h, op->slot); break;
		case OP_DATA_TX:
			h->data_txdone++;
			h->dtx_free[h->ndtx_free++] = (int) op->slot;
			break;
		}
	}
}

/* Polls until cond holds; dies after timeout_s seconds without it. */
#define HUB_UNTIL(h, cond, what)                                                          \
	do {                                                                              \
		double t0_ = now_s();                                                     \
		while (!(cond)) {                                                         \
			hub_poll(h);                                                      \
			if (now_s() - t0_ > o.timeout_s)                                  \
				die("hub: timed out waiting for %s", what);               \
		}                                                                         \
	} while (0)

static int run_hub(void)
{
	struct hub hh = { 0 }, *h = &hh;
	struct fi_info *hi = hints(), *info = NULL;
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr aa = { .type = FI_AV_UNSPEC };
	size_t n = (size_t) o.npeers, w = (size_t) o.window;
	if (o.oob)
		CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hi, &info));
	else
		CHECK(fi_getinfo(FI_VERSION(1, 17), o.src_addr, o.src_port, FI_SOURCE, hi, &info));
	CHECK(fi_fabric(info->fabric_attr, &h->fabric, NULL));
	CHECK(fi_domain(h->fabric, info, &h->domain, NULL));
	fprintf(stderr, "fi_rdm_many_peers: provider %s, hub for %zu peers\n", info->fabric_attr->prov_name, n);
	ca.size = 2 * n + 2 * w + 64;
	CHECK(fi_cq_open(h->domain, &ca, &h->cq, NULL));
	aa.count = n;
	CHECK(fi_av_open(h->domain, &aa, &h->av, NULL));
	CHECK(fi_endpoint(h->domain, info, &h->ep, NULL));
	CHECK(fi_ep_bind(h->ep, &h->av->fid, 0));
	CHECK(fi_ep_bind(h->ep, &h->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(h->ep));
	if (o.oob) {
		char name[NAME_MAX_LEN], none[1];
		size_t len = sizeof(name);
		CHECK(fi_getname(&h->ep->fid, name, &len));
		int s = oob_open(0, NULL, o.src_port, o.timeout_s);
		(void) oob_swap(s, name, len, none, sizeof(none));
		close(s);
	}

	h->ncrx = n < 64 ? n : 64;
	h->peer = calloc(n, sizeof(*h->peer));
	h->hello_seen = calloc(n, 1);
	h->crx = calloc(h->ncrx, sizeof(*h->crx));
	h->crx_op = calloc(h->ncrx, sizeof(*h->crx_op));
	h->ctx = calloc(n, sizeof(*h->ctx));
	h->ctx_op = calloc(n, sizeof(*h->ctx_op));
	h->drx = calloc(w, o.size);
	h->dtx = calloc(w, o.size);
	h->drx_op = calloc(w, sizeof(*h->drx_op));
	h->dtx_op = calloc(w, sizeof(*h->dtx_op));
	h->dtx_free = calloc(w, sizeof(int));
	sendq_init(&h->sq, n + w);
	if (!h->peer || !h->hello_seen || !h->crx || !h->crx_op || !h->ctx || !h->ctx_op || !h->drx || !h->dtx ||
	    !h->drx_op || !h->dtx_op || !h->dtx_free)
		die("out of memory");
	for (size_t i = 0; i < w; i++)
		h->dtx_free[h->ndtx_free++] = (int) i;
	for (size_t i = 0; i < h->ncrx; i++)
		hub_post_ctrl_rx(h, i);
	for (size_t i = 0; i < w; i++)
		hub_post_data_rx(h, i);
	/* Touch every buffer so the idle figure already holds them. */
	memset(h->drx, 0, w * o.size);
	memset(h->dtx, 0, w * o.size);
	long rss_idle = rss_kib();
	printf("hub ready\n");
	fflush(stdout);

	HUB_UNTIL(h, h->readies == o.npeers && h->ctrl_done == h->ctrl_sent, "every peer's hello and ready");
	long rss_conn = rss_kib();
	double setup = h->t_ready - h->t_first;

	double t0 = now_s();
	if (o.incast) {
		long total = incast_per_peer() * o.npeers;
		double last = t0;
		long back = 0;
		while (h->data_back < total) {
			hub_poll(h);
			if (h->data_back != back) {
				back = h->data_back;
				last = now_s();
			} else if (now_s() - last > o.timeout_s) {
				die("hub: no data for %d s (%ld of %ld)", o.timeout_s, h->data_back, total);
			}
		}
		o.msgs = total;
	} else {
		double last = t0;
		long back = 0;
		while (h->data_back < o.msgs) {
			while (h->data_sent < o.msgs && h->data_sent - h->data_back < o.window && h->ndtx_free > 0) {
				int slot = h->dtx_free[--h->ndtx_free];
				uint64_t seq = (uint64_t) h->data_sent;
				size_t to = (size_t) (seq % n);
				char *buf = h->dtx + (size_t) slot * o.size;
				stamp(buf, seq);
				h->dtx_op[slot] = (struct op) { .kind = OP_DATA_TX, .slot = (size_t) slot };
				sendq_push(&h->sq, h->ep, buf, o.size, h->peer[to], TAG_DATA, &h->dtx_op[slot]);
				h->data_sent++;
			}
			hub_poll(h);
			if (h->data_back != back) {
				back = h->data_back;
				last = now_s();
			} else if (now_s() - last > o.timeout_s) {
				die("hub: no echo for %d s (%ld of %ld back)", o.timeout_s, h->data_back, o.msgs);
			}
		}
	}
	double secs = now_s() - t0;
	if (o.incast) {
		/* From the first message to the last: n - 1 intervals. */
		secs = (h->t_data1 - h->t_data0) * (double) o.msgs / (double) (o.msgs > 1 ? o.msgs - 1 : 1);
		if (secs <= 0)
			secs = 1e-9;
	} else {
		HUB_UNTIL(h, h->data_txdone == o.msgs, "data send completions");
	}

	for (size_t i = 0; i < n; i++)
		hub_send_ctrl(h, MSG_BYE, (uint32_t) i);
	HUB_UNTIL(h, h->ctrl_done == h->ctrl_sent, "bye completions");

	printf("many_peers peers %zu setup_ms %.3f msgs %ld size %zu rate_msgs_per_s %.0f rss_idle_kib %ld "
	       "rss_connected_kib %ld rss_per_peer_bytes %.0f\n",
	       n, setup * 1e3, o.msgs, o.size, (double) o.msgs / secs, rss_idle, rss_conn,
	       (double) (rss_conn - rss_idle) * 1024.0 / (double) n);
	fflush(stdout);
	CHECK(fi_close(&h->ep->fid));
	CHECK(fi_close(&h->av->fid));
	CHECK(fi_close(&h->cq->fid));
	CHECK(fi_close(&h->domain->fid));
	CHECK(fi_close(&h->fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hi);
	return 0;
}

/* ---- a process of peers ---- */

#define PEER_RX 4 /* data receives each peer endpoint keeps posted */

struct peers {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep **ep;
	fi_addr_t hub;
	struct ctrl *crx, *ctx;     /* one each per endpoint */
	struct op *crx_op, *ctx_op;
	char *drx;                  /* PEER_RX slots per endpoint; echoes go out from them */
	struct op *drx_op, *echo_op;
	struct sendq sq;
	long ctrl_pending, byes, echoes, echo_done;
	long first, count;
	long readies;          /* incast: endpoints that answered go */
	char *dtx;             /* incast: WINDOW send slots */
	struct op *dtx_op;
	int *dtx_free, ndtx_free;
};

static void peer_post_ctrl_rx(struct peers *p, size_t e)
{
	p->crx_op[e] = (struct op) { .kind = OP_CTRL_RX, .ep = (int) e };
	post_trecv(p->ep[e], &p->crx[e], sizeof(struct ctrl), TAG_CTRL, &p->crx_op[e]);
}

static void peer_post_data_rx(struct peers *p, size_t e, size_t k)
{
	size_t i = e * PEER_RX + k;
	p->drx_op[i] = (struct op) { .kind = OP_DATA_RX, .ep = (int) e, .slot = i };
	post_trecv(p->ep[e], p->drx + i * o.size, o.size, TAG_DATA, &p->drx_op[i]);
}

static void peer_send_ctrl(struct peers *p, size_t e, uint32_t what, const void *name, size_t namelen)
{
	p->ctx[e] = (struct ctrl) { .what = what, .peer = (uint32_t) (p->first + (long) e), .namelen = (uint32_t) namelen };
	if (namelen)
		memcpy(p->ctx[e].name, name, namelen);
	p->ctx_op[e] = (struct op) { .kind = OP_CTRL_TX, .ep = (int) e };
	p->ctrl_pending++;
	sendq_push(&p->sq, p->ep[e], &p->ctx[e], offsetof(struct ctrl, name) + namelen, p->hub, TAG_CTRL,
		   &p->ctx_op[e]);
}

static void peers_poll(struct peers *p)
{
	struct fi_cq_tagged_entry ent[32];
	sendq_flush(&p->sq);
	ssize_t n = fi_cq_read(p->cq, ent, 32);
	if (n == -FI_EAGAIN)
		return;
	if (n < 0)
		cq_fail(p->cq, n, "peers");
	for (ssize_t k = 0; k < n; k++) {
		struct op *op = ent[k].op_context;
		size_t e = (size_t) op->ep;
		switch (op->kind) {
		case OP_CTRL_RX: {
			struct ctrl c = p->crx[e];
			if (c.peer != (uint32_t) (p->first + (long) e))
				die("peer %ld: control message for peer %u", p->first + (long) e, c.peer);
			if (c.what == MSG_GO) {
				peer_post_ctrl_rx(p, e);
				peer_send_ctrl(p, e, MSG_READY, NULL, 0);
				p->readies++;
			} else if (c.what == MSG_BYE) {
				p->byes++;
			} else {
				die("peer %ld: unexpected control message %u", p->first + (long) e, c.what);
			}
			break;
		}
		case OP_CTRL_TX: p->ctrl_pending--; break;
		case OP_DATA_RX: {
			/* Echoed from the receive slot, which is posted again once
			 * the echo has gone. */
			char *d = p->drx + op->slot * o.size;
			uint64_t seq = unstamp(d, "peer");
			if (seq % (uint64_t) o.npeers != (uint64_t) (p->first + (long) e))
				die("peer %ld: got message %" PRIu64 " meant for peer %" PRIu64, p->first + (long) e,
				    seq, seq % (uint64_t) o.npeers);
			p->echo_op[op->slot] = (struct op) { .kind = OP_DATA_TX, .ep = (int) e, .slot = op->slot };
			sendq_push(&p->sq, p->ep[e], d, o.size, p->hub, TAG_DATA, &p->echo_op[op->slot]);
			p->echoes++;
			break;
		}
		case OP_DATA_TX:
			p->echo_done++;
			if (o.incast)
				p->dtx_free[p->ndtx_free++] = (int) op->slot;
			else
				peer_post_data_rx(p, e, op->slot - e * PEER_RX);
			break;
		}
	}
}

/* Incast: once every endpoint of this process is ready, sends go out
 * round-robin over them, WINDOW outstanding; message k of endpoint e is
 * number (FIRST + e) + PEERS * k. */
static void peers_incast(struct peers *p)
{
	long target = incast_per_peer() * p->count;
	if (p->readies < p->count)
		return;
	while (p->echoes < target && p->ndtx_free > 0) {
		int slot = p->dtx_free[--p->ndtx_free];
		long e = p->echoes % p->count, k = p->echoes / p->count;
		uint64_t seq = (uint64_t) (p->first + e) + (uint64_t) o.npeers * (uint64_t) k;
		char *buf = p->dtx + (size_t) slot * o.size;
		stamp(buf, seq);
		p->dtx_op[slot] = (struct op) { .kind = OP_DATA_TX, .ep = (int) e, .slot = (size_t) slot };
		sendq_push(&p->sq, p->ep[e], buf, o.size, p->hub, TAG_DATA, &p->dtx_op[slot]);
		p->echoes++;
	}
}

static int run_peers(void)
{
	struct peers pp = { 0 }, *p = &pp;
	struct fi_info *hi = hints(), *info = NULL;
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr aa = { .type = FI_AV_UNSPEC, .count = 1 };
	size_t cnt = (size_t) o.count;
	p->first = o.first;
	p->count = (long) cnt;
	if (o.oob) {
		int s = oob_open(1, o.addr, o.dst_port, o.timeout_s);
		size_t len;
		CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hi, &info));
		free(info->dest_addr);
		if (!(info->dest_addr = malloc(NAME_MAX_LEN)))
			die("out of memory");
		len = oob_swap(s, "", 0, info->dest_addr, NAME_MAX_LEN);
		info->dest_addrlen = len;
		close(s);
	} else {
		CHECK(fi_getinfo(FI_VERSION(1, 17), o.addr, o.dst_port, 0, hi, &info));
	}
	if (!info->dest_addr)
		die("fi_getinfo returned no destination address for %s:%s", o.addr, o.dst_port);
	CHECK(fi_fabric(info->fabric_attr, &p->fabric, NULL));
	CHECK(fi_domain(p->fabric, info, &p->domain, NULL));
	ca.size = cnt * (PEER_RX + 8) + 64;
	CHECK(fi_cq_open(p->domain, &ca, &p->cq, NULL));
	CHECK(fi_av_open(p->domain, &aa, &p->av, NULL));
	if (fi_av_insert(p->av, info->dest_addr, 1, &p->hub, 0, NULL) != 1)
		die("fi_av_insert of the hub's address failed");
	p->ep = calloc(cnt, sizeof(*p->ep));
	p->crx = calloc(cnt, sizeof(*p->crx));
	p->ctx = calloc(cnt, sizeof(*p->ctx));
	p->crx_op = calloc(cnt, sizeof(*p->crx_op));
	p->ctx_op = calloc(cnt, sizeof(*p->ctx_op));
	p->drx = calloc(cnt * PEER_RX, o.size);
	p->drx_op = calloc(cnt * PEER_RX, sizeof(*p->drx_op));
	p->echo_op = calloc(cnt * PEER_RX, sizeof(*p->echo_op));
	sendq_init(&p->sq, cnt * (PEER_RX + 2) + (size_t) o.window);
	if (o.incast) {
		p->dtx = calloc((size_t) o.window, o.size);
		p->dtx_op = calloc((size_t) o.window, sizeof(*p->dtx_op));
		p->dtx_free = calloc((size_t) o.window, sizeof(int));
		if (!p->dtx || !p->dtx_op || !p->dtx_free)
			die("out of memory");
		for (int i = 0; i < o.window; i++)
			p->dtx_free[p->ndtx_free++] = i;
	}
	if (!p->ep || !p->crx || !p->ctx || !p->crx_op || !p->ctx_op || !p->drx || !p->drx_op || !p->echo_op)
		die("out of memory");
	for (size_t e = 0; e < cnt; e++) {
		char name[NAME_MAX_LEN];
		size_t len = sizeof(name);
		CHECK(fi_endpoint(p->domain, info, &p->ep[e], NULL));
		CHECK(fi_ep_bind(p->ep[e], &p->av->fid, 0));
		CHECK(fi_ep_bind(p->ep[e], &p->cq->fid, FI_TRANSMIT | FI_RECV));
		CHECK(fi_enable(p->ep[e]));
		CHECK(fi_getname(&p->ep[e]->fid, name, &len));
		peer_post_ctrl_rx(p, e);
		for (size_t k = 0; k < PEER_RX; k++)
			peer_post_data_rx(p, e, k);
		peer_send_ctrl(p, e, MSG_HELLO, name, len);
	}
	double last = now_s();
	long seen = -1;
	while (p->byes < p->count || p->ctrl_pending > 0 || p->echo_done < p->echoes) {
		peers_poll(p);
		if (o.incast)
			peers_incast(p);
		long progress = p->byes + p->echoes + p->echo_done;
		if (progress != seen) {
			seen = progress;
			last = now_s();
		} else if (now_s() - last > o.timeout_s) {
			die("peers %ld..%ld: nothing happened for %d s (%ld byes of %ld)", p->first,
			    p->first + p->count - 1, o.timeout_s, p->byes, p->count);
		}
	}
	for (size_t e = 0; e < cnt; e++)
		CHECK(fi_close(&p->ep[e]->fid));
	CHECK(fi_close(&p->av->fid));
	CHECK(fi_close(&p->cq->fid));
	CHECK(fi_close(&p->domain->fid));
	CHECK(fi_close(&p->fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hi);
	printf("peers %ld..%ld: %ld %s, done\n", p->first, p->first + p->count - 1, p->echoes,
	       o.incast ? "sends" : "echoes");
	return 0;
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	return o.addr ? run_peers() : run_hub();
}
