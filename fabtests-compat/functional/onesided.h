/*
 * Pieces shared by the one-sided programs (fi_rma, fi_rdm_atomic,
 * fi_rdm_rma_event, fi_rdm_rma_trigger, fi_multi_mr, fi_rma_badaccess,
 * fi_rdm_atomic_contention) on top of xfer.h:
 *
 *  - the skip convention: a provider that does not advertise a capability
 *    the program needs (fi_getinfo answers -FI_ENODATA) makes the program
 *    print "SKIP: <prov> lacks <CAP>" and exit 77;
 *  - memory registration that honours every mr_mode bit the application
 *    may be asked to follow (FI_MR_LOCAL: descriptors on every local
 *    buffer; FI_MR_VIRT_ADDR: the peer names a region by its virtual
 *    address, otherwise by offset from 0; FI_MR_PROV_KEY: the provider's
 *    key, otherwise a requested key unique in the domain; FI_MR_ENDPOINT:
 *    bind to the endpoint and enable);
 *  - a control channel on registered buffers (sync points, key exchange),
 *    so that FI_MR_LOCAL providers are used correctly, and the RDM address
 *    exchange over it.
 *
 * Target-side checks after a write rely on FI_ORDER_SAW (the sync message
 * sent after the write's completion arrives after the write's data); the
 * programs ask for it in their hints.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_FT_ONESIDED_H
#define OXI_FT_ONESIDED_H

#include "xfer.h"
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_trigger.h>

#define OS_SKIP 77
/* The mr_mode bits these programs know how to follow. */
#define OS_MR_MODES (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)
#define OS_CTL 4096

static uint64_t os_mr_mode;
static uint64_t os_next_key = 0x5000;

/* A registered region: what the local side uses and what the peer is told. */
struct os_mr {
	char *buf;
	size_t len;
	struct fid_mr *mr;
	void *desc;   /* NULL unless FI_MR_LOCAL */
	uint64_t key;  /* the key the peer uses */
	uint64_t addr; /* the address the peer names the first byte by */
};

/* The peer's view of a region, as exchanged over the control channel. */
struct os_rkey {
	uint64_t addr, key, len;
};

static struct os_mr os_ctl; /* control buffers: [0, OS_CTL) send, [OS_CTL, 2*OS_CTL) receive */

static const struct {
	uint64_t bit;
	const char *name;
} os_caps[] = {
	{ FI_RMA, "FI_RMA" }, { FI_ATOMIC, "FI_ATOMIC" }, { FI_RMA_EVENT, "FI_RMA_EVENT" },
	{ FI_TRIGGER, "FI_TRIGGER" }, { FI_FENCE, "FI_FENCE" }, { FI_READ, "FI_READ" }, { FI_WRITE, "FI_WRITE" },
	{ FI_REMOTE_READ, "FI_REMOTE_READ" }, { FI_REMOTE_WRITE, "FI_REMOTE_WRITE" },
};
#define OS_NCAPS (sizeof(os_caps) / sizeof(os_caps[0]))

static inline int os_probe(const struct fi_info *hints, uint64_t caps, uint64_t order)
{
	struct fi_info *h = fi_dupinfo(hints), *out = NULL;
	int rc;
	if (!h)
		ft_die("fi_dupinfo");
	h->caps = caps;
	h->tx_attr->msg_order = h->rx_attr->msg_order = order;
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &out);
	fi_freeinfo(out);
	fi_freeinfo(h);
	if (rc && rc != -FI_ENODATA)
		ft_die("fi_getinfo(probe): %s", fi_strerror(-rc));
	return rc == 0;
}

/* The skip convention: when no fi_info matches `hints`, names the first
 * one-sided capability (or ordering) the provider lacks, prints
 * "SKIP: <prov> lacks <CAP>" and exits 77. A provider that cannot even
 * give the program's base capabilities is a failure, not a skip. */
static inline void os_require(const struct fi_info *hints)
{
	uint64_t all = 0, base;
	uint64_t order = hints->tx_attr->msg_order | hints->rx_attr->msg_order;
	if (os_probe(hints, hints->caps, order))
		return;
	for (unsigned i = 0; i < OS_NCAPS; i++)
		all |= os_caps[i].bit;
	base = hints->caps & ~all;
	if (!os_probe(hints, base, 0))
		ft_die("fi_getinfo finds no %s endpoint of provider %s even without one-sided caps",
		       fi_tostr(&hints->ep_attr->type, FI_TYPE_EP_TYPE), ft_prov);
	for (unsigned i = 0; i < OS_NCAPS; i++) {
		if (!(hints->caps & os_caps[i].bit) || os_probe(hints, base | os_caps[i].bit, 0))
			continue;
		printf("SKIP: %s lacks %s\n", ft_prov, os_caps[i].name);
		exit(OS_SKIP);
	}
	if (!os_probe(hints, hints->caps, 0)) {
		printf("SKIP: %s lacks these capabilities together: %s\n", ft_prov, fi_tostr(&hints->caps, FI_TYPE_CAPS));
		exit(OS_SKIP);
	}
	printf("SKIP: %s lacks msg_order %s\n", ft_prov, fi_tostr(&order, FI_TYPE_MSG_ORDER));
	exit(OS_SKIP);
}

/* Hints of a one-sided program: caps, every mr_mode bit the programs
 * follow, FI_ORDER_SAW (see the file comment). */
static inline struct fi_info *os_hints(uint64_t caps)
{
	struct fi_info *h = ft_hints(caps);
	h->domain_attr->mr_mode = OS_MR_MODES;
	h->tx_attr->msg_order = FI_ORDER_SAW;
	h->rx_attr->msg_order = FI_ORDER_SAW;
	return h;
}

/* Registers [buf, buf+len) with `access` the way the domain's mr_mode
 * asks. Returns fi_mr_reg's code (the region is usable when 0). */
static inline int os_reg_rc(struct os_mr *m, void *buf, size_t len, uint64_t access, uint64_t flags)
{
	int rc;
	memset(m, 0, sizeof(*m));
	m->buf = buf;
	m->len = len;
	rc = fi_mr_reg(ft_domain, buf, len, access, 0, os_next_key++, flags, &m->mr, NULL);
	if (rc)
		return rc;
	if ((os_mr_mode & FI_MR_ENDPOINT) && (rc = fi_mr_bind(m->mr, &ft_ep->fid, 0)))
		ft_die("fi_mr_bind(endpoint): %s", fi_strerror(-rc));
	if ((os_mr_mode & FI_MR_ENDPOINT) && !(flags & FI_RMA_EVENT) && (rc = fi_mr_enable(m->mr)))
		ft_die("fi_mr_enable: %s", fi_strerror(-rc));
	m->key = fi_mr_key(m->mr);
	if (m->key == FI_KEY_NOTAVAIL)
		ft_die("fi_mr_key: FI_KEY_NOTAVAIL (FI_MR_RAW was not asked for)");
	m->desc = (os_mr_mode & FI_MR_LOCAL) ? fi_mr_desc(m->mr) : NULL;
	m->addr = (os_mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t) (uintptr_t) buf : 0;
	return 0;
}

#define OS_ACCESS_ALL (FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

static inline void os_reg(struct os_mr *m, void *buf, size_t len, uint64_t access)
{
	int rc = os_reg_rc(m, buf, len, access, 0);
	if (rc)
		ft_die("fi_mr_reg(%zu bytes, access %#llx): %s", len, (unsigned long long) access, fi_strerror(-rc));
}

static inline void os_unreg(struct os_mr *m)
{
	int rc;
	if (m->mr && (rc = fi_close(&m->mr->fid)))
		ft_die("fi_close(mr): %s", fi_strerror(-rc));
	m->mr = NULL;
}

/* The peer's view of bytes [off, off+len) of region m. */
static inline struct os_rkey os_rkey_of(const struct os_mr *m, size_t off, size_t len)
{
	struct os_rkey k = { m->addr + off, m->key, len };
	return k;
}

/* Waits for the completion of the operation with context `ctx` on cq; any
 * other completion or an error is fatal. */
static inline void os_cq_ctx(struct fid_cq *cq, void *ctx, const char *what)
{
	struct fi_cq_tagged_entry e;
	ft_cq_ok(cq, &e, what);
	if (e.op_context != ctx)
		ft_die("%s: completion with op_context %p, want %p", what, e.op_context, ctx);
}

static int os_ctl_tx_ctx, os_ctl_rx_ctx;

/* Sends `len` bytes (at most OS_CTL) to the peer and receives the peer's
 * message of at most `cap` bytes into `out`; both sides call it. Returns
 * the received length. */
static inline size_t os_swap(const void *mine, size_t len, void *out, size_t cap)
{
	struct fi_cq_tagged_entry e;
	char *tx = os_ctl.buf, *rx = os_ctl.buf + OS_CTL;
	if (len > OS_CTL || cap > OS_CTL)
		ft_die("control message too long");
	if (len)
		memcpy(tx, mine, len);
	FT_POST(fi_recv(ft_ep, rx, OS_CTL, os_ctl.desc, ft_peer, &os_ctl_rx_ctx), "fi_recv(control)");
	FT_POST(fi_send(ft_ep, tx, len, os_ctl.desc, ft_peer, &os_ctl_tx_ctx), "fi_send(control)");
	os_cq_ctx(ft_txcq, &os_ctl_tx_ctx, "control send");
	ft_cq_ok(ft_rxcq, &e, "control receive");
	if (e.op_context != &os_ctl_rx_ctx)
		ft_die("control receive: op_context %p (a remote CQ data completion out of place?)", e.op_context);
	if (e.len > cap)
		ft_die("control message of %zu bytes, want at most %zu", e.len, cap);
	if (out && e.len)
		memcpy(out, rx, e.len);
	return e.len;
}

/* Synchronisation point over the control channel. */
static inline void os_sync(void)
{
	os_swap(NULL, 0, NULL, 0);
}

/* Swaps the views of `n` regions (n * 24 bytes must fit OS_CTL). */
static inline void os_swap_keys(const struct os_rkey *mine, struct os_rkey *peer, size_t n)
{
	size_t got = os_swap(mine, n * sizeof(*mine), peer, n * sizeof(*peer));
	if (got != n * sizeof(*peer))
		ft_die("key exchange: %zu bytes, want %zu", got, n * sizeof(*peer));
}

/* Sends one 64-bit value to the peer (one side) / receives it (the other). */
static inline uint64_t os_swap_u64(uint64_t v)
{
	uint64_t p = 0;
	if (os_swap(&v, sizeof(v), &p, sizeof(p)) != sizeof(p))
		ft_die("value exchange: short message");
	return p;
}

/* Opens the CQs (tagged or data format, for remote CQ data), brings the endpoint
 * up (MSG: connect/accept; RDM: open), registers the control buffers and,
 * for RDM, exchanges addresses over them. */
static inline void os_init(void)
{
	struct fi_eq_cm_entry cm;
	static char ctl[2 * OS_CTL];
	/* MSG has no tags: the data format, which every provider offers
	 * (upstream's verbs has no tagged format); its entries are the
	 * tagged ones' head, read through the same struct. */
	ft_open_cqs(ft_ep_type == FI_EP_MSG ? FI_CQ_FORMAT_DATA : FI_CQ_FORMAT_TAGGED);
	os_mr_mode = ft_info->domain_attr->mr_mode;
	if (ft_ep_type == FI_EP_MSG) {
		if (ft_is_client()) {
			ft_connect(NULL, 0, &cm, sizeof(cm));
		} else {
			ft_listen();
			ft_accept(&cm, sizeof(cm), NULL, 0);
		}
		os_reg(&os_ctl, ctl, sizeof(ctl), FI_SEND | FI_RECV);
		return;
	}
	ft_open_ep(ft_info);
	os_reg(&os_ctl, ctl, sizeof(ctl), FI_SEND | FI_RECV);
	{
		char name[256];
		size_t len = sizeof(name);
		struct fi_cq_tagged_entry e;
		int rc;
		if ((rc = fi_getname(&ft_ep->fid, name, &len)))
			ft_die("fi_getname: %s", fi_strerror(-rc));
		if (ft_is_client()) {
			if ((rc = fi_av_insert(ft_av, ft_info->dest_addr, 1, &ft_peer, 0, NULL)) != 1)
				ft_die("fi_av_insert(server) = %d", rc);
			os_swap(name, len, NULL, OS_CTL);
		} else {
			FT_POST(fi_recv(ft_ep, ctl + OS_CTL, OS_CTL, os_ctl.desc, FI_ADDR_UNSPEC, &os_ctl_rx_ctx),
				"fi_recv(name)");
			ft_cq_ok(ft_rxcq, &e, "receive of the client's name");
			if ((rc = fi_av_insert(ft_av, ctl + OS_CTL, 1, &ft_peer, 0, NULL)) != 1)
				ft_die("fi_av_insert(client) = %d", rc);
			memcpy(ctl, "ack", 4);
			FT_POST(fi_send(ft_ep, ctl, 4, os_ctl.desc, ft_peer, &os_ctl_tx_ctx), "fi_send(ack)");
			os_cq_ctx(ft_txcq, &os_ctl_tx_ctx, "send of the ack");
		}
	}
}

/* Closes the control region and everything else. */
static inline int os_finish(const char *name)
{
	os_unreg(&os_ctl);
	return ft_finish(name);
}

/* Whether `n` bytes at p all equal `v`; returns the first index that does
 * not, or -1. */
static inline long os_untouched(const void *p, size_t n, unsigned char v)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		if (c[i] != v)
			return (long) i;
	return -1;
}

/* A counter of the domain, with a wait object (fi_cntr_wait works). */
static inline struct fid_cntr *os_open_cntr(void)
{
	struct fi_cntr_attr a = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *c;
	int rc = fi_cntr_open(ft_domain, &a, &c, NULL);
	if (rc)
		ft_die("fi_cntr_open: %s", fi_strerror(-rc));
	return c;
}

/* A triggered context (fi_trigger(3)): released once counter c reaches
 * threshold. */
static inline void os_set_trigger(struct fi_triggered_context *t, struct fid_cntr *c, size_t threshold)
{
	memset(t, 0, sizeof(*t));
	t->event_type = FI_TRIGGER_THRESHOLD;
	t->trigger.threshold.cntr = c;
	t->trigger.threshold.threshold = threshold;
}

/* Completion flags the one-sided programs look at. */
#define OS_OPFLAGS \
	(FI_SEND | FI_RECV | FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA)

#endif
