/*
 * fi_mr_test: memory registration (fi_mr(3)) under every mr_mode the
 * provider reports. For each set of mr_mode hints (none; every bit the
 * application can follow; each bit alone; API 1.4 with FI_MR_BASIC,
 * FI_MR_SCALABLE and FI_MR_UNSPEC) it checks what fi_getinfo answers (only
 * bits the application offered, FI_MR_BASIC kept as is, a pre-1.5 API
 * answered with FI_MR_BASIC or FI_MR_SCALABLE) and, on a domain opened
 * with that answer:
 *
 *  - fi_mr_reg / fi_mr_regv (iov_count 1..mr_iov_limit) / fi_mr_regattr,
 *    with each access flag; fi_mr_key (the requested key unless
 *    FI_MR_PROV_KEY or basic registration; distinct provider keys);
 *    fi_mr_desc; fi_close;
 *  - a requested key already in use: -FI_ENOKEY; free again once its MR is
 *    closed; a key wider than mr_key_size: -FI_EKEYREJECTED; unknown flags:
 *    -FI_EBADFLAGS; iov_count above mr_iov_limit: an error;
 *  - fi_mr_bind to a counter (FI_REMOTE_WRITE) of an MR registered with
 *    FI_RMA_EVENT, then fi_mr_enable (or -FI_ENOSYS where the provider
 *    reports no RMA events); fi_mr_bind to an endpoint and fi_mr_enable
 *    under FI_MR_ENDPOINT; fi_mr_refresh (0, or -FI_ENOSYS unless
 *    FI_MR_MMU_NOTIFY); fi_mr_raw_attr (-FI_ETOOSMALL and the needed size
 *    for a short buffer) with fi_mr_map_raw / fi_mr_unmap_key;
 *  - on an RDM endpoint talking to itself, an fi_write and fi_read into the
 *    MR through the key and address the mode prescribes (virtual address
 *    or offset from 0), every byte checked, including a region registered
 *    with fi_mr_regv.
 *
 * A provider without FI_RMA makes the program print "SKIP: <prov> lacks
 * FI_RMA" and exit 77.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "common.h"
#include <stdint.h>
#include <rdma/fi_rma.h>

#define BUF (64 * 1024)
#define CHK_CQ_TIMEOUT 10.0

static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_av *av;
static fi_addr_t self = FI_ADDR_UNSPEC;

struct mode_case {
	uint32_t version;
	uint64_t mr_mode;
	const char *label;
};

static struct fi_info *getinfo(uint32_t version, int mr_mode, int *rc)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	hints->fabric_attr->prov_name = strdup(ft_prov);
	hints->ep_attr->type = ft_ep_type;
	hints->caps = FI_MSG | FI_RMA;
	hints->mode = FI_LOCAL_MR; /* honoured: descriptors are passed */
	hints->domain_attr->mr_mode = mr_mode;
	/* the self-RMA endpoint binds ft_node (-s; loopback by default) */
	*rc = fi_getinfo(version, ft_node, NULL, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	return info;
}

/* The mr_mode bits the application must follow on this domain. */
static uint64_t effective(const struct fi_info *info)
{
	uint64_t m = (uint64_t) info->domain_attr->mr_mode;
	if (m == FI_MR_BASIC)
		m = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | ((info->mode & FI_LOCAL_MR) ? FI_MR_LOCAL : 0);
	else if (m == FI_MR_SCALABLE)
		m = (info->mode & FI_LOCAL_MR) ? FI_MR_LOCAL : 0;
	return m;
}

/* Retries a post on -FI_EAGAIN while driving progress, bounded. */
#define POST_RETRY(call) \
	({ \
		ssize_t r_; \
		double end_ = ft_now() + CHK_CQ_TIMEOUT; \
		while ((r_ = (call)) == -FI_EAGAIN && ft_now() < end_) \
			(void) fi_cq_read(cq, NULL, 0); \
		r_; \
	})

static int wait_cq(const char *what)
{
	struct fi_cq_entry e;
	struct fi_cq_err_entry err;
	double end = ft_now() + CHK_CQ_TIMEOUT;
	while (ft_now() < end) {
		ssize_t n = fi_cq_read(cq, &e, 1);
		if (n == 1)
			return 0;
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			FT_CHECK(0, "%s: error completion %s", what, fi_strerror(err.err));
			return -1;
		}
		if (n != -FI_EAGAIN) {
			FT_CHECK(0, "%s: fi_cq_read = %zd", what, n);
			return -1;
		}
	}
	FT_CHECK(0, "%s: no completion within %.0f s", what, CHK_CQ_TIMEOUT);
	return -1;
}

/* Opens an RDM endpoint that has its own address in its AV. */
static int open_self(void)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE, .size = 64 };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	char name[256];
	size_t len = sizeof(name);
	if (ft_ep_type != FI_EP_RDM)
		return -1;
	FT_RC(fi_cq_open(ft_domain, &ca, &cq, NULL), 0);
	FT_RC(fi_av_open(ft_domain, &aa, &av, NULL), 0);
	FT_RC(fi_endpoint(ft_domain, ft_info, &ep, NULL), 0);
	if (!cq || !av || !ep)
		return -1;
	FT_RC(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	FT_RC(fi_ep_bind(ep, &av->fid, 0), 0);
	FT_RC(fi_enable(ep), 0);
	FT_RC(fi_getname(&ep->fid, name, &len), 0);
	FT_RC(fi_av_insert(av, name, 1, &self, 0, NULL), 1);
	return 0;
}

static void close_self(void)
{
	if (ep)
		fi_close(&ep->fid);
	if (av)
		fi_close(&av->fid);
	if (cq)
		fi_close(&cq->fid);
	ep = NULL, av = NULL, cq = NULL;
}

/* Makes a fresh MR usable under `mode` (FI_MR_ENDPOINT: bind + enable). */
static void activate(struct fid_mr *mr, uint64_t mode, const char *what)
{
	if (!(mode & FI_MR_ENDPOINT) || !ep)
		return;
	FT_CHECK(fi_mr_bind(mr, &ep->fid, 0) == 0, "%s: fi_mr_bind(endpoint) failed", what);
	FT_CHECK(fi_mr_enable(mr) == 0, "%s: fi_mr_enable after binding to the endpoint failed", what);
}

/* Writes `len` bytes into the target MR through (addr, key), reads them
 * back into a second buffer, checks both. `tgt` is where byte 0 of the
 * target address lands in memory. */
static void self_rma(const char *label, uint64_t mode, char *tgt, uint64_t addr, uint64_t key, size_t len)
{
	static char src[BUF], back[BUF];
	struct fid_mr *lmr = NULL;
	void *desc = NULL;
	int bad = 0;
	if (!ep)
		return;
	if (mode & FI_MR_LOCAL) {
		FT_RC(fi_mr_reg(ft_domain, src, sizeof(src), FI_WRITE | FI_READ, 0, 0x7770, 0, &lmr, NULL), 0);
		if (!lmr)
			return;
		activate(lmr, mode, "local MR");
		desc = fi_mr_desc(lmr);
	}
	for (size_t i = 0; i < len; i++)
		src[i] = (char) (i * 13 + 7);
	memset(tgt, 0, len + 16);
	FT_RC(POST_RETRY(fi_write(ep, src, len, desc, self, addr, key, NULL)), 0);
	if (!wait_cq("self fi_write")) {
		for (size_t i = 0; i < len && !bad; i++)
			bad = tgt[i] != src[i];
		FT_CHECK(!bad, "%s: fi_write to (addr %#llx, key %#llx) did not land at the registered bytes", label,
			 (unsigned long long) addr, (unsigned long long) key);
		FT_CHECK(tgt[len] == 0, "%s: fi_write wrote past its length", label);
	}
	if (mode & FI_MR_LOCAL) {
		/* the read lands in src too (registered) */
		memset(src, 0, len);
		FT_RC(POST_RETRY(fi_read(ep, src, len, desc, self, addr, key, NULL)), 0);
		if (!wait_cq("self fi_read"))
			FT_CHECK(!memcmp(src, tgt, len), "%s: fi_read returned other bytes than the MR holds", label);
		fi_close(&lmr->fid);
	} else {
		memset(back, 0, len);
		FT_RC(POST_RETRY(fi_read(ep, back, len, NULL, self, addr, key, NULL)), 0);
		if (!wait_cq("self fi_read"))
			FT_CHECK(!memcmp(back, tgt, len), "%s: fi_read returned other bytes than the MR holds", label);
	}
}

static void api_checks(const char *label, uint64_t mode, const struct fi_info *info)
{
	static char buf[4][BUF];
	uint64_t all = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	static const uint64_t access[] = { FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE,
					   FI_REMOTE_READ | FI_REMOTE_WRITE };
	int prov_key = (mode & FI_MR_PROV_KEY) != 0;
	uint64_t base = (mode & FI_MR_VIRT_ADDR) ? (uint64_t) (uintptr_t) buf[0] : 0;
	size_t key_size = info->domain_attr->mr_key_size, iov_limit = info->domain_attr->mr_iov_limit;
	struct fid_mr *mr = NULL, *mr2 = NULL, *mr3 = NULL;
	int rc;

	/* fi_mr_reg with each access flag */
	for (unsigned i = 0; i < sizeof(access) / sizeof(access[0]); i++) {
		struct fid_mr *m = NULL;
		rc = fi_mr_reg(ft_domain, buf[1], 4096, access[i], 0, 0x100 + i, 0, &m, NULL);
		FT_CHECK(rc == 0, "%s: fi_mr_reg(access %#llx) = %d (%s)", label, (unsigned long long) access[i], rc,
			 fi_strerror(-rc));
		if (!rc) {
			if (!prov_key)
				FT_CHECK(fi_mr_key(m) == 0x100 + i, "%s: fi_mr_key %#llx, requested %#x", label,
					 (unsigned long long) fi_mr_key(m), 0x100 + i);
			FT_RC(fi_close(&m->fid), 0);
		}
	}

	/* the requested key, and the same key again */
	rc = fi_mr_reg(ft_domain, buf[0], BUF, all, 0, 0x42, 0, &mr, NULL);
	FT_CHECK(rc == 0, "%s: fi_mr_reg = %d (%s)", label, rc, fi_strerror(-rc));
	if (rc)
		return;
	activate(mr, mode, label);
	if (!prov_key) {
		FT_CHECK(fi_mr_key(mr) == 0x42, "%s: fi_mr_key = %#llx, requested 0x42", label,
			 (unsigned long long) fi_mr_key(mr));
		rc = fi_mr_reg(ft_domain, buf[2], BUF, all, 0, 0x42, 0, &mr2, NULL);
		FT_CHECK(rc == -FI_ENOKEY, "%s: fi_mr_reg with a key in use = %d (%s), want -FI_ENOKEY", label, rc,
			 fi_strerror(-rc));
		if (!rc)
			fi_close(&mr2->fid);
		mr2 = NULL;
		if (key_size < 8) {
			uint64_t wide = 1ULL << (8 * key_size);
			rc = fi_mr_reg(ft_domain, buf[2], BUF, all, 0, wide, 0, &mr2, NULL);
			FT_CHECK(rc == -FI_EKEYREJECTED, "%s: key %#llx wider than mr_key_size %zu: %d, want -FI_EKEYREJECTED",
				 label, (unsigned long long) wide, key_size, rc);
			if (!rc)
				fi_close(&mr2->fid);
			mr2 = NULL;
		}
	} else {
		rc = fi_mr_reg(ft_domain, buf[2], BUF, all, 0, 0x42, 0, &mr2, NULL);
		FT_CHECK(rc == 0, "%s: FI_MR_PROV_KEY: the requested key must be ignored, fi_mr_reg = %d", label, rc);
		if (!rc) {
			FT_CHECK(fi_mr_key(mr2) != fi_mr_key(mr), "%s: two MRs with the provider key %#llx", label,
				 (unsigned long long) fi_mr_key(mr));
			fi_close(&mr2->fid);
		}
		mr2 = NULL;
	}
	FT_CHECK(fi_mr_key(mr) != FI_KEY_NOTAVAIL || (mode & FI_MR_RAW), "%s: fi_mr_key = FI_KEY_NOTAVAIL", label);
	(void) fi_mr_desc(mr);

	/* a flag fi_mr(3) does not list for registration */
	rc = fi_mr_reg(ft_domain, buf[3], BUF, all, 0, 0x43, 1ULL << 61, &mr3, NULL);
	FT_CHECK(rc == -FI_EBADFLAGS, "%s: fi_mr_reg with flag bit 61 (not a registration flag) = %d (%s), want -FI_EBADFLAGS", label, rc,
		 fi_strerror(-rc));
	if (!rc)
		fi_close(&mr3->fid);
	mr3 = NULL;

	/* writes and reads through the key and the address the mode gives */
	self_rma(label, mode, buf[0] + 100, base + 100, fi_mr_key(mr), 5000);

	/* fi_mr_raw_attr / fi_mr_map_raw / fi_mr_unmap_key */
	{
		uint8_t raw[64];
		uint64_t addr = 0, mapped = 0;
		size_t ks = 0;
		rc = fi_mr_raw_attr(mr, &addr, raw, &ks, 0);
		if (rc == -FI_ENOSYS && !(mode & FI_MR_RAW)) {
			printf("%s: fi_mr_raw_attr not supported (FI_MR_RAW not set)\n", label);
		} else {
			FT_CHECK(rc == -FI_ETOOSMALL && ks > 0, "%s: fi_mr_raw_attr with key_size 0 = %d, key_size %zu; "
				 "want -FI_ETOOSMALL and the needed size", label, rc, ks);
			ks = sizeof(raw);
			FT_RC(fi_mr_raw_attr(mr, &addr, raw, &ks, 0), 0);
			rc = fi_mr_map_raw(ft_domain, addr, raw, ks, &mapped, 0);
			FT_CHECK(rc == 0, "%s: fi_mr_map_raw = %d", label, rc);
			if (!rc) {
				if (!(mode & FI_MR_RAW))
					FT_CHECK(mapped == fi_mr_key(mr), "%s: mapped raw key %#llx, fi_mr_key %#llx",
						 label, (unsigned long long) mapped, (unsigned long long) fi_mr_key(mr));
				FT_RC(fi_mr_unmap_key(ft_domain, mapped), 0);
			}
		}
	}

	/* fi_mr_refresh */
	{
		struct iovec iov = { buf[0], 4096 };
		rc = fi_mr_refresh(mr, &iov, 1, 0);
		FT_CHECK(rc == 0 || (rc == -FI_ENOSYS && !(mode & FI_MR_MMU_NOTIFY)),
			 "%s: fi_mr_refresh = %d (%s), want 0 (or -FI_ENOSYS without FI_MR_MMU_NOTIFY)", label, rc,
			 fi_strerror(-rc));
	}
	FT_RC(fi_close(&mr->fid), 0);
	mr = NULL;

	/* the key is free again */
	if (!prov_key) {
		rc = fi_mr_reg(ft_domain, buf[2], BUF, all, 0, 0x42, 0, &mr2, NULL);
		FT_CHECK(rc == 0, "%s: fi_mr_reg with the key of a closed MR = %d (%s)", label, rc, fi_strerror(-rc));
		if (!rc)
			FT_RC(fi_close(&mr2->fid), 0);
		mr2 = NULL;
	}

	/* fi_mr_regv, iov_count 1..limit, then limit + 1 */
	{
		struct iovec iov[8];
		size_t n = iov_limit < 4 ? iov_limit : 4;
		FT_CHECK(iov_limit >= 1, "%s: mr_iov_limit %zu", label, iov_limit);
		for (size_t i = 0; i < 8; i++) {
			iov[i].iov_base = buf[0] + i * 8192;
			iov[i].iov_len = 4096;
		}
		for (size_t c = 1; c <= n; c++) {
			rc = fi_mr_regv(ft_domain, iov, c, all, 0, 0x200 + c, 0, &mr, NULL);
			FT_CHECK(rc == 0, "%s: fi_mr_regv(iov_count %zu) = %d (%s)", label, c, rc, fi_strerror(-rc));
			if (rc)
				continue;
			if (!prov_key)
				FT_CHECK(fi_mr_key(mr) == 0x200 + c, "%s: fi_mr_regv key %#llx", label,
					 (unsigned long long) fi_mr_key(mr));
			if (c == 1) {
				activate(mr, mode, label);
				self_rma("fi_mr_regv(1)", mode, buf[0] + 8, base + 8, fi_mr_key(mr), 4000);
			}
			FT_RC(fi_close(&mr->fid), 0);
		}
		if (iov_limit < 8) {
			rc = fi_mr_regv(ft_domain, iov, iov_limit + 1, all, 0, 0x2ff, 0, &mr, NULL);
			FT_CHECK(rc < 0, "%s: fi_mr_regv(iov_count %zu > mr_iov_limit %zu) = %d, want an error", label,
				 iov_limit + 1, iov_limit, rc);
			if (!rc)
				fi_close(&mr->fid);
		}
		mr = NULL;
	}

	/* fi_mr_regattr */
	{
		struct iovec iov = { buf[3], BUF };
		struct fi_mr_attr attr;
		memset(&attr, 0, sizeof(attr));
		attr.mr_iov = &iov;
		attr.iov_count = 1;
		attr.access = FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE;
		attr.requested_key = 0x300;
		attr.iface = FI_HMEM_SYSTEM;
		rc = fi_mr_regattr(ft_domain, &attr, 0, &mr);
		FT_CHECK(rc == 0, "%s: fi_mr_regattr = %d (%s)", label, rc, fi_strerror(-rc));
		if (!rc) {
			uint64_t b = (mode & FI_MR_VIRT_ADDR) ? (uint64_t) (uintptr_t) buf[3] : 0;
			if (!prov_key)
				FT_CHECK(fi_mr_key(mr) == 0x300, "%s: fi_mr_regattr key %#llx", label,
					 (unsigned long long) fi_mr_key(mr));
			activate(mr, mode, label);
			self_rma("fi_mr_regattr", mode, buf[3] + 4096, b + 4096, fi_mr_key(mr), 8000);
			FT_RC(fi_close(&mr->fid), 0);
		}
		mr = NULL;
	}

	/* fi_mr_bind to a counter: needs an MR registered with FI_RMA_EVENT */
	{
		struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
		struct fid_cntr *cntr = NULL;
		FT_RC(fi_cntr_open(ft_domain, &ca, &cntr, NULL), 0);
		rc = fi_mr_reg(ft_domain, buf[1], BUF, FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0x400, FI_RMA_EVENT, &mr, NULL);
		if (rc == -FI_EBADFLAGS || rc == -FI_ENOSYS) {
			printf("%s: fi_mr_reg(FI_RMA_EVENT) = %s: no RMA events\n", label, fi_strerror(-rc));
		} else {
			FT_CHECK(rc == 0, "%s: fi_mr_reg(FI_RMA_EVENT) = %d (%s)", label, rc, fi_strerror(-rc));
		}
		if (!rc && cntr) {
			rc = fi_mr_bind(mr, &cntr->fid, FI_REMOTE_WRITE);
			FT_CHECK(rc == 0 || rc == -FI_ENOSYS, "%s: fi_mr_bind(counter, FI_REMOTE_WRITE) = %d (%s)", label, rc,
				 fi_strerror(-rc));
			if (rc == -FI_ENOSYS)
				printf("%s: fi_mr_bind(counter) = -FI_ENOSYS (no MR events)\n", label);
			if (mode & FI_MR_ENDPOINT && ep)
				FT_RC(fi_mr_bind(mr, &ep->fid, 0), 0);
			/* required under FI_MR_RMA_EVENT / FI_MR_ENDPOINT;
			 * elsewhere the MR is enabled already */
			rc = fi_mr_enable(mr);
			if (mode & (FI_MR_RMA_EVENT | FI_MR_ENDPOINT))
				FT_CHECK(rc == 0, "%s: fi_mr_enable = %d (%s)", label, rc, fi_strerror(-rc));
			else
				FT_CHECK(rc == 0 || rc == -FI_ENOSYS, "%s: fi_mr_enable of an MR no mode disables = %d (%s), "
					 "want 0 or -FI_ENOSYS", label, rc, fi_strerror(-rc));
			FT_RC(fi_close(&mr->fid), 0);
		}
		if (cntr)
			FT_RC(fi_close(&cntr->fid), 0);
		mr = NULL;
	}
}

static int domains_opened;

static void run_case(const struct mode_case *c)
{
	int rc;
	struct fi_info *info = getinfo(c->version, (int) c->mr_mode, &rc);
	uint64_t got, mode;
	if (rc == -FI_ENODATA) {
		printf("%s: no fi_info (the provider needs mr_mode bits not offered)\n", c->label);
		return;
	}
	FT_CHECK(rc == 0, "%s: fi_getinfo = %d (%s)", c->label, rc, fi_strerror(-rc));
	if (rc)
		return;
	got = (uint64_t) info->domain_attr->mr_mode;
	if (FI_VERSION_LT(c->version, FI_VERSION(1, 5))) {
		FT_CHECK(got == FI_MR_BASIC || got == FI_MR_SCALABLE,
			 "%s: API < 1.5 answered with mr_mode %#llx, want FI_MR_BASIC or FI_MR_SCALABLE", c->label,
			 (unsigned long long) got);
		if (c->mr_mode == FI_MR_BASIC || c->mr_mode == FI_MR_SCALABLE)
			FT_CHECK(got == c->mr_mode, "%s: mr_mode %#llx, want the requested %#llx", c->label,
				 (unsigned long long) got, (unsigned long long) c->mr_mode);
	} else if (c->mr_mode == FI_MR_BASIC) {
		FT_CHECK(got == FI_MR_BASIC, "%s: FI_MR_BASIC must not be cleared, got %#llx", c->label,
			 (unsigned long long) got);
	} else {
		/* FI_MR_LOCAL is offered through the hints' FI_LOCAL_MR mode bit */
		FT_CHECK((got & ~(c->mr_mode | FI_MR_LOCAL)) == 0,
			 "%s: mr_mode %#llx has bits the application did not offer (%#llx)",
			 c->label, (unsigned long long) got, (unsigned long long) c->mr_mode);
	}
	ft_info = info;
	rc = fi_fabric(info->fabric_attr, &ft_fabric, NULL);
	if (!rc)
		rc = fi_domain(ft_fabric, info, &ft_domain, NULL);
	FT_CHECK(rc == 0, "%s: fi_fabric/fi_domain = %d (%s)", c->label, rc, fi_strerror(-rc));
	mode = effective(info);
	printf("%s: domain mr_mode %#llx (follows %#llx), key size %zu, mr_iov_limit %zu\n", c->label,
	       (unsigned long long) got, (unsigned long long) mode, info->domain_attr->mr_key_size,
	       info->domain_attr->mr_iov_limit);
	if (!rc) {
		domains_opened++;
		open_self();
		api_checks(c->label, mode, info);
		close_self();
	}
	ft_close();
	ft_info = NULL, ft_domain = NULL, ft_fabric = NULL;
}

int main(int argc, char **argv)
{
	const uint64_t follow = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT |
				FI_MR_RAW | FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT;
	const struct mode_case cases[] = {
		{ FI_VERSION(1, 17), 0, "mr_mode 0" },
		{ FI_VERSION(1, 17), follow, "every mr_mode bit" },
		{ FI_VERSION(1, 17), FI_MR_LOCAL, "FI_MR_LOCAL" },
		{ FI_VERSION(1, 17), FI_MR_VIRT_ADDR, "FI_MR_VIRT_ADDR" },
		{ FI_VERSION(1, 17), FI_MR_ALLOCATED, "FI_MR_ALLOCATED" },
		{ FI_VERSION(1, 17), FI_MR_PROV_KEY, "FI_MR_PROV_KEY" },
		{ FI_VERSION(1, 17), FI_MR_ENDPOINT, "FI_MR_ENDPOINT" },
		{ FI_VERSION(1, 17), FI_MR_RAW, "FI_MR_RAW" },
		{ FI_VERSION(1, 17), FI_MR_RMA_EVENT, "FI_MR_RMA_EVENT" },
		{ FI_VERSION(1, 17), FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, "VIRT_ADDR|ALLOCATED|PROV_KEY" },
		{ FI_VERSION(1, 17), FI_MR_BASIC, "FI_MR_BASIC (API 1.17)" },
		{ FI_VERSION(1, 4), FI_MR_BASIC, "FI_MR_BASIC (API 1.4)" },
		{ FI_VERSION(1, 4), FI_MR_SCALABLE, "FI_MR_SCALABLE (API 1.4)" },
		{ FI_VERSION(1, 4), FI_MR_UNSPEC, "FI_MR_UNSPEC (API 1.4)" },
	};
	int rc;
	ft_parse(argc, argv);
	{
		struct fi_info *info = getinfo(FI_VERSION(1, 17), (int) follow, &rc);
		fi_freeinfo(info);
		if (rc == -FI_ENODATA) {
			struct fi_info *h = fi_allocinfo(), *i = NULL;
			h->fabric_attr->prov_name = strdup(ft_prov);
			h->ep_attr->type = ft_ep_type;
			h->caps = FI_MSG;
			h->domain_attr->mr_mode = (int) follow;
			rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &i);
			fi_freeinfo(h);
			fi_freeinfo(i);
			if (rc == 0) {
				printf("SKIP: %s lacks FI_RMA\n", ft_prov);
				return 77;
			}
		}
	}
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
	FT_CHECK(domains_opened > 0, "provider %s gave no fi_info with FI_RMA for any mr_mode", ft_prov);
	return ft_report("fi_mr_test");
}
