/*
 * fi_getinfo_test: hint matching of fi_getinfo for one provider. NULL hints
 * list MSG, RDM and DGRAM entries whose values are self-consistent; every
 * hint field is either honoured by each returned entry or the call fails
 * with -FI_ENODATA (caps, ep type, protocol, address format, mode bits,
 * threading, progress, resource management, AV type, mr_mode, queue sizes,
 * inject size, iov limits, max_msg_size, context counts, cq_data_size, tag
 * format, domain/fabric/provider names); node, service and FI_SOURCE fill
 * src_addr or dest_addr; FI_NUMERICHOST refuses a host name; unsupported
 * versions give -FI_ENOSYS; fi_dupinfo copies deeply; FI_PROV_ATTR_ONLY
 * returns one bare entry.
 *
 * The maxima used for the "one above the maximum" hints are the values the
 * provider returns for NULL hints (the best it can do for that ep type).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "common.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>

/* The local addresses (-s, -6) in network form. */
static in_addr_t ft_node_in(void)
{
	struct in_addr a = { 0 };
	inet_pton(AF_INET, ft_node, &a);
	return a.s_addr;
}

static struct in6_addr ft_node6_in(void)
{
	struct in6_addr a = IN6ADDR_ANY_INIT;
	inet_pton(AF_INET6, ft_node6, &a);
	return a;
}

#define VERSION FI_VERSION(1, 17)

/* The capabilities fi_endpoint(3) says apply to transmit and to receive
 * attributes (FI_XPU and FI_VARIABLE_MSG add no bit in these headers). */
#define TX_SIDE_CAPS                                                                                         \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_READ | FI_WRITE | FI_SEND | FI_HMEM | FI_TRIGGER | \
	 FI_FENCE | FI_MULTICAST | FI_RMA_PMEM | FI_NAMED_RX_CTX | FI_COLLECTIVE)
#define RX_SIDE_CAPS                                                                                       \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RECV | FI_HMEM | \
	 FI_TRIGGER | FI_RMA_PMEM | FI_DIRECTED_RECV | FI_MULTI_RECV | FI_SOURCE | FI_RMA_EVENT |        \
	 FI_SOURCE_ERR | FI_COLLECTIVE)

/* What NULL hints advertise for one ep type (union of caps, maxima). */
struct ep_limits {
	int found;
	uint64_t caps;
	uint64_t mode;
	size_t tx_size, rx_size, inject_size, tx_iov, rx_iov, tx_ctx, rx_ctx;
	uint64_t max_msg_size;
	uint64_t tag_format;
	uint32_t protocol;
	size_t cq_data_size;
	int mr_mode; /* union of the entries' */
	char domain[64], fabric[64];
};

static const enum fi_ep_type ep_types[] = { FI_EP_MSG, FI_EP_RDM, FI_EP_DGRAM };
static struct ep_limits limits[3];
static struct fi_info not_set; /* sentinel: fi_getinfo must overwrite *info */
static int nodata_calls, nodata_left_info;

static const char *ep_name(enum fi_ep_type t)
{
	return t == FI_EP_MSG ? "msg" : t == FI_EP_RDM ? "rdm" : t == FI_EP_DGRAM ? "dgram" : "?";
}

/* The provider's entries, a layered name included ("verbs;ofi_rxm" for
 * -p verbs, as fi_getinfo's prov_name hint selects them). */
static int is_prov(const struct fi_info *i)
{
	size_t n = strlen(ft_prov);
	return i->fabric_attr && i->fabric_attr->prov_name && !strncmp(i->fabric_attr->prov_name, ft_prov, n) &&
	       (i->fabric_attr->prov_name[n] == 0 || i->fabric_attr->prov_name[n] == ';');
}

static struct fi_info *hints_for(enum fi_ep_type type)
{
	struct fi_info *h = fi_allocinfo();
	h->fabric_attr->prov_name = strdup(ft_prov);
	h->ep_attr->type = type;
	return h;
}

/* fi_getinfo; -FI_ENODATA must leave *info NULL (fi_getinfo(3)). */
static int gi(const char *node, const char *service, uint64_t flags, const struct fi_info *hints,
	      struct fi_info **info)
{
	*info = &not_set;
	int rc = fi_getinfo(VERSION, node, service, flags, hints, info);
	if (rc == -FI_ENODATA) {
		nodata_calls++;
		nodata_left_info += *info != NULL;
	}
	if (rc)
		*info = NULL;
	return rc;
}

static size_t count(const struct fi_info *i)
{
	size_t n = 0;
	for (; i; i = i->next)
		n++;
	return n;
}

/* The address family and port of a returned address, or -1. */
static int addr_port(const void *a, size_t len, int *family)
{
	const struct sockaddr *sa = a;
	if (!a)
		return -1;
	*family = sa->sa_family;
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		return ntohs(((const struct sockaddr_in *) a)->sin_port);
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
		return ntohs(((const struct sockaddr_in6 *) a)->sin6_port);
	return -1;
}

/* Values every returned entry must satisfy on its own. */
static void check_entry(const struct fi_info *i, const char *what)
{
	FT_CHECK(i->tx_attr && i->rx_attr && i->ep_attr && i->domain_attr && i->fabric_attr,
		 "%s: an attribute struct is NULL", what);
	if (!(i->tx_attr && i->rx_attr && i->ep_attr && i->domain_attr && i->fabric_attr))
		return;
	FT_CHECK(is_prov(i), "%s: provider %s", what, i->fabric_attr->prov_name);
	FT_CHECK(i->fabric_attr->name && i->domain_attr->name, "%s: fabric/domain name missing", what);
	FT_CHECK(i->fabric_attr->prov_version != 0, "%s: prov_version 0", what);
	FT_CHECK(i->fabric_attr->api_version == VERSION, "%s: api_version %u.%u", what,
		 FI_MAJOR(i->fabric_attr->api_version), FI_MINOR(i->fabric_attr->api_version));
	/* 8 bytes, or verbs' 4 (immediate data), as upstream's providers */
	FT_CHECK(i->domain_attr->cq_data_size == 8 || i->domain_attr->cq_data_size == 4,
		 "%s: cq_data_size %zu, want 8 or 4", what, i->domain_attr->cq_data_size);
	FT_CHECK(i->tx_attr->inject_size <= i->ep_attr->max_msg_size,
		 "%s: inject_size %zu > max_msg_size %zu", what, i->tx_attr->inject_size,
		 i->ep_attr->max_msg_size);
	FT_CHECK(i->ep_attr->max_msg_size > 0, "%s: max_msg_size 0", what);
	FT_CHECK(i->tx_attr->size > 0 && i->rx_attr->size > 0, "%s: tx/rx size 0", what);
	FT_CHECK(i->tx_attr->iov_limit > 0 && i->rx_attr->iov_limit > 0, "%s: iov_limit 0", what);
	FT_CHECK((i->tx_attr->caps & ~i->caps) == 0, "%s: tx caps 0x%llx not within caps 0x%llx", what,
		 (unsigned long long) i->tx_attr->caps, (unsigned long long) i->caps);
	FT_CHECK((i->rx_attr->caps & ~i->caps) == 0, "%s: rx caps 0x%llx not within caps 0x%llx", what,
		 (unsigned long long) i->rx_attr->caps, (unsigned long long) i->caps);
	/* fi_endpoint(3) lists the capabilities that apply to each side;
	 * upstream's fabtests 2.x getinfo_test fails an entry with others. */
	FT_CHECK((i->tx_attr->caps & ~TX_SIDE_CAPS) == 0, "%s: tx caps hold receive-only bits 0x%llx", what,
		 (unsigned long long) (i->tx_attr->caps & ~TX_SIDE_CAPS));
	FT_CHECK((i->rx_attr->caps & ~RX_SIDE_CAPS) == 0, "%s: rx caps hold transmit-only bits 0x%llx", what,
		 (unsigned long long) (i->rx_attr->caps & ~RX_SIDE_CAPS));
	FT_CHECK(i->addr_format == FI_SOCKADDR_IN || i->addr_format == FI_SOCKADDR_IN6,
		 "%s: addr_format %u", what, i->addr_format);
	if (i->src_addr) {
		size_t want = i->addr_format == FI_SOCKADDR_IN ? sizeof(struct sockaddr_in) :
								 sizeof(struct sockaddr_in6);
		int fam = -1;
		addr_port(i->src_addr, i->src_addrlen, &fam);
		FT_CHECK(i->src_addrlen == want, "%s: src_addrlen %zu, want %zu", what, i->src_addrlen, want);
		FT_CHECK(fam == (i->addr_format == FI_SOCKADDR_IN ? AF_INET : AF_INET6),
			 "%s: src_addr family %d does not match addr_format %u", what, fam, i->addr_format);
	} else {
		FT_CHECK(i->src_addrlen == 0, "%s: src_addrlen %zu without src_addr", what, i->src_addrlen);
	}
	if (!i->dest_addr)
		FT_CHECK(i->dest_addrlen == 0, "%s: dest_addrlen %zu without dest_addr", what,
			 i->dest_addrlen);
	if (i->mode & FI_MSG_PREFIX)
		FT_CHECK(i->ep_attr->msg_prefix_size > 0 && i->ep_attr->msg_prefix_size % 8 == 0,
			 "%s: FI_MSG_PREFIX with msg_prefix_size %zu", what, i->ep_attr->msg_prefix_size);
	else
		FT_CHECK(i->ep_attr->msg_prefix_size == 0, "%s: msg_prefix_size %zu without FI_MSG_PREFIX",
			 what, i->ep_attr->msg_prefix_size);
}

static int str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* fi_dupinfo gives an equal, deep copy of a single entry. */
static void check_dup(const struct fi_info *i)
{
	struct fi_info *d = fi_dupinfo(i);
	FT_CHECK(d != NULL, "fi_dupinfo returned NULL");
	if (!d)
		return;
	FT_CHECK(d->next == NULL, "dup->next is set");
	FT_CHECK(d != i && d->tx_attr != i->tx_attr && d->rx_attr != i->rx_attr &&
		 d->ep_attr != i->ep_attr && d->domain_attr != i->domain_attr &&
		 d->fabric_attr != i->fabric_attr, "fi_dupinfo shares attribute structs");
	FT_CHECK(d->caps == i->caps && d->mode == i->mode && d->addr_format == i->addr_format,
		 "dup caps/mode/addr_format differ");
	FT_CHECK(d->src_addrlen == i->src_addrlen && d->dest_addrlen == i->dest_addrlen,
		 "dup address lengths differ");
	FT_CHECK(!i->src_addr || (d->src_addr && d->src_addr != i->src_addr &&
				  memcmp(d->src_addr, i->src_addr, i->src_addrlen) == 0),
		 "dup src_addr differs or is shared");
	FT_CHECK(!i->dest_addr || (d->dest_addr && d->dest_addr != i->dest_addr &&
				   memcmp(d->dest_addr, i->dest_addr, i->dest_addrlen) == 0),
		 "dup dest_addr differs or is shared");
	FT_CHECK(memcmp(d->tx_attr, i->tx_attr, sizeof(*i->tx_attr)) == 0, "dup tx_attr differs");
	FT_CHECK(memcmp(d->rx_attr, i->rx_attr, sizeof(*i->rx_attr)) == 0, "dup rx_attr differs");
	FT_CHECK(d->ep_attr->type == i->ep_attr->type && d->ep_attr->protocol == i->ep_attr->protocol &&
		 d->ep_attr->protocol_version == i->ep_attr->protocol_version &&
		 d->ep_attr->max_msg_size == i->ep_attr->max_msg_size &&
		 d->ep_attr->msg_prefix_size == i->ep_attr->msg_prefix_size &&
		 d->ep_attr->mem_tag_format == i->ep_attr->mem_tag_format &&
		 d->ep_attr->tx_ctx_cnt == i->ep_attr->tx_ctx_cnt &&
		 d->ep_attr->rx_ctx_cnt == i->ep_attr->rx_ctx_cnt &&
		 d->ep_attr->auth_key_size == i->ep_attr->auth_key_size, "dup ep_attr differs");
	const struct fi_domain_attr *a = i->domain_attr, *b = d->domain_attr;
	FT_CHECK(str_eq(a->name, b->name) && (!a->name || a->name != b->name) &&
		 a->threading == b->threading && a->control_progress == b->control_progress &&
		 a->data_progress == b->data_progress && a->resource_mgmt == b->resource_mgmt &&
		 a->av_type == b->av_type && a->mr_mode == b->mr_mode &&
		 a->mr_key_size == b->mr_key_size && a->cq_data_size == b->cq_data_size &&
		 a->cq_cnt == b->cq_cnt && a->ep_cnt == b->ep_cnt && a->tx_ctx_cnt == b->tx_ctx_cnt &&
		 a->rx_ctx_cnt == b->rx_ctx_cnt && a->max_ep_tx_ctx == b->max_ep_tx_ctx &&
		 a->max_ep_rx_ctx == b->max_ep_rx_ctx && a->cntr_cnt == b->cntr_cnt &&
		 a->mr_iov_limit == b->mr_iov_limit && a->caps == b->caps && a->mode == b->mode &&
		 a->max_err_data == b->max_err_data && a->mr_cnt == b->mr_cnt, "dup domain_attr differs");
	const struct fi_fabric_attr *f = i->fabric_attr, *g = d->fabric_attr;
	FT_CHECK(str_eq(f->name, g->name) && str_eq(f->prov_name, g->prov_name) &&
		 (!f->name || f->name != g->name) && (!f->prov_name || f->prov_name != g->prov_name) &&
		 f->prov_version == g->prov_version && f->api_version == g->api_version,
		 "dup fabric_attr differs");
	fi_freeinfo(d);
}

static int type_index(enum fi_ep_type t)
{
	for (int k = 0; k < 3; k++)
		if (ep_types[k] == t)
			return k;
	return -1;
}

static void learn_limits(void)
{
	struct fi_info *info, *i;
	FT_RC(gi(NULL, NULL, 0, NULL, &info), 0);
	for (i = info; i; i = i->next) {
		if (!is_prov(i) || !i->ep_attr)
			continue;
		int k = type_index(i->ep_attr->type);
		FT_CHECK(k >= 0, "NULL hints: unexpected ep type %d", i->ep_attr->type);
		if (k < 0)
			continue;
		struct ep_limits *l = &limits[k];
		check_entry(i, "NULL hints");
		check_dup(i);
		if (!l->found) {
			l->found = 1;
			l->protocol = i->ep_attr->protocol;
			l->tag_format = i->ep_attr->mem_tag_format;
			l->cq_data_size = i->domain_attr->cq_data_size;
			snprintf(l->domain, sizeof(l->domain), "%s", i->domain_attr->name);
			snprintf(l->fabric, sizeof(l->fabric), "%s", i->fabric_attr->name);
		}
		l->caps |= i->caps;
		l->mode |= i->mode;
		l->mr_mode |= i->domain_attr->mr_mode;
#define MAXOF(field, val) l->field = l->field > (val) ? l->field : (val)
		MAXOF(tx_size, i->tx_attr->size);
		MAXOF(rx_size, i->rx_attr->size);
		MAXOF(inject_size, i->tx_attr->inject_size);
		MAXOF(tx_iov, i->tx_attr->iov_limit);
		MAXOF(rx_iov, i->rx_attr->iov_limit);
		MAXOF(tx_ctx, i->ep_attr->tx_ctx_cnt);
		MAXOF(rx_ctx, i->ep_attr->rx_ctx_cnt);
		MAXOF(max_msg_size, i->ep_attr->max_msg_size);
#undef MAXOF
	}
	/* NULL hints list every type the provider has entries for. */
	for (int k = 0; k < 3; k++) {
		struct fi_info *h = hints_for(ep_types[k]), *one = NULL;
		int offered = gi(NULL, NULL, 0, h, &one) == 0;
		fi_freeinfo(one);
		fi_freeinfo(h);
		FT_CHECK(limits[k].found == offered, "NULL hints: %s %s entry for %s, but asked for alone: %s",
			 limits[k].found ? "an" : "no", ep_name(ep_types[k]), ft_prov, offered ? "one" : "none");
	}
	fi_freeinfo(info);
}

/*
 * Expects either -FI_ENODATA (want_ok 0) or success (want_ok 1) for hints h;
 * on success checks every entry and returns the list (caller frees).
 */
static struct fi_info *expect(int line, int want_ok, const char *what, const char *node,
			      const char *service, uint64_t flags, struct fi_info *h)
{
	struct fi_info *info;
	int rc = gi(node, service, flags, h, &info);
	FT_CHECK(want_ok ? rc == 0 : rc == -FI_ENODATA, "(line %d) %s: fi_getinfo = %d (%s), want %s",
		 line, what, rc, fi_strerror(-rc), want_ok ? "0" : "-FI_ENODATA");
	for (struct fi_info *i = info; i; i = i->next) {
		check_entry(i, what);
		check_dup(i);
		if (h && h->ep_attr && h->ep_attr->type)
			FT_CHECK(i->ep_attr->type == h->ep_attr->type, "(line %d) %s: ep type %d", line,
				 what, i->ep_attr->type);
		if (h)
			FT_CHECK((i->caps & h->caps) == h->caps,
				 "(line %d) %s: caps 0x%llx lack requested 0x%llx", line, what,
				 (unsigned long long) i->caps, (unsigned long long) h->caps);
		if (h)
			FT_CHECK((i->mode & ~h->mode) == 0,
				 "(line %d) %s: mode 0x%llx beyond the hints' 0x%llx", line, what,
				 (unsigned long long) i->mode, (unsigned long long) h->mode);
	}
	return info;
}
#define OK(what, node, svc, flags, h) expect(__LINE__, 1, what, node, svc, flags, h)
#define NODATA(what, node, svc, flags, h) fi_freeinfo(expect(__LINE__, 0, what, node, svc, flags, h))

static const struct {
	uint64_t cap;
	const char *name;
} cap_list[] = {
	{ FI_MSG, "FI_MSG" },
	{ FI_TAGGED, "FI_TAGGED" },
	{ FI_RMA, "FI_RMA" },
	{ FI_ATOMIC, "FI_ATOMIC" },
	{ FI_RMA | FI_READ, "FI_RMA|FI_READ" },
	{ FI_RMA | FI_REMOTE_WRITE, "FI_RMA|FI_REMOTE_WRITE" },
	{ FI_MULTICAST, "FI_MULTICAST" },
	{ FI_NAMED_RX_CTX, "FI_NAMED_RX_CTX" },
	{ FI_DIRECTED_RECV, "FI_DIRECTED_RECV" },
	{ FI_VARIABLE_MSG, "FI_VARIABLE_MSG" },
	{ FI_HMEM, "FI_HMEM" },
	{ FI_COLLECTIVE, "FI_COLLECTIVE" },
	{ FI_MSG | FI_SEND, "FI_MSG|FI_SEND" },
	{ FI_MSG | FI_RECV, "FI_MSG|FI_RECV" },
	{ FI_MULTI_RECV, "FI_MULTI_RECV" },
	{ FI_SOURCE, "FI_SOURCE" },
	{ FI_SOURCE | FI_SOURCE_ERR, "FI_SOURCE|FI_SOURCE_ERR" },
	{ FI_RMA_EVENT, "FI_RMA_EVENT" },
	{ FI_SHARED_AV, "FI_SHARED_AV" },
	{ FI_TRIGGER, "FI_TRIGGER" },
	{ FI_FENCE, "FI_FENCE" },
	{ FI_LOCAL_COMM, "FI_LOCAL_COMM" },
	{ FI_REMOTE_COMM, "FI_REMOTE_COMM" },
	{ FI_RMA_PMEM, "FI_RMA_PMEM" },
};

/* Each capability: returned with the bit set if NULL hints advertise it, else -FI_ENODATA. */
static void check_caps(int k)
{
	enum fi_ep_type t = ep_types[k];
	char what[128];
	for (size_t c = 0; c < sizeof(cap_list) / sizeof(cap_list[0]); c++) {
		struct fi_info *h = hints_for(t);
		h->caps = cap_list[c].cap;
		snprintf(what, sizeof(what), "%s caps %s", ep_name(t), cap_list[c].name);
		if (cap_list[c].cap == FI_COLLECTIVE) {
			/* Upstream's tcp;ofi_rxm has it in entries of their own,
			 * ours when asked for; never on MSG or DGRAM, and it brings
			 * FI_TAGGED, which collectives travel as. */
			struct fi_info *info = NULL;
			int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
			FT_CHECK(rc == 0 || rc == -FI_ENODATA, "%s: %s", what, fi_strerror(-rc));
			FT_CHECK(!(t != FI_EP_RDM && rc == 0), "%s: offered on a non-RDM endpoint", what);
			for (struct fi_info *i = info; i; i = i->next)
				FT_CHECK((i->caps & (FI_COLLECTIVE | FI_TAGGED)) == (FI_COLLECTIVE | FI_TAGGED),
					 "%s: caps 0x%llx", what, (unsigned long long) i->caps);
			fi_freeinfo(info);
			fi_freeinfo(h);
			continue;
		}
		int advertised = (limits[k].caps & cap_list[c].cap) == cap_list[c].cap;
		/* A provider that needs registration for one-sided operations
		 * (FI_MR_LOCAL: verbs) is offered the mr_mode bits its entries
		 * carry, as upstream's fabtests offer them by default
		 * (FI_RMA_EVENT too: it needs remote access, fi_getinfo(3)). */
		if ((limits[k].mr_mode & FI_MR_LOCAL) &&
		    (cap_list[c].cap & (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |
					FI_RMA_EVENT)))
			h->domain_attr->mr_mode = limits[k].mr_mode;
		fi_freeinfo(expect(__LINE__, advertised, what, NULL, NULL, 0, h));
		fi_freeinfo(h);
	}
	/* Never advertised by a TCP/UDP provider (bit 44 is 1.x's FI_XPU_TRIGGER,
	 * which the 2.x headers no longer define). */
	FT_CHECK(!(limits[k].caps & (FI_MULTICAST | FI_HMEM | (1ULL << 44))),
		 "%s advertises caps 0x%llx", ep_name(t), (unsigned long long) limits[k].caps);
	/* A primary capability that was not requested is not enabled. */
	{
		struct fi_info *h = hints_for(t), *info;
		h->caps = FI_MSG;
		snprintf(what, sizeof(what), "%s caps FI_MSG only", ep_name(t));
		info = OK(what, NULL, NULL, 0, h);
		for (struct fi_info *i = info; i; i = i->next)
			FT_CHECK(!(i->caps & (FI_TAGGED | FI_RMA | FI_ATOMIC)),
				 "%s: unrequested primary caps in 0x%llx", what,
				 (unsigned long long) i->caps);
		fi_freeinfo(info);
		fi_freeinfo(h);
	}
}

/* Queue sizes, inject size, iov limits, max_msg_size, context counts. */
static void check_sizes(int k)
{
	enum fi_ep_type t = ep_types[k];
	const struct ep_limits *l = &limits[k];
	char what[128];
	struct fi_info *h, *info;
#define SIZE_CASE(attr, field, max, label) \
	do { \
		h = hints_for(t); \
		h->attr->field = (max); \
		snprintf(what, sizeof(what), "%s %s = max %llu", ep_name(t), label, \
			 (unsigned long long) (max)); \
		info = OK(what, NULL, NULL, 0, h); \
		for (struct fi_info *i = info; i; i = i->next) \
			FT_CHECK(i->attr->field >= (max), "%s: returned %llu", what, \
				 (unsigned long long) i->attr->field); \
		fi_freeinfo(info); \
		if ((max) + 1 != 0) { \
			/* -FI_ENODATA, or entries that grant it: NULL hints give \
			 * the default, a provider may grant up to the device's \
			 * limit when asked (verbs' queue sizes, as upstream's) */ \
			h->attr->field = (max) + 1; \
			snprintf(what, sizeof(what), "%s %s = max+1 %llu", ep_name(t), label, \
				 (unsigned long long) (max) + 1); \
			int rc_ = gi(NULL, NULL, 0, h, &info); \
			FT_CHECK(rc_ == -FI_ENODATA || rc_ == 0, "%s: fi_getinfo = %d", what, rc_); \
			for (struct fi_info *i = info; i; i = i->next) \
				FT_CHECK(i->attr->field >= (max) + 1, "%s: returned %llu", what, \
					 (unsigned long long) i->attr->field); \
			fi_freeinfo(info); \
		} \
		fi_freeinfo(h); \
	} while (0)
	SIZE_CASE(tx_attr, size, l->tx_size, "tx_attr->size");
	SIZE_CASE(rx_attr, size, l->rx_size, "rx_attr->size");
	SIZE_CASE(tx_attr, inject_size, l->inject_size, "tx_attr->inject_size");
	SIZE_CASE(tx_attr, iov_limit, l->tx_iov, "tx_attr->iov_limit");
	SIZE_CASE(rx_attr, iov_limit, l->rx_iov, "rx_attr->iov_limit");
	SIZE_CASE(ep_attr, max_msg_size, l->max_msg_size, "ep_attr->max_msg_size");
	SIZE_CASE(ep_attr, tx_ctx_cnt, l->tx_ctx, "ep_attr->tx_ctx_cnt");
	SIZE_CASE(ep_attr, rx_ctx_cnt, l->rx_ctx, "ep_attr->rx_ctx_cnt");
	SIZE_CASE(domain_attr, cq_data_size, l->cq_data_size, "domain_attr->cq_data_size");
#undef SIZE_CASE
}

/* threading, progress, resource management, AV type, mr_mode, mode bits, protocol. */
static void check_domain_hints(int k)
{
	enum fi_ep_type t = ep_types[k];
	char what[128];
	struct fi_info *h, *info;

	for (int v = FI_THREAD_SAFE; v <= FI_THREAD_ENDPOINT; v++) {
		h = hints_for(t);
		h->domain_attr->threading = (enum fi_threading) v;
		snprintf(what, sizeof(what), "%s threading %d", ep_name(t), v);
		info = OK(what, NULL, NULL, 0, h);
		for (struct fi_info *i = info; i; i = i->next)
			FT_CHECK(i->domain_attr->threading == (enum fi_threading) v ||
					 i->domain_attr->threading == FI_THREAD_SAFE,
				 "%s: returned threading %d", what, i->domain_attr->threading);
		fi_freeinfo(info);
		fi_freeinfo(h);
	}
	h = hints_for(t);
	h->domain_attr->threading = (enum fi_threading) 42;
	NODATA("threading 42", NULL, NULL, 0, h);
	fi_freeinfo(h);

	for (int ctl = 0; ctl < 2; ctl++) {
		for (int v = FI_PROGRESS_AUTO; v <= FI_PROGRESS_MANUAL; v++) {
			h = hints_for(t);
			if (ctl)
				h->domain_attr->control_progress = (enum fi_progress) v;
			else
				h->domain_attr->data_progress = (enum fi_progress) v;
			snprintf(what, sizeof(what), "%s %s_progress %d", ep_name(t), ctl ? "control" : "data",
				 v);
			info = OK(what, NULL, NULL, 0, h);
			for (struct fi_info *i = info; i; i = i->next) {
				enum fi_progress got = ctl ? i->domain_attr->control_progress :
							     i->domain_attr->data_progress;
				FT_CHECK(got == (enum fi_progress) v || got == FI_PROGRESS_AUTO,
					 "%s: returned %d", what, got);
			}
			fi_freeinfo(info);
			fi_freeinfo(h);
		}
		h = hints_for(t);
		if (ctl)
			h->domain_attr->control_progress = (enum fi_progress) 42;
		else
			h->domain_attr->data_progress = (enum fi_progress) 42;
		NODATA(ctl ? "control_progress 42" : "data_progress 42", NULL, NULL, 0, h);
		fi_freeinfo(h);
	}

	for (int v = FI_RM_DISABLED; v <= FI_RM_ENABLED; v++) {
		h = hints_for(t);
		h->domain_attr->resource_mgmt = (enum fi_resource_mgmt) v;
		snprintf(what, sizeof(what), "%s resource_mgmt %d", ep_name(t), v);
		fi_freeinfo(OK(what, NULL, NULL, 0, h));
		fi_freeinfo(h);
	}
	if (t != FI_EP_MSG) {
		for (int v = FI_AV_MAP; v <= FI_AV_TABLE; v++) {
			h = hints_for(t);
			h->domain_attr->av_type = (enum fi_av_type) v;
			snprintf(what, sizeof(what), "%s av_type %d", ep_name(t), v);
			info = OK(what, NULL, NULL, 0, h);
			for (struct fi_info *i = info; i; i = i->next)
				FT_CHECK(i->domain_attr->av_type == (enum fi_av_type) v, "%s: returned %d",
					 what, i->domain_attr->av_type);
			fi_freeinfo(info);
			fi_freeinfo(h);
		}
	}

	/* mr_mode: a set of bits that holds every bit the provider's entries
	 * carry is accepted; a provider that needs bits not offered answers
	 * -FI_ENODATA or entries that need none of them (verbs, for an
	 * application without RMA); nothing beyond the offered bits comes
	 * back. */
	static const int mr_modes[] = { 0, FI_MR_LOCAL, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
					 FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
						 FI_MR_ENDPOINT | FI_MR_RAW | FI_MR_MMU_NOTIFY };
	for (size_t m = 0; m < sizeof(mr_modes) / sizeof(mr_modes[0]); m++) {
		h = hints_for(t);
		h->domain_attr->mr_mode = mr_modes[m];
		snprintf(what, sizeof(what), "%s mr_mode 0x%x", ep_name(t), mr_modes[m]);
		if (limits[k].mr_mode & ~mr_modes[m]) {
			int rc = gi(NULL, NULL, 0, h, &info);
			FT_CHECK(rc == 0 || rc == -FI_ENODATA, "%s: fi_getinfo = %d", what, rc);
		} else {
			info = OK(what, NULL, NULL, 0, h);
		}
		for (struct fi_info *i = info; i; i = i->next)
			FT_CHECK((i->domain_attr->mr_mode & ~mr_modes[m]) == 0, "%s: returned mr_mode 0x%x",
				 what, i->domain_attr->mr_mode);
		fi_freeinfo(info);
		fi_freeinfo(h);
	}

	/* Mode bits: an application offering modes gets back at most those. */
	static const uint64_t modes[] = { 0, FI_CONTEXT, FI_CONTEXT | FI_CONTEXT2 | FI_ASYNC_IOV | FI_RX_CQ_DATA,
					  FI_MSG_PREFIX | FI_CONTEXT };
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		h = hints_for(t);
		h->mode = modes[m];
		snprintf(what, sizeof(what), "%s mode 0x%llx", ep_name(t), (unsigned long long) modes[m]);
		fi_freeinfo(OK(what, NULL, NULL, 0, h));
		fi_freeinfo(h);
	}

	h = hints_for(t);
	h->ep_attr->protocol = limits[k].protocol;
	snprintf(what, sizeof(what), "%s protocol %u", ep_name(t), limits[k].protocol);
	info = OK(what, NULL, NULL, 0, h);
	for (struct fi_info *i = info; i; i = i->next)
		FT_CHECK(i->ep_attr->protocol == limits[k].protocol, "%s: returned %u", what,
			 i->ep_attr->protocol);
	fi_freeinfo(info);
	h->ep_attr->protocol = FI_PROTO_IWARP;
	NODATA("protocol FI_PROTO_IWARP", NULL, NULL, 0, h);
	fi_freeinfo(h);
}

/* Names: matching names restrict the list, unknown names give -FI_ENODATA. */
static void check_names(int k)
{
	enum fi_ep_type t = ep_types[k];
	struct fi_info *h, *info;

	h = hints_for(t);
	h->domain_attr->name = strdup(limits[k].domain);
	info = OK("domain name of the first entry", NULL, NULL, 0, h);
	for (struct fi_info *i = info; i; i = i->next)
		FT_CHECK(strcmp(i->domain_attr->name, limits[k].domain) == 0, "domain %s returned for %s",
			 i->domain_attr->name, limits[k].domain);
	fi_freeinfo(info);
	free(h->domain_attr->name);
	h->domain_attr->name = strdup("no-such-domain0");
	NODATA("domain name no-such-domain0", NULL, NULL, 0, h);
	fi_freeinfo(h);

	h = hints_for(t);
	h->fabric_attr->name = strdup(limits[k].fabric);
	info = OK("fabric name of the first entry", NULL, NULL, 0, h);
	for (struct fi_info *i = info; i; i = i->next)
		FT_CHECK(strcmp(i->fabric_attr->name, limits[k].fabric) == 0, "fabric %s returned for %s",
			 i->fabric_attr->name, limits[k].fabric);
	fi_freeinfo(info);
	free(h->fabric_attr->name);
	h->fabric_attr->name = strdup("10.99.99.0/24");
	NODATA("fabric name 10.99.99.0/24", NULL, NULL, 0, h);
	fi_freeinfo(h);

	h = hints_for(t);
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = strdup("no-such-provider");
	NODATA("prov_name no-such-provider", NULL, NULL, 0, h);
	fi_freeinfo(h);
}

/* Tag format: the advertised format is accepted and returned unchanged. */
static void check_tags(int k)
{
	enum fi_ep_type t = ep_types[k];
	struct fi_info *h, *info;
	if (!(limits[k].caps & FI_TAGGED))
		return;
	h = hints_for(t);
	h->caps = FI_TAGGED;
	h->ep_attr->mem_tag_format = limits[k].tag_format;
	info = OK("mem_tag_format as advertised", NULL, NULL, 0, h);
	for (struct fi_info *i = info; i; i = i->next)
		FT_CHECK(i->ep_attr->mem_tag_format == limits[k].tag_format,
			 "%s: mem_tag_format 0x%llx, asked 0x%llx", ep_name(t),
			 (unsigned long long) i->ep_attr->mem_tag_format,
			 (unsigned long long) limits[k].tag_format);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

/* Addresses: node, service, FI_SOURCE, addr_format, FI_NUMERICHOST. */
static void check_addresses(void)
{
	struct fi_info *h, *info;
	int fam, port;

	/* node + service + FI_SOURCE: src_addr carries the port, no dest_addr. */
	h = hints_for(ft_ep_type);
	info = OK("node:4791 FI_SOURCE", ft_node, "4791", FI_SOURCE, h);
	for (struct fi_info *i = info; i; i = i->next) {
		fam = -1;
		port = addr_port(i->src_addr, i->src_addrlen, &fam);
		FT_CHECK(fam == AF_INET && port == 4791, "FI_SOURCE: src_addr family %d port %d", fam, port);
		FT_CHECK(fam != AF_INET ||
				 ((struct sockaddr_in *) i->src_addr)->sin_addr.s_addr == ft_node_in(),
			 "FI_SOURCE: src_addr is not the node");
		FT_CHECK(i->dest_addr == NULL && i->dest_addrlen == 0, "FI_SOURCE: dest_addr set");
		FT_CHECK(i->addr_format == FI_SOCKADDR_IN, "FI_SOURCE: addr_format %u", i->addr_format);
	}
	fi_freeinfo(info);

	/* service only + FI_SOURCE. */
	info = OK("service 4792 FI_SOURCE", NULL, "4792", FI_SOURCE, h);
	for (struct fi_info *i = info; i; i = i->next) {
		port = addr_port(i->src_addr, i->src_addrlen, &fam);
		FT_CHECK(port == 4792, "service-only FI_SOURCE: src_addr port %d", port);
		FT_CHECK(i->dest_addr == NULL, "service-only FI_SOURCE: dest_addr set");
	}
	fi_freeinfo(info);

	/* node + service without FI_SOURCE: dest_addr is the node. */
	info = OK("node:4793", ft_node, "4793", 0, h);
	for (struct fi_info *i = info; i; i = i->next) {
		fam = -1;
		port = addr_port(i->dest_addr, i->dest_addrlen, &fam);
		FT_CHECK(fam == AF_INET && port == 4793 && i->dest_addrlen == sizeof(struct sockaddr_in) &&
				 ((struct sockaddr_in *) i->dest_addr)->sin_addr.s_addr == ft_node_in(),
			 "dest_addr family %d port %d len %zu", fam, port, i->dest_addrlen);
	}
	fi_freeinfo(info);

	/* IPv6 node with FI_SOCKADDR_IN6. */
	h->addr_format = FI_SOCKADDR_IN6;
	info = OK("[node6]:4794 FI_SOCKADDR_IN6", ft_node6, "4794", 0, h);
	for (struct fi_info *i = info; i; i = i->next) {
		fam = -1;
		port = addr_port(i->dest_addr, i->dest_addrlen, &fam);
		FT_CHECK(i->addr_format == FI_SOCKADDR_IN6 && fam == AF_INET6 && port == 4794 &&
				 memcmp(&((struct sockaddr_in6 *) i->dest_addr)->sin6_addr, ft_node6_in().s6_addr,
					16) == 0,
			 "node6: addr_format %u family %d port %d", i->addr_format, fam, port);
	}
	fi_freeinfo(info);
	info = OK("[node6]:4795 FI_SOCKADDR_IN6 FI_SOURCE", ft_node6, "4795", FI_SOURCE, h);
	for (struct fi_info *i = info; i; i = i->next) {
		fam = -1;
		port = addr_port(i->src_addr, i->src_addrlen, &fam);
		FT_CHECK(fam == AF_INET6 && port == 4795 && i->dest_addr == NULL,
			 "node6 FI_SOURCE: family %d port %d", fam, port);
	}
	fi_freeinfo(info);
	/* No node: every entry has the requested format. */
	info = OK("FI_SOCKADDR_IN6 no node", NULL, NULL, 0, h);
	for (struct fi_info *i = info; i; i = i->next)
		FT_CHECK(i->addr_format == FI_SOCKADDR_IN6, "IN6 hint: addr_format %u", i->addr_format);
	fi_freeinfo(info);
	h->addr_format = FI_SOCKADDR_IN;
	info = OK("FI_SOCKADDR_IN no node", NULL, NULL, 0, h);
	for (struct fi_info *i = info; i; i = i->next)
		FT_CHECK(i->addr_format == FI_SOCKADDR_IN, "IN hint: addr_format %u", i->addr_format);
	fi_freeinfo(info);
	info = OK("FI_SOCKADDR_IN node", ft_node, NULL, 0, h);
	fi_freeinfo(info);
	/* An IPv6 node cannot be given an IPv4 address. */
	NODATA("FI_SOCKADDR_IN with an IPv6 node", ft_node6, "4797", 0, h);
	h->addr_format = FI_SOCKADDR_IB;
	NODATA("FI_SOCKADDR_IB", NULL, NULL, 0, h);
	h->addr_format = FI_ADDR_PSMX2;
	NODATA("FI_ADDR_PSMX2", NULL, NULL, 0, h);
	h->addr_format = FI_FORMAT_UNSPEC;

	/* src_addr given in the hints restricts to the interface that has it. */
	{
		struct sockaddr_in *sin = calloc(1, sizeof(*sin));
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = ft_node_in();
		h->src_addr = sin;
		h->src_addrlen = sizeof(*sin);
		h->addr_format = FI_SOCKADDR_IN;
		info = OK("hints src_addr node", NULL, NULL, 0, h);
		FT_CHECK(count(info) >= 1, "hints src_addr: no entry");
		for (struct fi_info *i = info; i; i = i->next)
			FT_CHECK(i->src_addr && ((struct sockaddr_in *) i->src_addr)->sin_addr.s_addr ==
							ft_node_in(),
				 "hints src_addr node: another source returned");
		fi_freeinfo(info);
	}
	fi_freeinfo(h);

	/* FI_SOURCE needs a node or a service (fi_getinfo(3), FLAGS). */
	h = hints_for(ft_ep_type);
	{
		int rc = gi(NULL, NULL, FI_SOURCE, h, &info);
		FT_CHECK(rc < 0 && info == NULL, "FI_SOURCE without node and service = %d, want an error", rc);
		fi_freeinfo(info);
	}
	fi_freeinfo(h);

	/* FI_NUMERICHOST: a numeric address is fine, a name is refused. */
	h = hints_for(ft_ep_type);
	info = NULL;
	FT_RC(gi(ft_node, "4796", FI_NUMERICHOST, h, &info), 0);
	fi_freeinfo(info);
	{
		int rc = gi("localhost", "4796", FI_NUMERICHOST, h, &info);
		FT_CHECK(rc < 0 && info == NULL, "FI_NUMERICHOST \"localhost\" = %d, want an error", rc);
		fi_freeinfo(info);
	}
	fi_freeinfo(h);
}

static void check_versions(void)
{
	struct fi_info *h = hints_for(ft_ep_type), *info = NULL;
	FT_RC(fi_getinfo(FI_VERSION(99, 0), NULL, NULL, 0, h, &info), -FI_ENOSYS);
	FT_RC(fi_getinfo(FI_VERSION(2, 99), NULL, NULL, 0, h, &info), -FI_ENOSYS);
	FT_RC(fi_getinfo(FI_VERSION(3, 0), NULL, NULL, 0, NULL, &info), -FI_ENOSYS);
	FT_RC(fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info), 0);
	if (info)
		FT_CHECK(info->fabric_attr->api_version == FI_VERSION(1, 5), "1.5 request: api_version %u.%u",
			 FI_MAJOR(info->fabric_attr->api_version), FI_MINOR(info->fabric_attr->api_version));
	fi_freeinfo(info);
	fi_freeinfo(h);
}

/*
 * FI_PROV_ATTR_ONLY: one bare entry for the provider carrying prov_name and
 * prov_version. (Upstream 1.17 ignores the hints here and lists every
 * provider, so only the entries of ours are counted.)
 */
static void check_prov_attr_only(void)
{
	struct fi_info *h = fi_allocinfo(), *info = NULL;
	int seen;
	h->fabric_attr->prov_name = strdup(ft_prov);
	for (int with_hints = 1; with_hints >= 0; with_hints--) {
		seen = 0;
		FT_RC(gi(NULL, NULL, FI_PROV_ATTR_ONLY, with_hints ? h : NULL, &info), 0);
		for (struct fi_info *i = info; i; i = i->next) {
			if (!is_prov(i))
				continue;
			seen++;
			FT_CHECK(i->fabric_attr->prov_version != 0, "FI_PROV_ATTR_ONLY: prov_version 0");
			FT_CHECK(i->fabric_attr->name == NULL && i->src_addr == NULL && i->dest_addr == NULL,
				 "FI_PROV_ATTR_ONLY: entry carries a fabric name or an address");
		}
		FT_CHECK(seen == 1, "FI_PROV_ATTR_ONLY (%s hints): %d %s entries, want 1",
			 with_hints ? "with" : "without", seen, ft_prov);
		fi_freeinfo(info);
	}
	fi_freeinfo(h);
}

int main(int argc, char **argv)
{
	ft_parse(argc, argv);
	learn_limits();
	for (int k = 0; k < 3; k++) {
		if (!limits[k].found)
			continue;
		struct fi_info *h = hints_for(ep_types[k]);
		fi_freeinfo(OK(ep_name(ep_types[k]), NULL, NULL, 0, h));
		fi_freeinfo(h);
		check_caps(k);
		check_sizes(k);
		check_domain_hints(k);
		check_names(k);
		check_tags(k);
	}
	{
		/* 1.x's FI_EP_SOCK_STREAM (4); the 2.x headers define the name
		 * as FI_EP_UNSPEC. No provider here offers that type. */
		struct fi_info *h = hints_for((enum fi_ep_type) 4);
		NODATA("FI_EP_SOCK_STREAM (4)", NULL, NULL, 0, h);
		fi_freeinfo(h);
	}
	check_addresses();
	check_versions();
	check_prov_attr_only();
	FT_CHECK(nodata_left_info == 0, "%d of %d calls returning -FI_ENODATA did not set *info to NULL",
		 nodata_left_info, nodata_calls);
	{
		struct fi_info *d = fi_dupinfo(NULL);
		FT_CHECK(d && d->tx_attr && d->fabric_attr && d->caps == 0, "fi_dupinfo(NULL) gives an empty info");
		fi_freeinfo(d);
	}
	return ft_report("fi_getinfo_test");
}
