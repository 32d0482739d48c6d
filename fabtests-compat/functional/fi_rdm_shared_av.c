/*
 * fi_rdm_shared_av: a named, shared AV (fi_av(3): name, FI_READ,
 * map_addr) used by two processes on one host with RDM endpoints.
 *
 * The server creates an FI_AV_TABLE AV named after its -B port
 * ("/fi_rdm_shared_av.PORT"), inserts its own endpoint's address (index
 * 0), and enables its endpoint. The client opens the AV by that name with
 * FI_READ (an AV that must exist: a name that does not exist is refused),
 * checks that fi_av_lookup of index 0 gives the server's address, and
 * sends its name to fi_addr 0 without inserting anything. The server
 * inserts the client's address into the shared AV (index 1) and answers
 * through it; the client then sees its own address at index 1 of its
 * read-only view and answers to fi_addr 0 again. -I messages each way
 * follow, payloads checked. The server opens the AV with map_addr 0, so
 * the provider reports the map_addr it uses (fi_av(3)), and sends that
 * value; the client opens the AV a second time (FI_READ) with that
 * map_addr and finds both addresses at the same fi_addr values there.
 *
 * A provider without FI_SHARED_AV makes the program print "SKIP: ..." and
 * exit 77.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <arpa/inet.h>
#include <netinet/in.h>

#define MAGIC 0x73686176u

struct msg {
	uint32_t magic, seq;
	uint64_t map_addr, server_fa, client_fa;
	unsigned char payload[256];
	unsigned char name[128];
	uint32_t namelen;
};

static const enum fi_av_type av_type = FI_AV_TABLE;
static char av_name[64];

static unsigned port_of(const void *addr)
{
	const struct sockaddr *sa = addr;
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *) addr)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *) addr)->sin6_port);
	return 0;
}

static void send_msg(struct msg *m, fi_addr_t dest, const char *what)
{
	struct fi_cq_msg_entry e;
	FT_POST(fi_send(ft_ep, m, sizeof(*m), NULL, dest, m), what);
	ft_cq_ok(ft_txcq, &e, what);
}

static void recv_msg(struct msg *m, const char *what)
{
	struct fi_cq_msg_entry e;
	memset(m, 0, sizeof(*m));
	FT_POST(fi_recv(ft_ep, m, sizeof(*m), NULL, FI_ADDR_UNSPEC, m), what);
	ft_cq_ok(ft_rxcq, &e, what);
	FT_CHECK(e.len == sizeof(*m) && m->magic == MAGIC, "%s: %zu bytes, magic %#x", what, e.len, m->magic);
}

/* fi_av_lookup of `fa` must give an address with `port`. */
static void check_lookup(fi_addr_t fa, unsigned port, const char *what)
{
	struct sockaddr_storage ss;
	size_t len = sizeof(ss);
	int rc;
	memset(&ss, 0, sizeof(ss));
	rc = fi_av_lookup(ft_av, fa, &ss, &len);
	FT_CHECK(rc == 0, "%s: fi_av_lookup(%#llx): %s", what, (unsigned long long) fa, fi_strerror(-rc));
	if (!rc)
		FT_CHECK(port_of(&ss) == port, "%s: fi_av_lookup gives port %u, want %u", what, port_of(&ss), port);
}

static void traffic(fi_addr_t peer)
{
	struct msg m;
	for (int i = 0; i < ft_opts.iters; i++) {
		unsigned mine = 2 * (unsigned) i + (ft_is_client() ? 0 : 1);
		if (ft_is_client()) {
			memset(&m, 0, sizeof(m));
			m.magic = MAGIC;
			ft_fill(m.payload, sizeof(m.payload), mine);
			send_msg(&m, peer, "data send");
			recv_msg(&m, "data receive");
		} else {
			recv_msg(&m, "data receive");
			long bad = ft_verify(m.payload, sizeof(m.payload), mine ^ 1);
			FT_CHECK(bad < 0, "message %d: byte %ld differs", i, bad);
			memset(&m, 0, sizeof(m));
			m.magic = MAGIC;
			ft_fill(m.payload, sizeof(m.payload), mine);
			send_msg(&m, peer, "data send");
			continue;
		}
		long bad = ft_verify(m.payload, sizeof(m.payload), mine ^ 1);
		FT_CHECK(bad < 0, "message %d: byte %ld differs", i, bad);
	}
}

static void run_server(void)
{
	struct fi_av_attr aa = { .type = av_type, .count = 16, .name = av_name };
	struct msg m;
	fi_addr_t self, client;
	size_t len = sizeof(m.name);
	int rc;

	if ((rc = fi_av_open(ft_domain, &aa, &ft_av, NULL)))
		ft_die("fi_av_open(name %s): %s", av_name, fi_strerror(-rc));
	ft_log("created %s, map_addr %p", av_name, aa.map_addr);
	ft_open_ep(ft_info);
	if ((rc = fi_getname(&ft_ep->fid, m.name, &len)))
		ft_die("fi_getname: %s", fi_strerror(-rc));
	if ((rc = fi_av_insert(ft_av, m.name, 1, &self, 0, NULL)) != 1)
		ft_die("fi_av_insert(own address) = %d", rc);
	FT_CHECK(self == 0, "own address at fi_addr %llu, want 0 in a new table", (unsigned long long) self);
	recv_msg(&m, "receive of the client's name");
	if ((rc = fi_av_insert(ft_av, m.name, 1, &client, 0, NULL)) != 1)
		ft_die("fi_av_insert(client) = %d", rc);
	FT_CHECK(client == 1, "client's address at fi_addr %llu, want 1", (unsigned long long) client);
	memset(&m, 0, sizeof(m));
	m.magic = MAGIC;
	m.map_addr = (uint64_t) (uintptr_t) aa.map_addr;
	m.server_fa = self;
	m.client_fa = client;
	send_msg(&m, client, "answer through the shared AV");
	traffic(client);
}

static void run_client(void)
{
	struct fi_av_attr aa = { .type = av_type, .count = 16, .name = av_name, .flags = FI_READ };
	struct fi_av_attr none = aa;
	struct fid_av *bad = NULL;
	char missing[80];
	struct msg m;
	size_t len = sizeof(m.name);
	unsigned sport = port_of(ft_info->dest_addr), cport;
	fi_addr_t server = 0, client = 1;
	int rc;

	snprintf(missing, sizeof(missing), "%s.none", av_name);
	none.name = missing;
	rc = fi_av_open(ft_domain, &none, &bad, NULL);
	FT_CHECK(rc != 0, "fi_av_open(FI_READ) of the missing AV %s succeeded", missing);
	if (!rc)
		fi_close(&bad->fid);
	if ((rc = fi_av_open(ft_domain, &aa, &ft_av, NULL)))
		ft_die("fi_av_open(%s, FI_READ): %s", av_name, fi_strerror(-rc));
	ft_open_ep(ft_info);
	/* The runner starts the client once the server's port is bound, which
	 * is before the server has inserted its own address (its endpoint must
	 * be enabled for fi_getname): wait for index 0, bounded, then check
	 * it. An index that holds no address yet is -FI_EINVAL, as upstream's
	 * utility AV answers (-FI_ENOENT accepted too). */
	{
		struct sockaddr_storage ss;
		double end = ft_now() + FT_TIMEOUT;
		size_t sl = sizeof(ss);
		int lr;
		while (((lr = fi_av_lookup(ft_av, 0, &ss, &sl)) == -FI_ENOENT || lr == -FI_EINVAL) &&
		       ft_now() < end)
			sl = sizeof(ss);
	}
	check_lookup(0, sport, "server's address at index 0 of the shared AV");
	memset(&m, 0, sizeof(m));
	m.magic = MAGIC;
	if ((rc = fi_getname(&ft_ep->fid, m.name, &len)))
		ft_die("fi_getname: %s", fi_strerror(-rc));
	cport = port_of(m.name);
	send_msg(&m, server, "send of the client's name to fi_addr 0");
	recv_msg(&m, "receive of the server's answer");
	FT_CHECK(m.server_fa == server && m.client_fa == client, "server reports fi_addr %llu (self) and %llu (client)",
		 (unsigned long long) m.server_fa, (unsigned long long) m.client_fa);
	check_lookup(client, cport, "client's own address, inserted by the server, at index 1");
	ft_log("map_addr: server %#llx, client %p", (unsigned long long) m.map_addr, aa.map_addr);
	{
		struct fi_av_attr again = aa;
		struct fid_av *first = ft_av;
		again.map_addr = (void *) (uintptr_t) m.map_addr;
		if ((rc = fi_av_open(ft_domain, &again, &ft_av, NULL))) {
			FT_CHECK(0, "second fi_av_open(%s, FI_READ, the server's map_addr): %s", av_name, fi_strerror(-rc));
		} else {
			check_lookup(server, sport, "server's address through the server's map_addr");
			check_lookup(client, cport, "client's address through the server's map_addr");
			FT_RC(fi_close(&ft_av->fid), 0);
		}
		ft_av = first;
	}
	traffic(server);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_args(argc, argv, NULL, NULL);
	if (ft_ep_type == FI_EP_MSG)
		ft_die("fi_rdm_shared_av needs -e rdm or -e dgram");
	snprintf(av_name, sizeof(av_name), "/fi_rdm_shared_av.%s", ft_is_client() ? ft_opts.dst_port : ft_opts.src_port);
	hints = ft_hints(FI_MSG);
	hints->domain_attr->caps = FI_SHARED_AV;
	ft_require(hints, "FI_SHARED_AV");
	ft_setup(hints);
	ft_open_cqs(FI_CQ_FORMAT_MSG);
	/* ft_open_cqs opened a private AV; this program opens its own. */
	fi_close(&ft_av->fid);
	ft_av = NULL;
	if (ft_is_client())
		run_client();
	else
		run_server();
	return ft_finish("fi_rdm_shared_av");
}
