/*
 * A program written for libfabric 2.6's API (docs/api-2.2-2.6.md): it uses
 * what 2.2-2.6 added to the headers, compiled against ours, and runs on our
 * library. Values are checked at compile time; at run time each addition
 * does what the library documents for it:
 *   - FI_SOCKADDR_IP hints select the IPv4 entries for 127.0.0.1, with
 *     FI_RESCAN accepted by fi_getinfo;
 *   - fi_tostr names FI_SOCKADDR_IP, wait objects and CQ wait conditions,
 *     and FI_TYPE_VERSION is the headers' release;
 *   - fi_domain_attr carries 2.5's counter limits;
 *   - FI_FIREWALL_ADDR on every AV insert call is refused (-FI_EBADFLAGS);
 *   - fi_control(FI_GET_FD) gives a connected MSG endpoint's TCP socket
 *     (both sides; -FI_EOPBADSTATE before it connects) and is -FI_ENOSYS on
 *     an RDM endpoint;
 *   - fi_getopt(FI_OPT_FIREWALL_ADDR) and the new EFA options (not an EFA
 *     endpoint) are -FI_ENOPROTOOPT;
 *   - fi_ext_efa.h has 2.6's EFA extension (layouts as upstream's 2.6
 *     header: checked at compile time), and fi_open_ops with its GDA and
 *     feature names is -FI_ENOSYS (no EFA domain here).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_ext.h>
#include <rdma/fi_ext_efa.h>
#include <rdma/fi_cm.h>
#include <stdbool.h>
#include <sys/socket.h>
#include "check.h"

_Static_assert(FI_MAJOR_VERSION == 2 && FI_MINOR_VERSION == 6, "API 2.6");
_Static_assert(FI_RESCAN == (1ULL << 35), "FI_RESCAN");
_Static_assert(FI_FIREWALL_ADDR == (1ULL << 42), "FI_FIREWALL_ADDR");
_Static_assert(FI_SOCKADDR_IP == 17, "FI_SOCKADDR_IP");
_Static_assert(FI_GET_FD == 20, "FI_GET_FD");
_Static_assert(FI_OPT_FIREWALL_ADDR == 20, "FI_OPT_FIREWALL_ADDR");
_Static_assert(FI_EFA_WR_HIGH_PPS == (1ULL << 60), "FI_EFA_WR_HIGH_PPS");
_Static_assert(FI_EFA_CQ_INIT_FLAGS_EXT_MEM_DMABUF == 1 && FI_EFA_MEMORY_LOCATION_DMABUF == 1 &&
		       FI_EFA_COMP_CNTR_INIT_WITH_ERR_EXTERNAL_MEM == 2,
	       "EFA enumerators");
_Static_assert(sizeof(struct fi_efa_wq_attr) == 32 && offsetof(struct fi_efa_wq_attr, max_batch) == 24,
	       "fi_efa_wq_attr");
_Static_assert(sizeof(struct fi_efa_cq_init_attr) == 40 &&
		       offsetof(struct fi_efa_cq_init_attr, ext_mem_dmabuf.fd) == 32,
	       "fi_efa_cq_init_attr");
_Static_assert(sizeof(struct fi_efa_memory_location) == 32 &&
		       offsetof(struct fi_efa_memory_location, type) == 24,
	       "fi_efa_memory_location");
_Static_assert(sizeof(struct fi_efa_comp_cntr_init_attr) == 80 &&
		       offsetof(struct fi_efa_comp_cntr_init_attr, err_cntr_ext_mem) == 48,
	       "fi_efa_comp_cntr_init_attr");
_Static_assert(sizeof(struct fi_efa_ops_gda) == 48 && offsetof(struct fi_efa_ops_gda, cntr_open_ext) == 40,
	       "fi_efa_ops_gda");
_Static_assert(FI_EFIREWALLADDR == 271 && FI_ERRNO_MAX == 272, "FI_EFIREWALLADDR");
_Static_assert(FI_OPT_EFA_HOMOGENEOUS_PEERS == -FI_PROV_SPECIFIC_EFA + 7 &&
	       FI_OPT_EFA_USE_UNSOLICITED_WRITE_RECV == -FI_PROV_SPECIFIC_EFA + 8, "EFA options");
_Static_assert(FI_TYPE_CQ_WAIT_COND == 34 && FI_TYPE_WAIT_OBJ == 35, "fi_type");
_Static_assert(offsetof(struct fi_domain_attr, max_cntr_value) == 208 &&
	       offsetof(struct fi_domain_attr, max_err_cntr_value) == 216 &&
	       sizeof(struct fi_domain_attr) == 224, "fi_domain_attr of ABI 1.9");

static void tostr_is(const void *data, enum fi_type t, const char *want)
{
	const char *s = fi_tostr(data, t);
	EXPECT(s && !strcmp(s, want), "fi_tostr(type %d): '%s', want '%s'", (int) t,
	       s ? s : "(null)", want);
}

/* The connected TCP socket behind `ep` (FI_GET_FD): a stream socket whose
 * local port is `local` when that is not 0. */
static void fd_is_socket(struct fid_ep *ep, const char *who, uint16_t local)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	int fd = -1, type = 0;
	socklen_t tl = sizeof(type);

	EXPECT_RC(fi_control(&ep->fid, FI_GET_FD, &fd), 0);
	EXPECT(fd >= 0 && getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM,
	       "%s: FI_GET_FD gave %d, not a stream socket", who, fd);
	EXPECT(fd >= 0 && getsockname(fd, (struct sockaddr *) &sin, &sl) == 0 &&
		       (!local || ntohs(sin.sin_port) == local),
	       "%s: the socket's local port is not %u", who, (unsigned) local);
}

/* Waits (bounded) for one event on `eq`; dies on anything but `want`. */
static void expect_event(struct fid_eq *eq, uint32_t want, struct fi_eq_cm_entry *entry)
{
	uint32_t event = 0;
	ssize_t n = fi_eq_sread(eq, &event, entry, sizeof(*entry), 10000, 0);
	if (n < 0 || event != want)
		die("fi_eq_sread (connection events, 10 s)", n < 0 ? n : -FI_EOTHER);
}

/* FI_GET_FD on a connected MSG endpoint pair over loopback. */
static void msg_get_fd(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL, *sinfo;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_ep *client, *server;
	struct fid_cq *ccq, *scq;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_eq_cm_entry entry;
	struct sockaddr_in addr;
	size_t len = sizeof(addr);
	int fd = -1;

	if (!hints)
		die("fi_allocinfo", -FI_ENOMEM);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->addr_format = FI_SOCKADDR_IP;
	hints->fabric_attr->prov_name = strdup("sockets");
	CHECK(fi_getinfo(FI_VERSION(2, 6), "127.0.0.1", "0", FI_SOURCE, hints, &info));
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	CHECK(fi_passive_ep(fabric, info, &pep, NULL));
	CHECK(fi_pep_bind(pep, &eq->fid, 0));
	CHECK(fi_listen(pep));
	CHECK(fi_getname(&pep->fid, &addr, &len));

	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &ccq, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &scq, NULL));
	CHECK(fi_endpoint(domain, info, &client, NULL));
	CHECK(fi_ep_bind(client, &eq->fid, 0));
	CHECK(fi_ep_bind(client, &ccq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(client));
	EXPECT_RC(fi_control(&client->fid, FI_GET_FD, &fd), -FI_EOPBADSTATE);
	EXPECT_RC(fi_control(&client->fid, FI_GET_FD, NULL), -FI_EINVAL);
	CHECK(fi_connect(client, &addr, NULL, 0));

	expect_event(eq, FI_CONNREQ, &entry);
	sinfo = entry.info;
	CHECK(fi_endpoint(domain, sinfo, &server, NULL));
	CHECK(fi_ep_bind(server, &eq->fid, 0));
	CHECK(fi_ep_bind(server, &scq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(server));
	CHECK(fi_accept(server, NULL, 0));
	expect_event(eq, FI_CONNECTED, &entry);
	expect_event(eq, FI_CONNECTED, &entry);

	fd_is_socket(client, "client", 0);
	fd_is_socket(server, "server", ntohs(addr.sin_port));

	CHECK(fi_close(&client->fid));
	CHECK(fi_close(&server->fid));
	CHECK(fi_close(&pep->fid));
	CHECK(fi_close(&ccq->fid));
	CHECK(fi_close(&scq->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&eq->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(sinfo);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

int main(void)
{
	struct fi_info *hints, *info = NULL, *i;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fi_av_attr av_attr;
	struct sockaddr_in peer;
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	uint32_t v = fi_version();
	int fmt = FI_SOCKADDR_IP, wait = FI_WAIT_FD, cond = FI_CQ_COND_THRESHOLD, fd = -1;
	size_t len = sizeof(fd);
	char release[32];

	EXPECT(v == FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), "fi_version %u.%u", FI_MAJOR(v),
	       FI_MINOR(v));
	snprintf(release, sizeof(release), "%d.%d.%d", FI_MAJOR_VERSION, FI_MINOR_VERSION,
		 FI_REVISION_VERSION);
	tostr_is(&v, FI_TYPE_VERSION, release);
	tostr_is(&fmt, FI_TYPE_ADDR_FORMAT, "FI_SOCKADDR_IP");
	tostr_is(&wait, FI_TYPE_WAIT_OBJ, "FI_WAIT_FD");
	tostr_is(&cond, FI_TYPE_CQ_WAIT_COND, "FI_CQ_COND_THRESHOLD");

	hints = fi_allocinfo();
	if (!hints)
		die("fi_allocinfo", -FI_ENOMEM);
	hints->addr_format = FI_SOCKADDR_IP;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("sockets");
	CHECK(fi_getinfo(FI_VERSION(2, 6), "127.0.0.1", NULL, FI_RESCAN, hints, &info));
	for (i = info; i; i = i->next)
		EXPECT(i->addr_format == FI_SOCKADDR_IN, "FI_SOCKADDR_IP hints gave format %u",
		       i->addr_format);
	EXPECT(info->domain_attr->max_cntr_value == 0 ||
		       info->domain_attr->max_err_cntr_value <= info->domain_attr->max_cntr_value,
	       "counter limits %llu / %llu",
	       (unsigned long long) info->domain_attr->max_cntr_value,
	       (unsigned long long) info->domain_attr->max_err_cntr_value);

	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	{
		struct fi_efa_ops_gda *gda = NULL;
		struct fi_efa_feature_ops *feat = NULL;
		EXPECT_RC(fi_open_ops(&domain->fid, FI_EFA_GDA_OPS, 0, (void **) &gda, NULL), -FI_ENOSYS);
		EXPECT_RC(fi_open_ops(&domain->fid, FI_EFA_FEATURE_OPS, 0, (void **) &feat, NULL), -FI_ENOSYS);
	}
	memset(&av_attr, 0, sizeof(av_attr));
	av_attr.type = FI_AV_TABLE;
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	memset(&peer, 0, sizeof(peer));
	peer.sin_family = AF_INET;
	peer.sin_port = htons(9);
	peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	EXPECT_RC(fi_av_insert(av, &peer, 1, &addr, FI_FIREWALL_ADDR, NULL), -FI_EBADFLAGS);
	EXPECT_RC(fi_av_insertsvc(av, "127.0.0.1", "9", &addr, FI_FIREWALL_ADDR, NULL), -FI_EBADFLAGS);
	EXPECT_RC(fi_av_insertsym(av, "127.0.0.1", 1, "9", 1, &addr, FI_FIREWALL_ADDR, NULL),
		  -FI_EBADFLAGS);
	EXPECT(addr == FI_ADDR_NOTAVAIL, "a refused insert wrote fi_addr %llu", (unsigned long long) addr);
	/* Without the flag the same address goes in. */
	EXPECT_RC(fi_av_insert(av, &peer, 1, &addr, 0, NULL), 1);

	CHECK(fi_endpoint(domain, info, &ep, NULL));
	EXPECT_RC(fi_control(&ep->fid, FI_GET_FD, &fd), -FI_ENOSYS);
	EXPECT_RC(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_FIREWALL_ADDR, &fd, &len), -FI_ENOPROTOOPT);
	{
		bool on = true;
		EXPECT_RC(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_EFA_HOMOGENEOUS_PEERS, &on, sizeof(on)),
			  -FI_ENOPROTOOPT);
		EXPECT_RC(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_EFA_USE_UNSOLICITED_WRITE_RECV, &on,
				    sizeof(on)), -FI_ENOPROTOOPT);
	}

	CHECK(fi_close(&ep->fid));
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	msg_get_fd();
	printf("api26: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
