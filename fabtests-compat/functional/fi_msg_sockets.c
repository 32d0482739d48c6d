/*
 * fi_msg_sockets: the addresses of FI_EP_MSG endpoints over sockets
 * (fi_endpoint(3), fi_cm(3)) at each step of their life.
 *
 *  Server: a passive endpoint opened from an fi_info whose src_addr names
 *  127.0.0.1 and the -B port reports that address, port included, from
 *  fi_getname right after fi_passive_ep, after fi_pep_bind and after
 *  fi_listen. The accepted endpoint reports the same port.
 *
 *  Client: an active endpoint opened from an fi_info whose src_addr names
 *  127.0.0.1 and a free port of its own (chosen by the program) reports
 *  that address, port included, right after fi_endpoint, after fi_ep_bind
 *  and after fi_enable, and still after the connection is up; fi_getpeer
 *  then names the server's port, and the server's fi_getpeer names the
 *  client's chosen port. A message each way checks the connection.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* Port of an AF_INET/AF_INET6 address (0 for anything else). */
static unsigned port_of(const void *addr)
{
	const struct sockaddr *sa = addr;
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *) addr)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *) addr)->sin6_port);
	return 0;
}

/* Checks that fi_getname of `fid` is the IPv4 address `want` (address
 * and port), naming the step in the failure. */
static void check_name(struct fid *fid, const struct sockaddr_in *want, const char *step)
{
	struct sockaddr_storage ss;
	size_t len = sizeof(ss);
	int rc;
	memset(&ss, 0, sizeof(ss));
	rc = fi_getname(fid, &ss, &len);
	FT_CHECK(rc == 0, "fi_getname %s: %s", step, fi_strerror(-rc));
	if (rc)
		return;
	const struct sockaddr_in *in = (const struct sockaddr_in *) &ss;
	FT_CHECK(ss.ss_family == AF_INET && in->sin_port == want->sin_port &&
			 in->sin_addr.s_addr == want->sin_addr.s_addr,
		 "fi_getname %s: family %d port %u address %#x, want the src_addr's port %u address %#x", step,
		 ss.ss_family, port_of(&ss), ntohl(in->sin_addr.s_addr), ntohs(want->sin_port),
		 ntohl(want->sin_addr.s_addr));
	ft_log("fi_getname %s: port %u", step, port_of(&ss));
}

/* A port no socket holds right now (bound and released). */
static unsigned free_port(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t len = sizeof(in);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *) &in, sizeof(in)) || getsockname(s, (struct sockaddr *) &in, &len))
		ft_die("no free port");
	close(s);
	return ntohs(in.sin_port);
}

static void exchange_message(void)
{
	char buf[32];
	struct fi_cq_msg_entry e;
	const char *mine = ft_is_client() ? "from-client" : "from-server";
	const char *theirs = ft_is_client() ? "from-server" : "from-client";
	memset(buf, 0, sizeof(buf));
	FT_POST(fi_recv(ft_ep, buf, sizeof(buf), NULL, 0, buf), "fi_recv");
	FT_POST(fi_send(ft_ep, mine, strlen(mine) + 1, NULL, 0, NULL), "fi_send");
	ft_cq_ok(ft_txcq, &e, "send");
	ft_cq_ok(ft_rxcq, &e, "receive");
	FT_CHECK(!strcmp(buf, theirs), "message \"%.31s\", want \"%s\"", buf, theirs);
}

static void run_server(void)
{
	const struct sockaddr_in *src = ft_info->src_addr;
	struct fi_eq_cm_entry cm;
	struct sockaddr_storage peer;
	size_t plen = sizeof(peer);
	char port[16];
	int rc;

	if (!src || ft_info->src_addrlen < sizeof(*src) || src->sin_family != AF_INET)
		ft_die("fi_getinfo gave no IPv4 src_addr");
	FT_CHECK(port_of(src) == (unsigned) atoi(ft_opts.src_port), "fi_info src_addr port %u, want -B %s",
		 port_of(src), ft_opts.src_port);
	if ((rc = fi_passive_ep(ft_fabric, ft_info, &ft_pep, NULL)))
		ft_die("fi_passive_ep: %s", fi_strerror(-rc));
	check_name(&ft_pep->fid, src, "of the passive endpoint after fi_passive_ep");
	if ((rc = fi_pep_bind(ft_pep, &ft_eq->fid, 0)))
		ft_die("fi_pep_bind: %s", fi_strerror(-rc));
	check_name(&ft_pep->fid, src, "of the passive endpoint after fi_pep_bind");
	if ((rc = fi_listen(ft_pep)))
		ft_die("fi_listen: %s", fi_strerror(-rc));
	check_name(&ft_pep->fid, src, "of the passive endpoint after fi_listen");

	ft_eq_expect(FI_CONNREQ, &cm, sizeof(cm));
	ft_conn_info = cm.info;
	ft_open_ep(ft_conn_info);
	if ((rc = fi_accept(ft_ep, NULL, 0)))
		ft_die("fi_accept: %s", fi_strerror(-rc));
	ft_eq_expect(FI_CONNECTED, &cm, sizeof(cm));
	{
		struct sockaddr_storage me;
		size_t len = sizeof(me);
		FT_RC(fi_getname(&ft_ep->fid, &me, &len), 0);
		FT_CHECK(port_of(&me) == port_of(src), "accepted endpoint's port %u, want the listener's %u",
			 port_of(&me), port_of(src));
	}
	/* The client's chosen port comes first as a message. */
	memset(port, 0, sizeof(port));
	{
		struct fi_cq_msg_entry e;
		FT_POST(fi_recv(ft_ep, port, sizeof(port) - 1, NULL, 0, NULL), "fi_recv(port)");
		ft_cq_ok(ft_rxcq, &e, "receive of the client's port");
	}
	FT_RC(fi_getpeer(ft_ep, &peer, &plen), 0);
	FT_CHECK(port_of(&peer) == (unsigned) atoi(port), "server's fi_getpeer port %u, want the client's src port %s",
		 port_of(&peer), port);
	exchange_message();
}

static void run_client(void)
{
	struct fi_info *hints, *info = NULL;
	struct sockaddr_in want;
	struct sockaddr_storage peer;
	struct fi_eq_cm_entry cm;
	size_t plen = sizeof(peer);
	char port[16];
	int rc;

	/* ft_info leads to the server; a second fi_getinfo, FI_SOURCE with
	 * a port of our own, gives the endpoint's fi_info. */
	hints = ft_hints(FI_MSG);
	snprintf(port, sizeof(port), "%u", free_port());
	rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", port, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	if (rc)
		ft_die("fi_getinfo(127.0.0.1, %s, FI_SOURCE): %s", port, fi_strerror(-rc));
	if (!info->src_addr || info->src_addrlen < sizeof(want) ||
	    ((struct sockaddr *) info->src_addr)->sa_family != AF_INET)
		ft_die("fi_getinfo gave no IPv4 src_addr");
	memcpy(&want, info->src_addr, sizeof(want));
	FT_CHECK(port_of(&want) == (unsigned) atoi(port), "fi_info src_addr port %u, want %s", port_of(&want), port);

	if ((rc = fi_endpoint(ft_domain, info, &ft_ep, NULL)))
		ft_die("fi_endpoint: %s", fi_strerror(-rc));
	check_name(&ft_ep->fid, &want, "after fi_endpoint");
	if ((rc = fi_ep_bind(ft_ep, &ft_txcq->fid, FI_TRANSMIT)) || (rc = fi_ep_bind(ft_ep, &ft_rxcq->fid, FI_RECV)) ||
	    (rc = fi_ep_bind(ft_ep, &ft_eq->fid, 0)))
		ft_die("fi_ep_bind: %s", fi_strerror(-rc));
	check_name(&ft_ep->fid, &want, "after fi_ep_bind");
	if ((rc = fi_enable(ft_ep)))
		ft_die("fi_enable: %s", fi_strerror(-rc));
	check_name(&ft_ep->fid, &want, "after fi_enable");
	if ((rc = fi_connect(ft_ep, ft_info->dest_addr, NULL, 0)))
		ft_die("fi_connect: %s", fi_strerror(-rc));
	ft_eq_expect(FI_CONNECTED, &cm, sizeof(cm));
	check_name(&ft_ep->fid, &want, "after FI_CONNECTED");
	FT_RC(fi_getpeer(ft_ep, &peer, &plen), 0);
	FT_CHECK(port_of(&peer) == port_of(ft_info->dest_addr), "client's fi_getpeer port %u, want the server's %u",
		 port_of(&peer), port_of(ft_info->dest_addr));
	{
		struct fi_cq_msg_entry e;
		FT_POST(fi_send(ft_ep, port, strlen(port) + 1, NULL, 0, NULL), "fi_send(port)");
		ft_cq_ok(ft_txcq, &e, "send of the port");
	}
	exchange_message();
	fi_freeinfo(info);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_args(argc, argv, NULL, NULL);
	if (ft_ep_type != FI_EP_MSG)
		ft_die("fi_msg_sockets needs -e msg");
	hints = ft_hints(FI_MSG);
	ft_require(hints, "msg endpoints");
	ft_setup(hints);
	ft_open_cqs(FI_CQ_FORMAT_MSG);
	if (ft_is_client())
		run_client();
	else
		run_server();
	return ft_finish("fi_msg_sockets");
}
