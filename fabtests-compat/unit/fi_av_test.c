/*
 * fi_av_test: address vectors (fi_av(3)) of both types, FI_AV_MAP and
 * FI_AV_TABLE, on RDM and DGRAM domains.
 *
 *  -m sync: synchronous inserts return the count inserted; an insert of
 *     zero addresses returns 0; a vector with good and bad addresses
 *     inserts the good ones (fi_av_lookup gives them back) and sets the
 *     bad ones' fi_addr to FI_ADDR_NOTAVAIL; with FI_SYNC_ERR the caller's
 *     int array gets 0 for each good address and an error code for each
 *     bad one.
 *  -m event: an AV opened with FI_EVENT refuses inserts with -FI_ENOEQ
 *     until an EQ is bound; then each insert returns 0 and produces, on
 *     the EQ, one error entry per bad address (context the insert's,
 *     data the address's index, err set) followed by one FI_AV_COMPLETE
 *     (context the insert's, data the count inserted), also for an insert
 *     of zero addresses and for one whose addresses are all good.
 *  -m legacy: insert, lookup, straddr, remove, FI_SYNC_ERR, insertsvc,
 *     insertsym, the FI_EVENT flag given to fi_av_insert, fi_close of an
 *     EQ still bound to an AV, fi_rx_addr, on the -e endpoint type.
 *  -m all (the default): legacy and sync. -m all+event: all three.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "common.h"
#include <arpa/inet.h>
#include <netinet/in.h>

static struct sockaddr_in sin_of(uint16_t port)
{
	struct sockaddr_in s;
	memset(&s, 0, sizeof(s));
	s.sin_family = AF_INET;
	s.sin_port = htons(port);
	s.sin_addr.s_addr = htonl(0x7f000001);
	return s;
}

/* The address formats the AV sees are the domain's (FI_SOCKADDR_IN on
 * loopback); an address whose family is none the provider knows is the
 * "bad" one of a vector. */
static struct sockaddr_in bad_sin(void)
{
	struct sockaddr_in s = sin_of(9);
	s.sin_family = 0xffff;
	return s;
}

static const char *av_type_name(enum fi_av_type t)
{
	return t == FI_AV_MAP ? "map" : "table";
}

/* Checks the fi_addr values after an insert of `n` addresses of which those
 * with bad[i] set failed, then that fi_av_lookup gives back each good one. */
static void check_inserted(struct fid_av *av, const struct sockaddr_in *a, const int *bad, const fi_addr_t *fa,
			   size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		struct sockaddr_in out;
		size_t len = sizeof(out);
		if (bad[i]) {
			FT_CHECK(fa[i] == FI_ADDR_NOTAVAIL, "%s: fi_addr[%zu] of a failed address is %#llx, want FI_ADDR_NOTAVAIL",
				 what, i, (unsigned long long) fa[i]);
			continue;
		}
		FT_CHECK(fa[i] != FI_ADDR_NOTAVAIL, "%s: fi_addr[%zu] of a good address is FI_ADDR_NOTAVAIL", what, i);
		if (fa[i] == FI_ADDR_NOTAVAIL)
			continue;
		memset(&out, 0, sizeof(out));
		FT_RC(fi_av_lookup(av, fa[i], &out, &len), 0);
		FT_CHECK(out.sin_family == AF_INET && out.sin_port == a[i].sin_port &&
				 out.sin_addr.s_addr == a[i].sin_addr.s_addr,
			 "%s: fi_av_lookup(fi_addr[%zu]) gives family %d port %u, want the inserted port %u", what, i,
			 out.sin_family, ntohs(out.sin_port), ntohs(a[i].sin_port));
	}
}

/* FI_EVENT AV: reads what one insert produced on `eq`, bounded: `nbad`
 * error entries (context `ctx`, data = the failed address's index, which
 * must be one with bad[] set, a nonzero err), then one FI_AV_COMPLETE with
 * context `ctx` and data = `good`. Returns 0 when no FI_AV_COMPLETE came
 * (then later inserts on this AV are not waited for). */
static int expect_av_events(struct fid_eq *eq, void *ctx, const int *bad, size_t n, size_t good, const char *what)
{
	size_t nbad = 0, errs = 0;
	int seen[16] = { 0 };
	double end = ft_now() + 5.0;
	for (size_t i = 0; i < n; i++)
		nbad += bad[i] != 0;
	while (ft_now() < end) {
		struct fi_eq_entry e;
		uint32_t ev = 0;
		ssize_t r = fi_eq_sread(eq, &ev, &e, sizeof(e), 100, 0);
		if (r == -FI_EAGAIN || r == -FI_ETIMEDOUT)
			continue;
		if (r == -FI_EAVAIL) {
			struct fi_eq_err_entry err;
			memset(&err, 0, sizeof(err));
			r = fi_eq_readerr(eq, &err, 0);
			FT_CHECK(r == sizeof(err), "%s: fi_eq_readerr = %zd", what, r);
			if (r != sizeof(err))
				return 0;
			errs++;
			FT_CHECK(err.context == ctx, "%s: error entry context %p, want the insert's %p", what, err.context,
				 ctx);
			FT_CHECK(err.err != 0, "%s: error entry with err 0", what);
			FT_CHECK(err.data < n && bad[err.data], "%s: error entry for index %llu, which is not a bad address",
				 what, (unsigned long long) err.data);
			if (err.data < n && err.data < 16)
				seen[err.data]++;
			continue;
		}
		FT_CHECK(r == sizeof(e), "%s: fi_eq_sread = %zd (%s), want an FI_AV_COMPLETE entry", what, r,
			 r < 0 ? fi_strerror((int) -r) : "short");
		if (r != sizeof(e))
			return 0;
		FT_CHECK(ev == FI_AV_COMPLETE, "%s: event %u, want FI_AV_COMPLETE (%u)", what, ev, FI_AV_COMPLETE);
		FT_CHECK(e.context == ctx, "%s: FI_AV_COMPLETE context %p, want the insert's %p", what, e.context, ctx);
		FT_CHECK(e.data == good, "%s: FI_AV_COMPLETE data (inserted count) %llu, want %zu", what,
			 (unsigned long long) e.data, good);
		FT_CHECK(errs == nbad, "%s: %zu error entries before FI_AV_COMPLETE, want %zu", what, errs, nbad);
		for (size_t i = 0; i < n && i < 16; i++)
			if (bad[i])
				FT_CHECK(seen[i] == 1, "%s: %d error entries for bad index %zu, want 1", what, seen[i], i);
		return 1;
	}
	FT_CHECK(0, "%s: no FI_AV_COMPLETE within 5 s (%zu error entries seen)", what, errs);
	return 0;
}

/* Fabric and domain for `type` (fresh; ft_open's globals are reused). */
static int open_for(enum fi_ep_type type)
{
	ft_ep_type = type;
	ft_info = NULL;
	ft_fabric = NULL;
	ft_domain = NULL;
	return ft_open();
}

static void close_domain(void)
{
	ft_close();
	ft_info = NULL;
	ft_fabric = NULL;
	ft_domain = NULL;
}

static void sync_checks(const char *ep, enum fi_av_type type)
{
	struct sockaddr_in a[3] = { sin_of(1100), sin_of(1101), sin_of(1102) };
	struct sockaddr_in v[3] = { sin_of(1200), bad_sin(), sin_of(1202) };
	int none[3] = { 0, 0, 0 }, bad[3] = { 0, 1, 0 };
	struct fi_av_attr attr;
	struct fid_av *av;
	fi_addr_t fa[3];
	char what[96];
	int errs[3];
	int rc;

	memset(&attr, 0, sizeof(attr));
	attr.type = type;
	attr.count = 16;
	if ((rc = fi_av_open(ft_domain, &attr, &av, NULL))) {
		FT_CHECK(0, "%s/%s: fi_av_open: %s", ep, av_type_name(type), fi_strerror(-rc));
		return;
	}
	snprintf(what, sizeof(what), "%s/%s sync insert of 3", ep, av_type_name(type));
	FT_RC(fi_av_insert(av, a, 3, fa, 0, NULL), 3);
	check_inserted(av, a, none, fa, 3, what);
	FT_RC(fi_av_insert(av, a, 0, fa, 0, NULL), 0);

	snprintf(what, sizeof(what), "%s/%s sync good/bad/good", ep, av_type_name(type));
	fa[0] = fa[1] = fa[2] = 0;
	rc = fi_av_insert(av, v, 3, fa, 0, NULL);
	FT_CHECK(rc == 2, "%s: fi_av_insert = %d (%s), want 2 (the good ones)", what, rc, rc < 0 ? fi_strerror(-rc) : "count");
	check_inserted(av, v, bad, fa, 3, what);

	snprintf(what, sizeof(what), "%s/%s FI_SYNC_ERR good/bad/good", ep, av_type_name(type));
	fa[0] = fa[1] = fa[2] = 0;
	errs[0] = errs[1] = errs[2] = -12345;
	v[0] = sin_of(1300);
	v[2] = sin_of(1302);
	rc = fi_av_insert(av, v, 3, fa, FI_SYNC_ERR, errs);
	FT_CHECK(rc == 2, "%s: fi_av_insert = %d (%s), want 2", what, rc, rc < 0 ? fi_strerror(-rc) : "count");
	FT_CHECK(errs[0] == 0 && errs[2] == 0, "%s: error array for the good addresses %d, %d, want 0, 0", what,
		 errs[0], errs[2]);
	FT_CHECK(errs[1] != 0 && errs[1] != -12345, "%s: error array for the bad address %d, want an error code", what,
		 errs[1]);
	check_inserted(av, v, bad, fa, 3, what);
	FT_RC(fi_close(&av->fid), 0);
}

static void event_checks(const char *ep, enum fi_av_type type)
{
	struct sockaddr_in a[3] = { sin_of(2100), sin_of(2101), sin_of(2102) };
	struct sockaddr_in v[4] = { sin_of(2200), bad_sin(), sin_of(2202), bad_sin() };
	int none[4] = { 0, 0, 0, 0 }, bad[4] = { 0, 1, 0, 1 };
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr attr;
	struct fid_av *av;
	struct fid_eq *eq;
	fi_addr_t fa[4];
	char what[96];
	int ctx[3];
	int rc;

	memset(&attr, 0, sizeof(attr));
	attr.type = type;
	attr.count = 16;
	attr.flags = FI_EVENT;
	if ((rc = fi_av_open(ft_domain, &attr, &av, NULL))) {
		FT_CHECK(0, "%s/%s: fi_av_open(FI_EVENT): %s", ep, av_type_name(type), fi_strerror(-rc));
		return;
	}
	rc = fi_av_insert(av, a, 1, fa, 0, &ctx[0]);
	FT_CHECK(rc == -FI_ENOEQ, "%s/%s FI_EVENT: insert before fi_av_bind = %d (%s), want -FI_ENOEQ", ep,
		 av_type_name(type), rc, rc < 0 ? fi_strerror(-rc) : "count");
	if ((rc = fi_eq_open(ft_fabric, &ea, &eq, NULL))) {
		FT_CHECK(0, "fi_eq_open: %s", fi_strerror(-rc));
		fi_close(&av->fid);
		return;
	}
	FT_RC(fi_av_bind(av, &eq->fid, 0), 0);

	snprintf(what, sizeof(what), "%s/%s FI_EVENT insert of 3", ep, av_type_name(type));
	rc = fi_av_insert(av, a, 3, fa, 0, &ctx[0]);
	FT_CHECK(rc == 0, "%s: fi_av_insert = %d, want 0 (initiated)", what, rc);
	if (rc < 0 || !expect_av_events(eq, &ctx[0], none, 3, 3, what))
		goto out;
	check_inserted(av, a, none, fa, 3, what);

	snprintf(what, sizeof(what), "%s/%s FI_EVENT insert of 0", ep, av_type_name(type));
	rc = fi_av_insert(av, a, 0, fa, 0, &ctx[1]);
	FT_CHECK(rc == 0, "%s: fi_av_insert = %d, want 0", what, rc);
	if (rc < 0 || !expect_av_events(eq, &ctx[1], none, 0, 0, what))
		goto out;

	snprintf(what, sizeof(what), "%s/%s FI_EVENT good/bad/good/bad", ep, av_type_name(type));
	rc = fi_av_insert(av, v, 4, fa, 0, &ctx[2]);
	FT_CHECK(rc == 0, "%s: fi_av_insert = %d, want 0", what, rc);
	if (rc < 0 || !expect_av_events(eq, &ctx[2], bad, 4, 2, what))
		goto out;
	check_inserted(av, v, bad, fa, 4, what);
out:
	FT_RC(fi_close(&av->fid), 0);
	FT_RC(fi_close(&eq->fid), 0);
}

/* The checks of the first version of this program, on -e's type. */
static void legacy_checks(void)
{
	enum fi_av_type types[] = { FI_AV_MAP, FI_AV_TABLE };

	for (int t = 0; t < 2; t++) {
		struct fi_av_attr attr;
		struct fid_av *av;
		struct sockaddr_in a[3] = { sin_of(1000), sin_of(1001), sin_of(1002) }, out;
		fi_addr_t fa[3];
		size_t len = sizeof(out);
		char buf[64];

		memset(&attr, 0, sizeof(attr));
		attr.type = types[t];
		FT_RC(fi_av_open(ft_domain, &attr, &av, NULL), 0);
		FT_RC(fi_av_insert(av, a, 3, fa, 0, NULL), 3);
		FT_RC(fi_av_lookup(av, fa[1], &out, &len), 0);
		FT_CHECK(len == sizeof(out) && out.sin_port == htons(1001), "lookup returns the address");
		len = sizeof(buf);
		FT_CHECK(fi_av_straddr(av, &a[2], buf, &len) == buf &&
			 strcmp(buf, "fi_sockaddr_in://127.0.0.1:1002") == 0, "straddr '%s'", buf);
		FT_RC(fi_av_remove(av, &fa[0], 1, 0), 0);
		len = sizeof(out);
		FT_CHECK(fi_av_lookup(av, fa[0], &out, &len) < 0, "removed address is gone");
		/* An index that never held an address: -FI_EINVAL, as upstream's
		 * utility AV answers and its fabtests' av_lookup_bad asks. */
		if (attr.type == FI_AV_TABLE) {
			len = sizeof(out);
			FT_RC(fi_av_lookup(av, (fi_addr_t) 7, &out, &len), -FI_EINVAL);
		}
		FT_RC(fi_av_insertsvc(av, "127.0.0.1", "2000", &fa[0], 0, NULL), 1);
		FT_RC(fi_av_insertsym(av, "127.0.0.1", 2, "3000", 2, fa, 0, NULL), 4);
		/* FI_SYNC_ERR: one bad address among good ones. */
		{
			struct sockaddr_in two[2] = { sin_of(4000), sin_of(4001) };
			int errs[2] = { -1, -1 };
			two[1].sin_family = 0xffff;
			int n = fi_av_insert(av, two, 2, fa, FI_SYNC_ERR, errs);
			FT_CHECK(n == 1 && errs[0] == 0 && errs[1] != 0 && fa[1] == FI_ADDR_NOTAVAIL,
				 "FI_SYNC_ERR: n=%d errs=%d,%d", n, errs[0], errs[1]);
		}
		/* FI_EVENT: completion reported on the bound EQ. */
		{
			struct fi_eq_attr ea = { .wait_obj = FI_WAIT_UNSPEC };
			struct fid_eq *eq;
			struct fi_eq_entry e;
			uint32_t ev;
			FT_RC(fi_eq_open(ft_fabric, &ea, &eq, NULL), 0);
			FT_RC(fi_av_bind(av, &eq->fid, 0), 0);
			FT_RC(fi_av_insert(av, a, 2, fa, FI_EVENT, &e), 0);
			FT_CHECK(fi_eq_sread(eq, &ev, &e, sizeof(e), 1000, 0) == sizeof(e) &&
				 ev == FI_AV_COMPLETE && e.data == 2, "FI_AV_COMPLETE with count 2");
			FT_RC(fi_close(&eq->fid), -FI_EBUSY);
			FT_RC(fi_close(&av->fid), 0);
			FT_RC(fi_close(&eq->fid), 0);
		}
	}
	FT_CHECK(fi_rx_addr(5, 3, 4) == ((3ULL << 60) | 5), "fi_rx_addr");
}

int main(int argc, char **argv)
{
	static const enum fi_ep_type eps[] = { FI_EP_RDM, FI_EP_DGRAM };
	static const enum fi_av_type avs[] = { FI_AV_MAP, FI_AV_TABLE };
	enum fi_ep_type legacy_type = FI_EP_RDM;
	const char *mode = "all";
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);

	while ((c = getopt(argc, argv, "p:e:m:s:6:")) != -1) {
		if (c == 'p')
			ft_prov = optarg;
		else if (c == 's')
			ft_node = optarg;
		else if (c == 'e')
			legacy_type = !strcmp(optarg, "msg") ? FI_EP_MSG : !strcmp(optarg, "dgram") ? FI_EP_DGRAM : FI_EP_RDM;
		else if (c == 'm')
			mode = optarg;
	}
	int do_legacy = !strcmp(mode, "legacy") || !strncmp(mode, "all", 3);
	int do_sync = !strcmp(mode, "sync") || !strncmp(mode, "all", 3);
	int do_event = !strcmp(mode, "event") || !strcmp(mode, "all+event");
	for (unsigned e = 0; e < 2 && (do_sync || do_event); e++) {
		const char *ep = eps[e] == FI_EP_RDM ? "rdm" : "dgram";
		int rc = open_for(eps[e]);
		if (rc == -FI_ENODATA) {
			printf("%s has no %s endpoints: their cases are skipped\n", ft_prov, ep);
			close_domain();
			continue;
		}
		if (rc) {
			FT_CHECK(0, "no %s domain from provider %s: %s", ep, ft_prov, fi_strerror(-rc));
			close_domain();
			continue;
		}
		for (unsigned t = 0; t < 2; t++) {
			if (do_sync)
				sync_checks(ep, avs[t]);
			if (do_event)
				event_checks(ep, avs[t]);
		}
		close_domain();
	}
	/* Printed before the legacy checks, which crash some providers. */
	fflush(stdout);
	if (do_legacy) {
		if (open_for(legacy_type))
			return 1;
		legacy_checks();
		close_domain();
	}
	if (!ft_checks) {
		printf("SKIP: %s lacks rdm and dgram endpoints\n", ft_prov);
		return 77;
	}
	return ft_report("fi_av_test");
}
