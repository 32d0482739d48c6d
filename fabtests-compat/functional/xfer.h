/*
 * Pieces shared by the RDM feature programs (fi_rdm, fi_rdm_tagged_peek,
 * fi_cq_data, fi_multi_recv, fi_inject_test, fi_av_xfer) on top of
 * shared.h: a synchronisation point on the tagged queue (so that posted
 * untagged receives are not consumed by it), extra endpoints with their own
 * CQs and bind flags, "no completion arrives" checks, and a payload pattern
 * that can be cut at any offset.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_FT_XFER_H
#define OXI_FT_XFER_H

#include "shared.h"

/* Tag reserved for xf_tsync; test tags and ignore masks stay below it. */
#define XF_SYNC_TAG 0x5f5f000000000000ULL

/* Synchronisation point on the tagged queue: a zero-byte tagged message
 * each way with XF_SYNC_TAG. Untagged receives posted before it stay
 * untouched. Both sides must call it; needs FI_TAGGED. */
static inline void xf_tsync(void)
{
	struct fi_cq_tagged_entry e;
	FT_POST(fi_trecv(ft_ep, NULL, 0, NULL, ft_peer, XF_SYNC_TAG, 0, NULL), "fi_trecv(sync)");
	FT_POST(fi_tsend(ft_ep, NULL, 0, NULL, ft_peer, XF_SYNC_TAG, NULL), "fi_tsend(sync)");
	ft_cq_ok(ft_txcq, &e, "tagged sync send");
	ft_cq_ok(ft_rxcq, &e, "tagged sync receive");
	if (e.tag != XF_SYNC_TAG)
		ft_die("sync receive got tag %#llx", (unsigned long long) e.tag);
}

/* An endpoint of our own (besides ft_ep): its CQs are opened with
 * `format`, the transmit CQ bound with FI_TRANSMIT|`txflags`, the AV given
 * (may be NULL for MSG). */
struct xf_ep {
	struct fid_ep *ep;
	struct fid_cq *txcq, *rxcq;
};

static inline void xf_open_ep(struct xf_ep *x, struct fi_info *info, struct fid_av *av, enum fi_cq_format format,
			      uint64_t txflags)
{
	struct fi_cq_attr ca = { .format = format, .wait_obj = FI_WAIT_NONE, .size = 1024 };
	int rc;
	memset(x, 0, sizeof(*x));
	if ((rc = fi_cq_open(ft_domain, &ca, &x->txcq, NULL)) || (rc = fi_cq_open(ft_domain, &ca, &x->rxcq, NULL)))
		ft_die("fi_cq_open: %s", fi_strerror(-rc));
	if ((rc = fi_endpoint(ft_domain, info, &x->ep, NULL)))
		ft_die("fi_endpoint: %s", fi_strerror(-rc));
	if ((rc = fi_ep_bind(x->ep, &x->txcq->fid, FI_TRANSMIT | txflags)) ||
	    (rc = fi_ep_bind(x->ep, &x->rxcq->fid, FI_RECV)))
		ft_die("fi_ep_bind(cq): %s", fi_strerror(-rc));
	if (av && (rc = fi_ep_bind(x->ep, &av->fid, 0)))
		ft_die("fi_ep_bind(av): %s", fi_strerror(-rc));
	if ((rc = fi_enable(x->ep)))
		ft_die("fi_enable: %s", fi_strerror(-rc));
}

static inline void xf_close_ep(struct xf_ep *x)
{
	if (x->ep)
		fi_close(&x->ep->fid);
	if (x->txcq)
		fi_close(&x->txcq->fid);
	if (x->rxcq)
		fi_close(&x->rxcq->fid);
	memset(x, 0, sizeof(*x));
}

/* Whether `cq` stays empty (no entry, no error) for `secs` seconds while
 * progress is driven on it and on `other` (may be NULL). A negative check
 * can only be bounded, never proven; keep `secs` short. */
static inline int xf_cq_quiet(struct fid_cq *cq, struct fid_cq *other, double secs)
{
	double end = ft_now() + secs;
	char e[128];
	while (ft_now() < end) {
		ssize_t n = fi_cq_read(cq, e, 1);
		if (n == 1 || n == -FI_EAVAIL)
			return 0;
		if (other)
			(void) fi_cq_read(other, NULL, 0);
	}
	return 1;
}

/* Reads one completion that must be a success; like ft_cq_ok, but on an
 * error completion records a failed check and returns 0 instead of dying. */
static inline int xf_cq_get(struct fid_cq *cq, void *entry, const char *what)
{
	struct fi_cq_err_entry err;
	int n = ft_cq_wait(cq, entry, &err, NULL);
	FT_CHECK(n == 1, "%s: error completion %s (olen %zu)", what, fi_strerror(err.err), err.olen);
	return n == 1;
}

/* Pattern cut at any offset: byte j of the window at `off` is the same as
 * byte off+j of one long pattern, so message i can be the window at a
 * distinct offset without a buffer per message. */
static inline void xf_fill_at(void *buf, size_t size, size_t off)
{
	unsigned char *p = buf;
	for (size_t i = 0; i < size; i++)
		p[i] = (unsigned char) ((off + i) * 131 + ((off + i) >> 8) * 7 + 3);
}

/* The first index differing from xf_fill_at(.., off), or -1. */
static inline long xf_verify_at(const void *buf, size_t size, size_t off)
{
	const unsigned char *p = buf;
	for (size_t i = 0; i < size; i++)
		if (p[i] != (unsigned char) ((off + i) * 131 + ((off + i) >> 8) * 7 + 3))
			return (long) i;
	return -1;
}

/* The flags a test looks at (others, e.g. provider-internal ones, are
 * allowed but ignored). */
#define XF_OPFLAGS (FI_SEND | FI_RECV | FI_MSG | FI_TAGGED | FI_REMOTE_CQ_DATA | FI_MULTI_RECV)

#endif
