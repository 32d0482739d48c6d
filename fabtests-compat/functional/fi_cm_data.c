/*
 * fi_cm_data: connection management of FI_EP_MSG endpoints (fi_cm(3),
 * fi_endpoint(3)), one connection after another on one listener:
 *
 *  1. FI_OPT_CM_DATA_SIZE is readable on the passive endpoint (server) and
 *     on unconnected and accepted active endpoints, and the values agree.
 *  2. fi_connect carries private data of every size 0..CM_DATA_SIZE: the
 *     server's FI_CONNREQ entry holds exactly those bytes (the read returns
 *     sizeof(struct fi_eq_cm_entry) + size), its fid is the passive
 *     endpoint and info->handle is set; fi_accept's private data (the
 *     complementary size) arrives in the client's FI_CONNECTED entry.
 *  3. Private data above CM_DATA_SIZE is refused by fi_connect, fi_accept
 *     and fi_reject with -FI_EINVAL (upstream's sockets and tcp providers
 *     do so; fi_cm(3) speaks of silent truncation, see the report), and the
 *     refused calls leave the request usable: the same request is then
 *     accepted normally.
 *  4. fi_getname/fi_getpeer agree across the connection (client's peer ==
 *     server's name and vice versa; both sides check, exchanging their
 *     addresses as messages), and the client's peer has the port of the
 *     server's passive endpoint.
 *  5. fi_shutdown by the server gives the client FI_SHUTDOWN for its
 *     endpoint.
 *  6. fi_reject with private data: the client gets an EQ error entry with
 *     err FI_ECONNREFUSED, fid its endpoint and the reject data in
 *     err_data/err_data_size, both with the provider's buffer
 *     (err_data_size 0 on input) and with the caller's buffer.
 *  7. A connection after the rejects succeeds, carries a message, and
 *     fi_shutdown by the client gives the server FI_SHUTDOWN.
 *
 * Each client connection uses its own endpoint and EQ, and each accepted
 * endpoint its own EQ, so no event of an earlier connection can be taken
 * for one of a later one.
 *
 * -r (rounds, as upstream's fi_cm_data runs): for private data of 1, 2,
 * 4, ... bytes and finally FI_OPT_CM_DATA_SIZE bytes, one round each:
 * the client connects with that many bytes; the server reads FI_CONNREQ
 * with fi_eq_sread into a buffer sized exactly for the entry plus the
 * data and must get that exact byte count, then rejects with data of the
 * same size; the client reads the FI_REJECT error (FI_ECONNREFUSED) with
 * the data into its own buffer, opens a fresh endpoint and connects
 * again; the server accepts with data of that size; the client's
 * FI_CONNECTED read (exactly sized too) carries it; the server shuts the
 * connection down and the client sees FI_SHUTDOWN. All events of a side
 * go to its one EQ, as in most programs. At the end the client
 * checks that fi_connect with FI_OPT_CM_DATA_SIZE + 1 bytes is
 * -FI_EINVAL. The checks above (1-7) are not run with -r.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* An EQ event with room for private data. */
struct cm_event {
	struct fi_eq_cm_entry e;
	unsigned char data[4096];
};

/* One connection's objects. */
struct conn {
	struct fid_ep *ep;
	struct fid_eq *eq;
	struct fi_info *info; /* server: the FI_CONNREQ's info */
};

static size_t cm_size; /* FI_OPT_CM_DATA_SIZE of this side */
/* -R: skip the oversized fi_accept and fi_reject (upstream 1.17's sockets
 * and tcp copy reject data into a CM_DATA_SIZE buffer unchecked, so that
 * corrupts memory there, and upstream tcp's fi_accept takes oversized
 * data); this option lets the rest of the test run against upstream. */
static int skip_oversized_reject;
static int rounds_mode; /* -r */

static void extra_opt(int opt, const char *arg)
{
	(void) arg;
	if (opt == 'R')
		skip_oversized_reject = 1;
	else if (opt == 'r')
		rounds_mode = 1;
}

static size_t getopt_cm_size(struct fid *fid, const char *what)
{
	size_t v = 0, len = sizeof(v);
	int rc = fi_getopt(fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v, &len);
	if (rc)
		ft_die("fi_getopt(%s, FI_OPT_CM_DATA_SIZE): %s", what, fi_strerror(-rc));
	FT_CHECK(len == sizeof(size_t), "fi_getopt(%s) optlen %zu, want %zu", what, len, sizeof(size_t));
	return v;
}

/* Opens an active endpoint on `info` bound to the shared CQs and a fresh
 * EQ of its own (with -r: the one EQ of the program, ft_eq, which the
 * server's passive endpoint uses too, as most programs do), and enables
 * it. */
static void conn_open(struct conn *c, struct fi_info *info)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	int rc;
	if (rounds_mode)
		c->eq = ft_eq;
	else if ((rc = fi_eq_open(ft_fabric, &eqa, &c->eq, NULL)))
		ft_die("fi_eq_open: %s", fi_strerror(-rc));
	if ((rc = fi_endpoint(ft_domain, info, &c->ep, NULL)))
		ft_die("fi_endpoint: %s", fi_strerror(-rc));
	if ((rc = fi_ep_bind(c->ep, &ft_txcq->fid, FI_TRANSMIT)) || (rc = fi_ep_bind(c->ep, &ft_rxcq->fid, FI_RECV)) ||
	    (rc = fi_ep_bind(c->ep, &c->eq->fid, 0)))
		ft_die("fi_ep_bind: %s", fi_strerror(-rc));
	if ((rc = fi_enable(c->ep)))
		ft_die("fi_enable: %s", fi_strerror(-rc));
}

static void conn_close(struct conn *c)
{
	if (c->ep)
		fi_close(&c->ep->fid);
	if (c->eq && c->eq != ft_eq)
		fi_close(&c->eq->fid);
	if (c->info)
		fi_freeinfo(c->info);
	memset(c, 0, sizeof(*c));
}

/* Reads one event of `eq`, bounded; returns the byte count of fi_eq_sread
 * or -FI_EAVAIL with `err` filled by fi_eq_readerr (its err_data buffer
 * and size as the caller set them). */
static ssize_t eq_read(struct fid_eq *eq, uint32_t *event, struct cm_event *ev, struct fi_eq_err_entry *err,
		       const char *what)
{
	double end = ft_now() + FT_TIMEOUT;
	while (ft_now() < end) {
		ssize_t n = fi_eq_sread(eq, event, ev, sizeof(*ev), 20, 0);
		/* Providers with manual progress may need the CQs driven. */
		(void) fi_cq_read(ft_txcq, NULL, 0);
		(void) fi_cq_read(ft_rxcq, NULL, 0);
		if (n >= 0)
			return n;
		if (n == -FI_EAVAIL) {
			ssize_t r = fi_eq_readerr(eq, err, 0);
			if (r < 0)
				ft_die("fi_eq_readerr (%s): %s", what, fi_strerror((int) -r));
			return -FI_EAVAIL;
		}
		if (n != -FI_EAGAIN && n != -FI_ETIMEDOUT)
			ft_die("fi_eq_sread (%s): %s", what, fi_strerror((int) -n));
	}
	ft_die("no EQ event within %.0f s (%s)", FT_TIMEOUT, what);
	return 0;
}

static const char *event_name(uint32_t ev)
{
	switch (ev) {
	case FI_CONNREQ: return "FI_CONNREQ";
	case FI_CONNECTED: return "FI_CONNECTED";
	case FI_SHUTDOWN: return "FI_SHUTDOWN";
	default: return "other";
	}
}

/* Waits for `want` on `eq` (an error entry or another event is fatal) and
 * returns the private data length (bytes beyond the cm entry). */
static size_t eq_expect(struct fid_eq *eq, uint32_t want, struct cm_event *ev, const char *what)
{
	struct fi_eq_err_entry err;
	uint32_t event = 0;
	ssize_t n;
	memset(&err, 0, sizeof(err));
	n = eq_read(eq, &event, ev, &err, what);
	if (n == -FI_EAVAIL)
		ft_die("%s: EQ error %d (%s), prov_errno %d, want %s", what, err.err, fi_strerror(err.err),
		       err.prov_errno, event_name(want));
	if (event != want)
		ft_die("%s: EQ event %s (%u), want %s", what, event_name(event), event, event_name(want));
	if ((size_t) n < sizeof(struct fi_eq_cm_entry))
		ft_die("%s: %s read returned %zd bytes, less than a cm entry", what, event_name(want), n);
	return (size_t) n - sizeof(struct fi_eq_cm_entry);
}

/* Server: waits for a connection request; checks the entry and returns
 * the private data length. */
static size_t wait_connreq(struct cm_event *ev, const char *what)
{
	size_t len = eq_expect(ft_eq, FI_CONNREQ, ev, what);
	FT_CHECK(ev->e.fid == &ft_pep->fid, "%s: FI_CONNREQ fid %p, want the passive endpoint %p", what,
		 (void *) ev->e.fid, (void *) &ft_pep->fid);
	if (!ev->e.info)
		ft_die("%s: FI_CONNREQ without info", what);
	FT_CHECK(ev->e.info->handle != NULL, "%s: FI_CONNREQ info->handle is NULL", what);
	return len;
}

/* Server: accepts the request in `ev` with `len` bytes of data `seq`,
 * after checking that too much data is refused, and waits for
 * FI_CONNECTED. */
static void server_accept(struct conn *c, struct cm_event *ev, size_t len, unsigned seq, int try_oversize)
{
	unsigned char data[4096];
	struct cm_event cev;
	size_t n;
	int rc;
	c->info = ev->e.info;
	conn_open(c, c->info);
	if (getopt_cm_size(&c->ep->fid, "accepted endpoint") != cm_size)
		FT_CHECK(0, "accepted endpoint's CM_DATA_SIZE differs from the passive endpoint's %zu", cm_size);
	if (try_oversize && !skip_oversized_reject) {
		ft_fill(data, cm_size + 1, 9999);
		FT_RC(fi_accept(c->ep, data, cm_size + 1), -FI_EINVAL);
	}
	ft_fill(data, len, seq);
	if ((rc = fi_accept(c->ep, data, len)))
		ft_die("fi_accept(%zu bytes): %s", len, fi_strerror(-rc));
	n = eq_expect(c->eq, FI_CONNECTED, &cev, "server FI_CONNECTED");
	FT_CHECK(cev.e.fid == &c->ep->fid, "server FI_CONNECTED fid %p, want the endpoint %p", (void *) cev.e.fid,
		 (void *) &c->ep->fid);
	(void) n; /* data on the accepting side's FI_CONNECTED is not defined */
}

/* Client: connects a fresh endpoint with `len` bytes of data `seq`;
 * returns the private data length of FI_CONNECTED (data in `ev`), or
 * -FI_EAVAIL with `err` filled when the EQ reports an error. */
static ssize_t client_connect(struct conn *c, size_t len, unsigned seq, struct cm_event *ev,
			      struct fi_eq_err_entry *err)
{
	unsigned char data[4096];
	uint32_t event = 0;
	ssize_t n;
	int rc;
	conn_open(c, ft_info);
	ft_fill(data, len, seq);
	if ((rc = fi_connect(c->ep, ft_info->dest_addr, data, len)))
		ft_die("fi_connect(%zu bytes): %s", len, fi_strerror(-rc));
	n = eq_read(c->eq, &event, ev, err, "client connect");
	if (n == -FI_EAVAIL)
		return n;
	if (event != FI_CONNECTED)
		ft_die("connect with %zu bytes: EQ event %s (%u), want FI_CONNECTED", len, event_name(event), event);
	FT_CHECK(ev->e.fid == &c->ep->fid, "FI_CONNECTED fid %p, want the endpoint %p", (void *) ev->e.fid,
		 (void *) &c->ep->fid);
	return n - (ssize_t) sizeof(struct fi_eq_cm_entry);
}

/* Private data sizes of phase 2: the client sends `n`, the server answers
 * with cm_size - n. */
static void check_data(const unsigned char *data, size_t got, size_t want, unsigned seq, const char *what)
{
	long bad;
	FT_CHECK(got == want, "%s: %zu bytes of private data, want %zu", what, got, want);
	if (got != want)
		return;
	bad = ft_verify(data, want, seq);
	FT_CHECK(bad < 0, "%s: private data byte %ld of %zu differs", what, bad, want);
}

/* Sends one message on `ep` and waits for its completion. */
static void send_msg(struct fid_ep *ep, const void *buf, size_t len, const char *what)
{
	struct fi_cq_msg_entry e;
	FT_POST(fi_send(ep, buf, len, NULL, 0, NULL), what);
	ft_cq_ok(ft_txcq, &e, what);
}

/* Receives one message of up to `cap` bytes on `ep`; returns its length. */
static size_t recv_msg(struct fid_ep *ep, void *buf, size_t cap, const char *what)
{
	struct fi_cq_msg_entry e;
	FT_POST(fi_recv(ep, buf, cap, NULL, 0, NULL), what);
	ft_cq_ok(ft_rxcq, &e, what);
	return e.len;
}

/* An endpoint address as "family/address/port" (or "?" for others). */
static void addr_str(const void *addr, size_t len, char *out, size_t outlen)
{
	const struct sockaddr *sa = addr;
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (len >= sizeof(struct sockaddr_in) && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = addr;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (len >= sizeof(struct sockaddr_in6) && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = addr;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	snprintf(out, outlen, "%d/%s/%u", len >= sizeof(sa->sa_family) ? sa->sa_family : -1, host, port);
}

static unsigned addr_port(const void *addr)
{
	const struct sockaddr *sa = addr;
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *) addr)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *) addr)->sin6_port);
	return 0;
}

/* Both sides: exchanges "name|peer" strings over the connection and checks
 * that the peer's name is our peer and the peer's peer is our name. */
static void check_names(struct fid_ep *ep)
{
	char name[128], peer[128], mine[512], theirs[512], tname[256], tpeer[256];
	size_t nlen = sizeof(name), plen = sizeof(peer), got;
	int rc;
	memset(name, 0, sizeof(name));
	memset(peer, 0, sizeof(peer));
	if ((rc = fi_getname(&ep->fid, name, &nlen)))
		ft_die("fi_getname: %s", fi_strerror(-rc));
	if ((rc = fi_getpeer(ep, peer, &plen)))
		ft_die("fi_getpeer: %s", fi_strerror(-rc));
	addr_str(name, nlen, tname, sizeof(tname));
	addr_str(peer, plen, tpeer, sizeof(tpeer));
	snprintf(mine, sizeof(mine), "%s|%s", tname, tpeer);
	ft_log("name|peer: %s", mine);
	memset(theirs, 0, sizeof(theirs));
	if (ft_is_client()) {
		send_msg(ep, mine, strlen(mine) + 1, "send of name|peer");
		got = recv_msg(ep, theirs, sizeof(theirs) - 1, "receive of name|peer");
	} else {
		got = recv_msg(ep, theirs, sizeof(theirs) - 1, "receive of name|peer");
		send_msg(ep, mine, strlen(mine) + 1, "send of name|peer");
	}
	FT_CHECK(got == strlen(theirs) + 1, "name|peer message of %zu bytes", got);
	{
		char want[512];
		snprintf(want, sizeof(want), "%s|%s", tpeer, tname);
		FT_CHECK(!strcmp(theirs, want), "peer reports name|peer %s, want %s (our peer|our name)", theirs, want);
	}
	if (!ft_is_client()) {
		char pname[128];
		size_t pl = sizeof(pname);
		if ((rc = fi_getname(&ft_pep->fid, pname, &pl)))
			ft_die("fi_getname(pep): %s", fi_strerror(-rc));
		FT_CHECK(addr_port(pname) == addr_port(name),
			 "accepted endpoint's port %u differs from the passive endpoint's %u", addr_port(name),
			 addr_port(pname));
	}
}

/* Client: reads the reject's error entry and checks it. `own` selects the
 * caller's err_data buffer (else the provider's, err_data_size 0). */
static void check_reject(struct conn *c, ssize_t n, struct fi_eq_err_entry *err, unsigned char *buf, size_t want,
			 unsigned seq, int own)
{
	const char *what = own ? "reject (own err_data buffer)" : "reject (provider's err_data buffer)";
	FT_CHECK(n == -FI_EAVAIL, "%s: connect ended without an EQ error (read %zd)", what, n);
	if (n != -FI_EAVAIL)
		return;
	FT_CHECK(err->err == FI_ECONNREFUSED, "%s: err %d (%s), want FI_ECONNREFUSED", what, err->err,
		 fi_strerror(err->err));
	FT_CHECK(err->fid == &c->ep->fid, "%s: error entry fid %p, want the endpoint %p", what, (void *) err->fid,
		 (void *) &c->ep->fid);
	FT_CHECK(err->err_data_size == want, "%s: err_data_size %zu, want %zu", what, err->err_data_size, want);
	FT_CHECK(err->err_data != NULL, "%s: err_data is NULL", what);
	if (own)
		FT_CHECK(err->err_data == buf, "%s: err_data %p moved off the caller's buffer %p", what, err->err_data,
			 (void *) buf);
	if (err->err_data && err->err_data_size == want) {
		long bad = ft_verify(err->err_data, want, seq);
		FT_CHECK(bad < 0, "%s: reject data byte %ld differs", what, bad);
	}
}

static void run_client(void)
{
	struct cm_event ev;
	struct fi_eq_err_entry err;
	struct conn c = { 0 };
	unsigned char big[4096], errbuf[4096];
	char msg[64];
	ssize_t n;
	int rc;

	/* 1: the size on an unconnected active endpoint. */
	conn_open(&c, ft_info);
	cm_size = getopt_cm_size(&c.ep->fid, "active endpoint");
	conn_close(&c);
	ft_log("FI_OPT_CM_DATA_SIZE %zu", cm_size);
	if (cm_size == 0 || cm_size > 2048)
		ft_die("FI_OPT_CM_DATA_SIZE %zu is out of the testable range 1..2048", cm_size);

	/* 2: every size. */
	for (size_t len = 0; len <= cm_size; len++) {
		memset(&err, 0, sizeof(err));
		n = client_connect(&c, len, (unsigned) len, &ev, &err);
		if (n == -FI_EAVAIL)
			ft_die("connect with %zu bytes: EQ error %s", len, fi_strerror(err.err));
		check_data(ev.data, (size_t) n, cm_size - len, 1000 + (unsigned) len, "FI_CONNECTED");
		conn_close(&c);
	}
	ft_log("connected with private data of 0..%zu bytes", cm_size);

	/* 3: too much data on connect; then a connection the server first
	 * tries to accept with too much data. */
	conn_open(&c, ft_info);
	ft_fill(big, cm_size + 1, 7);
	FT_RC(fi_connect(c.ep, ft_info->dest_addr, big, cm_size + 1), -FI_EINVAL);
	conn_close(&c);
	memset(&err, 0, sizeof(err));
	n = client_connect(&c, 3, 3, &ev, &err);
	if (n == -FI_EAVAIL)
		ft_die("connect after the oversized one: EQ error %s", fi_strerror(err.err));
	check_data(ev.data, (size_t) n, cm_size, 2001, "FI_CONNECTED after an oversized fi_accept");

	/* 4 and 5. */
	check_names(c.ep);
	eq_expect(c.eq, FI_SHUTDOWN, &ev, "client waiting for the server's fi_shutdown");
	FT_CHECK(ev.e.fid == &c.ep->fid, "FI_SHUTDOWN fid %p, want the endpoint %p", (void *) ev.e.fid,
		 (void *) &c.ep->fid);
	conn_close(&c);

	/* 6: two rejects, the first read into the provider's buffer, the
	 * second into ours. */
	memset(&err, 0, sizeof(err));
	n = client_connect(&c, 5, 5, &ev, &err);
	check_reject(&c, n, &err, NULL, cm_size, 3001, 0);
	conn_close(&c);
	memset(&err, 0, sizeof(err));
	memset(errbuf, 0, sizeof(errbuf));
	err.err_data = errbuf;
	err.err_data_size = sizeof(errbuf);
	n = client_connect(&c, 6, 6, &ev, &err);
	check_reject(&c, n, &err, errbuf, 7, 3002, 1);
	conn_close(&c);
	ft_log("rejected twice with data");

	/* 7: a fresh connection after the rejects; the client shuts it down. */
	memset(&err, 0, sizeof(err));
	n = client_connect(&c, cm_size, 4000, &ev, &err);
	if (n == -FI_EAVAIL)
		ft_die("connect after the rejects: EQ error %s", fi_strerror(err.err));
	check_data(ev.data, (size_t) n, 0, 0, "FI_CONNECTED after the rejects");
	snprintf(msg, sizeof(msg), "after-reject");
	send_msg(c.ep, msg, strlen(msg) + 1, "send after the rejects");
	n = (ssize_t) recv_msg(c.ep, msg, sizeof(msg), "receive of the server's go-ahead");
	if ((rc = fi_shutdown(c.ep, 0)))
		FT_CHECK(0, "fi_shutdown: %s", fi_strerror(-rc));
	conn_close(&c);
}

static void run_server(void)
{
	struct cm_event ev;
	struct conn c = { 0 };
	unsigned char data[4096];
	char msg[64];
	size_t len;
	int rc;

	ft_listen();
	cm_size = getopt_cm_size(&ft_pep->fid, "passive endpoint");
	ft_log("FI_OPT_CM_DATA_SIZE %zu", cm_size);
	if (cm_size == 0 || cm_size > 2048)
		ft_die("FI_OPT_CM_DATA_SIZE %zu is out of the testable range 1..2048", cm_size);

	/* 2 */
	for (size_t want = 0; want <= cm_size; want++) {
		len = wait_connreq(&ev, "connection request with private data");
		check_data(ev.data, len, want, (unsigned) want, "FI_CONNREQ");
		server_accept(&c, &ev, cm_size - want, 1000 + (unsigned) want, 0);
		conn_close(&c);
	}

	/* 3: the request of 3 bytes is first accepted with too much data,
	 * then refused with too much data, then accepted. */
	len = wait_connreq(&ev, "request after the oversized connect");
	check_data(ev.data, len, 3, 3, "FI_CONNREQ after the oversized connect");
	ft_fill(data, cm_size + 1, 9998);
	if (!skip_oversized_reject)
		FT_RC(fi_reject(ft_pep, ev.e.info->handle, data, cm_size + 1), -FI_EINVAL);
	server_accept(&c, &ev, cm_size, 2001, 1);

	/* 4 and 5 */
	check_names(c.ep);
	if ((rc = fi_shutdown(c.ep, 0)))
		FT_CHECK(0, "fi_shutdown: %s", fi_strerror(-rc));
	conn_close(&c);

	/* 6 */
	len = wait_connreq(&ev, "request to reject (1)");
	check_data(ev.data, len, 5, 5, "FI_CONNREQ to reject (1)");
	ft_fill(data, cm_size, 3001);
	if ((rc = fi_reject(ft_pep, ev.e.info->handle, data, cm_size)))
		FT_CHECK(0, "fi_reject(%zu bytes): %s", cm_size, fi_strerror(-rc));
	fi_freeinfo(ev.e.info);
	len = wait_connreq(&ev, "request to reject (2)");
	check_data(ev.data, len, 6, 6, "FI_CONNREQ to reject (2)");
	ft_fill(data, 7, 3002);
	if ((rc = fi_reject(ft_pep, ev.e.info->handle, data, 7)))
		FT_CHECK(0, "fi_reject(7 bytes): %s", fi_strerror(-rc));
	fi_freeinfo(ev.e.info);

	/* 7 */
	len = wait_connreq(&ev, "request after the rejects");
	check_data(ev.data, len, cm_size, 4000, "FI_CONNREQ after the rejects");
	server_accept(&c, &ev, 0, 0, 0);
	memset(msg, 0, sizeof(msg));
	len = recv_msg(c.ep, msg, sizeof(msg), "receive after the rejects");
	FT_CHECK(len == strlen("after-reject") + 1 && !strcmp(msg, "after-reject"),
		 "message after the rejects: %zu bytes \"%.20s\"", len, msg);
	send_msg(c.ep, "go", 3, "send of the go-ahead");
	eq_expect(c.eq, FI_SHUTDOWN, &ev, "server waiting for the client's fi_shutdown");
	FT_CHECK(ev.e.fid == &c.ep->fid, "FI_SHUTDOWN fid %p, want the endpoint %p", (void *) ev.e.fid,
		 (void *) &c.ep->fid);
	conn_close(&c);
}

/* -r: reads one event of exactly `len` bytes (entry plus data) from
 * `eq`, bounded; returns fi_eq_sread's result (or -FI_EAVAIL with `err`
 * read by fi_eq_readerr into the caller's err_data buffer). */
static ssize_t eq_read_exact(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, struct fi_eq_err_entry *err,
			     const char *what)
{
	double end = ft_now() + FT_TIMEOUT;
	while (ft_now() < end) {
		ssize_t n = fi_eq_sread(eq, event, buf, len, 2000, 0);
		if (n >= 0)
			return n;
		if (n == -FI_EAVAIL) {
			ssize_t r = fi_eq_readerr(eq, err, 0);
			if (r < 0)
				ft_die("fi_eq_readerr (%s): %s", what, fi_strerror((int) -r));
			return -FI_EAVAIL;
		}
		if (n != -FI_EAGAIN && n != -FI_ETIMEDOUT)
			ft_die("fi_eq_sread (%s, %zu-byte buffer): %s", what, len, fi_strerror((int) -n));
	}
	ft_die("no EQ event within %.0f s (%s)", FT_TIMEOUT, what);
	return 0;
}

/* -r: the next round's size after `size` (0 when done). */
static size_t next_size(size_t size)
{
	if (size >= cm_size)
		return 0;
	return size * 2 < cm_size ? size * 2 : cm_size;
}

/* -r: waits for `want` into an exactly sized buffer and checks the byte
 * count and the data (pattern `seq`). An error entry is fatal. On the
 * server, FI_SHUTDOWN of an earlier connection (which shares the EQ) may
 * come before FI_CONNREQ and is passed over. */
static void expect_exact(struct fid_eq *eq, uint32_t want, struct cm_event *ev, size_t size, unsigned seq,
			 const char *what)
{
	struct fi_eq_err_entry err;
	uint32_t event = 0;
	ssize_t n;
	do {
		memset(&err, 0, sizeof(err));
		n = eq_read_exact(eq, &event, ev, sizeof(struct fi_eq_cm_entry) + size, &err, what);
		if (n == -FI_EAVAIL)
			ft_die("%s (%zu bytes): EQ error %d (%s), want %s", what, size, err.err, fi_strerror(err.err),
			       event_name(want));
	} while (want == FI_CONNREQ && event == FI_SHUTDOWN);
	if (event != want)
		ft_die("%s (%zu bytes): EQ event %s (%u), want %s", what, size, event_name(event), event,
		       event_name(want));
	FT_CHECK((size_t) n == sizeof(struct fi_eq_cm_entry) + size, "%s: fi_eq_sread returned %zd, want %zu (entry + %zu bytes)",
		 what, n, sizeof(struct fi_eq_cm_entry) + size, size);
	if ((size_t) n == sizeof(struct fi_eq_cm_entry) + size) {
		long bad = ft_verify(ev->data, size, seq);
		FT_CHECK(bad < 0, "%s (%zu bytes): private data byte %ld differs", what, size, bad);
	}
}

static void run_server_rounds(void)
{
	struct cm_event ev;
	struct conn c = { 0 };
	unsigned char data[4096];
	char what[96];
	int rc;

	ft_listen();
	cm_size = getopt_cm_size(&ft_pep->fid, "passive endpoint");
	if (cm_size == 0 || cm_size > 2048)
		ft_die("FI_OPT_CM_DATA_SIZE %zu is out of the testable range 1..2048", cm_size);
	for (size_t size = 1; size; size = next_size(size)) {
		snprintf(what, sizeof(what), "round %zu: FI_CONNREQ to reject", size);
		expect_exact(ft_eq, FI_CONNREQ, &ev, size, 100 + (unsigned) size, what);
		ft_fill(data, size, 200 + (unsigned) size);
		if ((rc = fi_reject(ft_pep, ev.e.info->handle, data, size)))
			ft_die("round %zu: fi_reject: %s", size, fi_strerror(-rc));
		fi_freeinfo(ev.e.info);
		snprintf(what, sizeof(what), "round %zu: FI_CONNREQ to accept", size);
		expect_exact(ft_eq, FI_CONNREQ, &ev, size, 300 + (unsigned) size, what);
		c.info = ev.e.info;
		conn_open(&c, c.info);
		ft_fill(data, size, 400 + (unsigned) size);
		if ((rc = fi_accept(c.ep, data, size)))
			ft_die("round %zu: fi_accept: %s", size, fi_strerror(-rc));
		snprintf(what, sizeof(what), "round %zu: server FI_CONNECTED", size);
		eq_expect(c.eq, FI_CONNECTED, &ev, what);
		if ((rc = fi_shutdown(c.ep, 0)))
			FT_CHECK(0, "round %zu: fi_shutdown: %s", size, fi_strerror(-rc));
		conn_close(&c);
		ft_log("round %zu done", size);
	}
}

static void run_client_rounds(void)
{
	struct cm_event ev;
	struct fi_eq_err_entry err;
	struct conn c = { 0 };
	unsigned char data[4096], errbuf[4096];
	char what[96];
	uint32_t event;
	ssize_t n;
	int rc;

	conn_open(&c, ft_info);
	cm_size = getopt_cm_size(&c.ep->fid, "active endpoint");
	conn_close(&c);
	if (cm_size == 0 || cm_size > 2048)
		ft_die("FI_OPT_CM_DATA_SIZE %zu is out of the testable range 1..2048", cm_size);
	for (size_t size = 1; size; size = next_size(size)) {
		conn_open(&c, ft_info);
		ft_fill(data, size, 100 + (unsigned) size);
		if ((rc = fi_connect(c.ep, ft_info->dest_addr, data, size)))
			ft_die("round %zu: fi_connect: %s", size, fi_strerror(-rc));
		memset(&err, 0, sizeof(err));
		memset(errbuf, 0, sizeof(errbuf));
		err.err_data = errbuf;
		err.err_data_size = size;
		event = 0;
		snprintf(what, sizeof(what), "round %zu: FI_REJECT", size);
		n = eq_read_exact(c.eq, &event, &ev, sizeof(struct fi_eq_cm_entry) + size, &err, what);
		if (n != -FI_EAVAIL)
			ft_die("%s: EQ event %s (%u), want an FI_ECONNREFUSED error entry", what, event_name(event), event);
		FT_CHECK(err.err == FI_ECONNREFUSED, "%s: err %d (%s), want FI_ECONNREFUSED", what, err.err,
			 fi_strerror(err.err));
		FT_CHECK(err.fid == &c.ep->fid, "%s: error entry fid %p, want the endpoint %p", what, (void *) err.fid,
			 (void *) &c.ep->fid);
		FT_CHECK(err.err_data_size == size, "%s: err_data_size %zu, want %zu", what, err.err_data_size, size);
		if (err.err_data && err.err_data_size == size) {
			long bad = ft_verify(err.err_data, size, 200 + (unsigned) size);
			FT_CHECK(bad < 0, "%s: reject data byte %ld differs", what, bad);
		} else {
			FT_CHECK(err.err_data != NULL, "%s: no reject data", what);
		}
		conn_close(&c);

		conn_open(&c, ft_info);
		ft_fill(data, size, 300 + (unsigned) size);
		if ((rc = fi_connect(c.ep, ft_info->dest_addr, data, size)))
			ft_die("round %zu: second fi_connect: %s", size, fi_strerror(-rc));
		snprintf(what, sizeof(what), "round %zu: client FI_CONNECTED", size);
		expect_exact(c.eq, FI_CONNECTED, &ev, size, 400 + (unsigned) size, what);
		snprintf(what, sizeof(what), "round %zu: client waiting for the server's fi_shutdown", size);
		eq_expect(c.eq, FI_SHUTDOWN, &ev, what);
		FT_CHECK(ev.e.fid == &c.ep->fid, "%s: FI_SHUTDOWN fid %p, want the endpoint %p", what,
			 (void *) ev.e.fid, (void *) &c.ep->fid);
		conn_close(&c);
		ft_log("round %zu done", size);
	}
	conn_open(&c, ft_info);
	ft_fill(data, cm_size + 1, 7);
	rc = fi_connect(c.ep, ft_info->dest_addr, data, cm_size + 1);
	FT_CHECK(rc == -FI_EINVAL, "fi_connect with FI_OPT_CM_DATA_SIZE + 1 = %zu bytes: %d (%s), want -FI_EINVAL",
		 cm_size + 1, rc, fi_strerror(-rc));
	conn_close(&c);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_args(argc, argv, "Rr", extra_opt);
	if (ft_ep_type != FI_EP_MSG)
		ft_die("fi_cm_data needs -e msg");
	hints = ft_hints(FI_MSG);
	if (rounds_mode)
		ft_require(hints, "msg endpoints");
	ft_setup(hints);
	ft_open_cqs(FI_CQ_FORMAT_MSG);
	if (rounds_mode && ft_is_client())
		run_client_rounds();
	else if (rounds_mode)
		run_server_rounds();
	else if (ft_is_client())
		run_client();
	else
		run_server();
	return ft_finish("fi_cm_data");
}
