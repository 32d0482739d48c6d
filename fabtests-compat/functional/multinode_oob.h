/*
 * -E for the multinode programs (fi_multinode, fi_multinode_coll): every
 * rank learns every rank's endpoint name out of band, for providers whose
 * addresses no port predicts (FI_ADDR_STR: shm's names are made up when
 * an endpoint opens). shared.h's -E serves one server's name to clients;
 * here rank 0 gathers all names and hands the whole table back.
 *
 * Protocol, over TCP on the base port (BASEPORT) of 127.0.0.1 (or -s),
 * integers as 4 bytes in host order (both ends are on one machine):
 *   rank k > 0  connects (retrying while nothing listens), sends its rank
 *               and its name's length, then the name, and reads NPROCS
 *               entries back: a length, then that many bytes, in rank
 *               order;
 *   rank 0      listens, accepts one report from each other rank but the
 *               absent one, and once it has them all answers every
 *               connection with the table.
 * The absent rank's entry (a rank that never starts, fi_multinode -m) is
 * whatever the caller put there before the call; it is sent like any
 * other.
 *
 * Bounds: at most OOB_MAXN ranks, names of at most OOB_NAMELEN bytes;
 * a report from a rank out of range, the absent one or one already heard
 * is refused. Every connect, accept and receive gives up after
 * FT_TIMEOUT seconds, and every failure ends the program (ft_die) naming
 * the step. The exchange only learns names: the endpoints it names may
 * not all be open yet when it ends on another rank, and a program must
 * not assume otherwise.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_FT_MULTINODE_OOB_H
#define OXI_FT_MULTINODE_OOB_H

#include "shared.h"

#define OOB_MAXN 16
#define OOB_NAMELEN 256

/* Every rank's endpoint name, index the rank. */
struct oob_names {
	char name[OOB_MAXN][OOB_NAMELEN];
	uint32_t len[OOB_MAXN];
};

/* Takes -E from shared.h, whose ft_open_ep would otherwise serve this
 * rank's name as a server does: a multinode program calls this after
 * ft_setup (which -E kept from naming a node or service) and before
 * ft_open_ep, and gathers the names itself. Returns whether -E was given. */
static inline int oob_claim(void)
{
	int on = ft_opts.oob;
	ft_opts.oob = 0;
	return on;
}

/* Exact-length socket I/O for the exchange; dies on a short transfer. */
static inline void oob_io(int s, void *p, size_t n, int out, const char *what)
{
	ssize_t r = out ? send(s, p, n, MSG_NOSIGNAL) : recv(s, p, n, MSG_WAITALL);
	if (r != (ssize_t) n)
		ft_die("-E: %s: %s", what, r < 0 ? strerror(errno) : "short transfer (peer gone or timeout)");
}

/*
 * The exchange (see the top): fills t with every rank's name, this rank's
 * from fi_getname on `ep`. `base` is the base port, `absent` a rank that
 * never reports (-1: none; never 0).
 */
static inline void oob_gather_names(struct fid_ep *ep, int nprocs, int rank, int base, int absent,
				    struct oob_names *t)
{
	struct sockaddr_in a = ft_oob_sockaddr(ft_opts.src_addr ? ft_opts.src_addr : "127.0.0.1", "0");
	struct timeval tv = { .tv_sec = (time_t) FT_TIMEOUT };
	size_t len = OOB_NAMELEN;
	unsigned heard = 0;
	int rc, s, one = 1, conns[OOB_MAXN], nconn = 0;
	if (nprocs > OOB_MAXN || absent == 0)
		ft_die("-E: %d ranks (at most %d), absent rank %d", nprocs, OOB_MAXN, absent);
	a.sin_port = htons((uint16_t) base);
	if ((rc = fi_getname(&ep->fid, t->name[rank], &len)))
		ft_die("fi_getname: %s", fi_strerror(-rc));
	t->len[rank] = (uint32_t) len;
	if (rank != 0) {
		uint32_t me[2] = { (uint32_t) rank, t->len[rank] };
		s = ft_oob_connect(a);
		oob_io(s, me, sizeof(me), 1, "sending this rank's name");
		oob_io(s, t->name[rank], t->len[rank], 1, "sending this rank's name");
		for (int k = 0; k < nprocs; k++) {
			oob_io(s, &t->len[k], 4, 0, "receiving the names");
			if (t->len[k] > OOB_NAMELEN)
				ft_die("-E: name of rank %d is %u bytes", k, t->len[k]);
			oob_io(s, t->name[k], t->len[k], 0, "receiving the names");
		}
		close(s);
		return;
	}
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)); /* bounds accept too */
	if (l < 0 || bind(l, (struct sockaddr *) &a, sizeof(a)) || listen(l, OOB_MAXN))
		ft_die("-E: listen on port %u: %s", ntohs(a.sin_port), strerror(errno));
	for (int k = 1; k < nprocs; k++) {
		uint32_t hdr[2];
		int c;
		if (k == absent)
			continue;
		if ((c = accept(l, NULL, NULL)) < 0)
			ft_die("-E: only %d of the other ranks reported within %.0f s", nconn, FT_TIMEOUT);
		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		oob_io(c, hdr, sizeof(hdr), 0, "receiving a rank's name");
		if (hdr[0] == 0 || hdr[0] >= (uint32_t) nprocs || (int) hdr[0] == absent || (heard >> hdr[0] & 1) ||
		    hdr[1] > OOB_NAMELEN)
			ft_die("-E: bad report (rank %u, %u bytes)", hdr[0], hdr[1]);
		heard |= 1u << hdr[0];
		oob_io(c, t->name[hdr[0]], hdr[1], 0, "receiving a rank's name");
		t->len[hdr[0]] = hdr[1];
		conns[nconn++] = c;
	}
	close(l);
	for (int i = 0; i < nconn; i++) {
		for (int k = 0; k < nprocs; k++) {
			oob_io(conns[i], &t->len[k], 4, 1, "sending the names");
			oob_io(conns[i], t->name[k], t->len[k], 1, "sending the names");
		}
		close(conns[i]);
	}
}

/* -E with a missing rank, rank 0: a stale name at the missing rank's
 * place, that of an endpoint of ours opened and closed (sends to it must
 * fail in bounded time, as to a peer that is gone). */
static inline void oob_stale_name(struct oob_names *t, int missing)
{
	struct fid_ep *gone;
	size_t len = OOB_NAMELEN;
	int rc;
	if ((rc = fi_endpoint(ft_domain, ft_info, &gone, NULL)) || (rc = fi_ep_bind(gone, &ft_txcq->fid, FI_TRANSMIT)) ||
	    (rc = fi_ep_bind(gone, &ft_rxcq->fid, FI_RECV)) || (rc = fi_ep_bind(gone, &ft_av->fid, 0)) ||
	    (rc = fi_enable(gone)) || (rc = fi_getname(&gone->fid, t->name[missing], &len)))
		ft_die("-E: the stale endpoint for missing rank %d: %s", missing, fi_strerror(-rc));
	t->len[missing] = (uint32_t) len;
	fi_close(&gone->fid);
}

/* Inserts the names into ft_av one at a time, in rank order, rank k's
 * fi_addr into fa[k]; dies if an insert fails. */
static inline void oob_insert_names(const struct oob_names *t, int nprocs, fi_addr_t *fa)
{
	int rc;
	for (int k = 0; k < nprocs; k++)
		if ((rc = fi_av_insert(ft_av, t->name[k], 1, &fa[k], 0, NULL)) != 1)
			ft_die("fi_av_insert(rank %d, %.*s) = %d", k, (int) t->len[k], t->name[k], rc);
}

#endif
