/*
 * fi_rma: RMA read, write and write-with-data between a client (the
 * initiator) and a server (the target), on MSG or RDM endpoints. Each side
 * registers one region and tells the peer its address and key over the
 * fabric (FI_MR_VIRT_ADDR: the virtual address, else offset 0;
 * FI_MR_PROV_KEY: the provider's key, else a requested one). Phases:
 *
 *  sizes      fi_read / fi_write / fi_writedata of every -S size (0 B to
 *             64 MiB by default) at unaligned target offsets: every byte of
 *             the destination checked, 64 guard bytes either side
 *             untouched; initiator completions carry FI_RMA|FI_READ or
 *             FI_RMA|FI_WRITE and the op_context; fi_writedata delivers
 *             its data to the target CQ with FI_REMOTE_WRITE |
 *             FI_REMOTE_CQ_DATA; plain reads and writes leave the target CQ
 *             empty
 *  iov        fi_writev / fi_readv with several local buffers;
 *             fi_writemsg / fi_readmsg with rma_iov lists (local and remote
 *             pieces of different lengths, gaps between remote pieces
 *             untouched), also with FI_REMOTE_CQ_DATA
 *  inject     fi_inject_write and fi_inject_writedata (no initiator
 *             completion, the buffer reusable at once), fi_writemsg with
 *             FI_INJECT
 *  compflags  fi_writemsg with FI_INJECT_COMPLETE / FI_TRANSMIT_COMPLETE /
 *             FI_DELIVERY_COMPLETE, fi_readmsg with FI_DELIVERY_COMPLETE
 *  more       three fi_writemsg with FI_MORE and a last one without: all
 *             four complete and land
 *  fence      (FI_FENCE) a write followed by a fenced read of the same
 *             bytes: the read sees the write
 *  selective  (RDM) a second client endpoint whose transmit CQ is bound
 *             with FI_SELECTIVE_COMPLETION: only operations posted with
 *             FI_COMPLETION complete
 *
 * Remote CQ data is masked to the domain's cq_data_size bytes (as
 * upstream's fabtests do; verbs carries 4), and where the target's
 * rx_attr.mode has FI_RX_CQ_DATA (verbs) the target posts a receive for
 * each fi_writedata it expects, which that write consumes.
 *
 * Run: -e msg|rdm [-o read|write|writedata]... (default all three)
 * [-S size[,size...]] [-x phase]... (skip a phase).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "onesided.h"
#include "../benchmarks/sizes.h"

#define GUARD 64
#define FILL_T 0x5a /* target memory not written by the test */
#define FILL_I 0xee /* initiator memory not read into */

enum op { OP_READ, OP_WRITE, OP_WRITEDATA, NOPS };
static const char *const op_name[NOPS] = { "read", "write", "writedata" };
static int ops_on[NOPS];
static size_t sizes[64];
static int nsizes;
static char skip[256];

static struct os_mr reg;   /* this side's region */
static struct os_rkey peer; /* the peer's region */
static size_t region;
static uint64_t caps;

static void opt(int c, const char *arg)
{
	if (c == 'o') {
		for (int i = 0; i < NOPS; i++)
			if (!strcmp(arg, op_name[i]))
				ops_on[i] = 1;
		if (!strcmp(arg, "all"))
			ops_on[0] = ops_on[1] = ops_on[2] = 1;
	} else if (c == 'x') {
		snprintf(skip + strlen(skip), sizeof(skip) - strlen(skip), ",%s,", arg);
	}
}

/* -S takes a list here; shared.h's parser reads only its first number. */
static void parse_sizes(int argc, char **argv)
{
	static const size_t dflt[] = { 0, 1, 7, 8, 63, 64, 255, 256, 4095, 4096, 4097, 65536, 65537,
				       (1 << 20) + 3, 4 << 20, 16 << 20, 64 << 20 };
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "-S")) {
			nsizes = parse_size_list(argv[i + 1], sizes, 64);
			if (nsizes <= 0)
				ft_die("bad -S list '%s'", argv[i + 1]);
			return;
		}
	nsizes = (int) (sizeof(dflt) / sizeof(dflt[0]));
	memcpy(sizes, dflt, sizeof(dflt));
}

static void check_flags(uint64_t got, uint64_t want, const char *what)
{
	FT_CHECK((got & OS_OPFLAGS) == want, "%s: completion flags %#llx, want %#llx", what,
		 (unsigned long long) (got & OS_OPFLAGS), (unsigned long long) want);
}

/* Initiator: waits for the completion of the operation with context ctx. */
static void wait_op(void *ctx, uint64_t want, const char *what)
{
	struct fi_cq_tagged_entry e;
	if (!xf_cq_get(ft_txcq, &e, what))
		return;
	FT_CHECK(e.op_context == ctx, "%s: op_context %p, want %p", what, e.op_context, ctx);
	check_flags(e.flags, want, what);
}

/* Target: waits for a remote-CQ-data completion and checks it. */
static void wait_data(uint64_t data, const char *what)
{
	static int data_ctx;
	struct fi_cq_tagged_entry e;
	data = ft_cq_data(data);
	if (ft_info->rx_attr->mode & FI_RX_CQ_DATA)
		FT_POST(fi_recv(ft_ep, os_ctl.buf + OS_CTL, OS_CTL, os_ctl.desc, ft_peer, &data_ctx),
			"fi_recv(for remote CQ data)");
	if (!xf_cq_get(ft_rxcq, &e, what))
		return;
	FT_CHECK((e.flags & (FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA)) == (FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA),
		 "%s: target completion flags %#llx lack FI_REMOTE_WRITE|FI_REMOTE_CQ_DATA", what,
		 (unsigned long long) e.flags);
	FT_CHECK(!(e.flags & (FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ)),
		 "%s: target completion flags %#llx name a local or read operation", what, (unsigned long long) e.flags);
	FT_CHECK(e.data == data, "%s: remote CQ data %#llx, want %#llx", what, (unsigned long long) e.data,
		 (unsigned long long) data);
}

/* Target memory check: [off, off+len) holds the pattern at `seed`, GUARD
 * bytes either side are untouched; then restores the area. */
static void target_check(size_t off, size_t len, size_t seed, const char *what)
{
	long bad = xf_verify_at(reg.buf + off, len, seed);
	unsigned char want[1] = { 0 };
	if (bad >= 0)
		xf_fill_at(want, 1, seed + (size_t) bad);
	FT_CHECK(bad < 0, "%s: target byte %ld of %zu is %#x, want %#x", what, bad, len,
		 bad < 0 ? 0 : (unsigned char) reg.buf[off + (size_t) bad], want[0]);
	FT_CHECK(os_untouched(reg.buf + off - GUARD, GUARD, FILL_T) < 0, "%s: bytes before the target range written",
		 what);
	FT_CHECK(os_untouched(reg.buf + off + len, GUARD, FILL_T) < 0, "%s: bytes after the target range written",
		 what);
	memset(reg.buf + off - GUARD, FILL_T, len + 2 * GUARD);
}

/* Initiator memory check after a read, then restores the area. */
static void local_check(size_t off, size_t len, size_t seed, const char *what)
{
	long bad = xf_verify_at(reg.buf + off, len, seed);
	FT_CHECK(bad < 0, "%s: byte %ld of %zu read wrong", what, bad, len);
	FT_CHECK(os_untouched(reg.buf + off - GUARD, GUARD, FILL_I) < 0, "%s: bytes before the read buffer written",
		 what);
	FT_CHECK(os_untouched(reg.buf + off + len, GUARD, FILL_I) < 0, "%s: bytes after the read buffer written",
		 what);
	memset(reg.buf + off - GUARD, FILL_I, len + 2 * GUARD);
}

/* A one-piece fi_msg_rma on this side's region toward the peer. */
static struct fi_msg_rma one_msg(struct iovec *iov, struct fi_rma_iov *rma, void *ctx)
{
	struct fi_msg_rma m = { .msg_iov = iov, .desc = &reg.desc, .iov_count = 1, .addr = ft_peer, .rma_iov = rma,
				.rma_iov_count = 1, .context = ctx };
	return m;
}

/* ---- sizes ---- */

static void one_case(enum op op, size_t size, unsigned idx)
{
	size_t off = GUARD + idx % 8, seed = size * 5 + idx * 977 + (size_t) op;
	uint64_t data = ft_cq_data(0xd0d0000000000000ULL | ((uint64_t) idx << 16) | (uint64_t) op);
	char what[96];
	snprintf(what, sizeof(what), "%s of %zu bytes at offset %zu", op_name[op], size, off);
	if (ft_is_client()) {
		if (op == OP_READ) {
			os_sync(); /* the target filled its range */
			FT_POST(fi_read(ft_ep, reg.buf + off, size, reg.desc, ft_peer, peer.addr + off, peer.key, &reg),
				"fi_read");
			wait_op(&reg, FI_RMA | FI_READ, what);
			local_check(off, size, seed, what);
			os_sync(); /* the target restored its range (see below) */
		} else {
			xf_fill_at(reg.buf + off, size, seed);
			if (op == OP_WRITE)
				FT_POST(fi_write(ft_ep, reg.buf + off, size, reg.desc, ft_peer, peer.addr + off, peer.key,
						 &reg),
					"fi_write");
			else
				FT_POST(fi_writedata(ft_ep, reg.buf + off, size, reg.desc, data, ft_peer, peer.addr + off,
						     peer.key, &reg),
					"fi_writedata");
			wait_op(&reg, FI_RMA | FI_WRITE, what);
			memset(reg.buf + off, FILL_I, size);
			os_sync();
		}
		os_sync();
	} else {
		if (op == OP_READ) {
			xf_fill_at(reg.buf + off, size, seed);
			os_sync();
			os_sync(); /* the read completed */
			FT_CHECK(xf_verify_at(reg.buf + off, size, seed) < 0, "%s: the read changed target memory", what);
			memset(reg.buf + off, FILL_T, size);
			/* restored before the initiator's next write can land
			 * (without this sync, that write races this memset) */
			os_sync();
		} else {
			if (op == OP_WRITEDATA)
				wait_data(data, what);
			os_sync();
			target_check(off, size, seed, what);
			os_sync(); /* the check is done before the next write */
		}
	}
}

static void phase_sizes(void)
{
	unsigned idx = 0;
	for (int o = 0; o < NOPS; o++) {
		if (!ops_on[o])
			continue;
		for (int s = 0; s < nsizes; s++)
			one_case((enum op) o, sizes[s], idx++);
		ft_log("sizes: %s of %d sizes", op_name[o], nsizes);
	}
	FT_CHECK(xf_cq_quiet(ft_rxcq, ft_txcq, 0.05), "sizes: an unexpected completion on the receive CQ");
	os_sync();
}

/* ---- iov ---- */

/* Local pieces and remote pieces of the same 12000-byte stream. */
static const size_t lpiece[3] = { 3000, 100, 8900 }, rpiece[3] = { 4000, 1000, 7000 };
#define IOV_TOTAL 12000
#define LOFF(i) (GUARD + (i) * 20000 + 5)   /* local piece i */
#define ROFF(i) (GUARD + (i) * 20000 + 11)  /* remote piece i */

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* Builds local iovs and remote rma_iovs (at most nl and nr pieces; the
 * last piece takes what the others leave) of a `total`-byte stream. */
static void build_iov(struct iovec *iov, void **desc, size_t nl, struct fi_rma_iov *rma, size_t nr)
{
	size_t left = IOV_TOTAL;
	for (size_t i = 0; i < nl; i++) {
		iov[i].iov_base = reg.buf + LOFF(i);
		iov[i].iov_len = i + 1 == nl ? left : lpiece[i];
		desc[i] = reg.desc;
		left -= iov[i].iov_len;
	}
	left = IOV_TOTAL;
	for (size_t i = 0; i < nr; i++) {
		rma[i].addr = peer.addr + ROFF(i);
		rma[i].len = i + 1 == nr ? left : rpiece[i];
		rma[i].key = peer.key;
		left -= rma[i].len;
	}
}

/* Stream offset of byte 0 of remote piece i. */
static size_t rstart(size_t i, size_t nr)
{
	size_t s = 0;
	for (size_t k = 0; k < i && k + 1 < nr; k++)
		s += rpiece[k];
	return s;
}
static size_t rlen(size_t i, size_t nr)
{
	return i + 1 == nr ? IOV_TOTAL - rstart(i, nr) : rpiece[i];
}
static size_t lstart(size_t i, size_t nl)
{
	size_t s = 0;
	for (size_t k = 0; k < i && k + 1 < nl; k++)
		s += lpiece[k];
	return s;
}
static size_t llen(size_t i, size_t nl)
{
	return i + 1 == nl ? IOV_TOTAL - lstart(i, nl) : lpiece[i];
}

enum iov_kind { WRITEV, READV, WRITEMSG, READMSG, WRITEMSG_DATA, NIOV };
static const char *const iov_name[NIOV] = { "fi_writev", "fi_readv", "fi_writemsg(rma_iov)", "fi_readmsg(rma_iov)",
					    "fi_writemsg(rma_iov, FI_REMOTE_CQ_DATA)" };

static void iov_case(enum iov_kind k, size_t seed)
{
	size_t nl = min_sz(3, ft_info->tx_attr->iov_limit), nr = min_sz(3, ft_info->tx_attr->rma_iov_limit);
	int is_read = k == READV || k == READMSG;
	uint64_t data = ft_cq_data(0x10f0000000000000ULL | seed);
	const char *what = iov_name[k];
	if (k == WRITEV || k == READV)
		nr = 1;
	if (ft_is_client()) {
		struct iovec iov[3];
		void *desc[3];
		struct fi_rma_iov rma[3];
		struct fi_msg_rma m;
		build_iov(iov, desc, nl, rma, nr);
		m = (struct fi_msg_rma){ .msg_iov = iov, .desc = desc, .iov_count = nl, .addr = ft_peer, .rma_iov = rma,
					 .rma_iov_count = nr, .context = &reg, .data = data };
		if (is_read)
			os_sync();
		else
			for (size_t i = 0; i < nl; i++)
				xf_fill_at(iov[i].iov_base, iov[i].iov_len, seed + lstart(i, nl));
		switch (k) {
		case WRITEV:
			FT_POST(fi_writev(ft_ep, iov, desc, nl, ft_peer, rma[0].addr, peer.key, &reg), what);
			break;
		case READV:
			FT_POST(fi_readv(ft_ep, iov, desc, nl, ft_peer, rma[0].addr, peer.key, &reg), what);
			break;
		case WRITEMSG: FT_POST(fi_writemsg(ft_ep, &m, 0), what); break;
		case READMSG: FT_POST(fi_readmsg(ft_ep, &m, 0), what); break;
		default: FT_POST(fi_writemsg(ft_ep, &m, FI_REMOTE_CQ_DATA), what); break;
		}
		wait_op(&reg, FI_RMA | (is_read ? FI_READ : FI_WRITE), what);
		for (size_t i = 0; i < nl; i++)
			if (is_read)
				local_check(LOFF(i), llen(i, nl), seed + lstart(i, nl), what);
			else
				memset(iov[i].iov_base, FILL_I, iov[i].iov_len);
		os_sync();
		os_sync();
	} else {
		if (is_read) {
			for (size_t i = 0; i < nr; i++)
				xf_fill_at(reg.buf + ROFF(i), rlen(i, nr), seed + rstart(i, nr));
			os_sync();
			os_sync();
			for (size_t i = 0; i < nr; i++)
				memset(reg.buf + ROFF(i), FILL_T, rlen(i, nr));
			/* restored before the initiator's next write can land */
			os_sync();
		} else {
			if (k == WRITEMSG_DATA)
				wait_data(data, what);
			os_sync();
			for (size_t i = 0; i < nr; i++)
				target_check(ROFF(i), rlen(i, nr), seed + rstart(i, nr), what);
			os_sync();
		}
	}
	ft_log("iov: %s with %zu local and %zu remote pieces", what, nl, nr);
}

static void phase_iov(void)
{
	for (int k = 0; k < NIOV; k++)
		iov_case((enum iov_kind) k, 0x1000 * (size_t) (k + 1));
	os_sync();
}

/* ---- inject ---- */

static void phase_inject(void)
{
	size_t n = min_sz(ft_info->tx_attr->inject_size, 64), off = GUARD + 3;
	uint64_t data = ft_cq_data(0x1a1ec7da7a000000ULL | 0x5eed);
	if (ft_info->tx_attr->inject_size == 0) {
		printf("inject: inject_size is 0, phase skipped\n");
		return;
	}
	for (int k = 0; k < 3; k++) {
		static const char *const names[3] = { "fi_inject_write", "fi_inject_writedata", "fi_writemsg(FI_INJECT)" };
		size_t seed = 0x2000 + (size_t) k;
		if (ft_is_client()) {
			struct iovec iov = { reg.buf + off, n };
			struct fi_rma_iov rma = { peer.addr + off, n, peer.key };
			struct fi_msg_rma m = one_msg(&iov, &rma, &reg);
			xf_fill_at(reg.buf + off, n, seed);
			if (k == 0)
				FT_POST(fi_inject_write(ft_ep, reg.buf + off, n, ft_peer, peer.addr + off, peer.key), names[k]);
			else if (k == 1)
				FT_POST(fi_inject_writedata(ft_ep, reg.buf + off, n, data, ft_peer, peer.addr + off, peer.key),
					names[k]);
			else
				FT_POST(fi_writemsg(ft_ep, &m, FI_INJECT), names[k]);
			memset(reg.buf + off, 0, n); /* the call copied the data */
			if (k == 2)
				wait_op(&reg, FI_RMA | FI_WRITE, names[k]);
			os_sync();
			memset(reg.buf + off, FILL_I, n);
		} else {
			if (k == 1)
				wait_data(data, names[k]);
			os_sync();
			target_check(off, n, seed, names[k]);
		}
		os_sync();
	}
	if (ft_is_client())
		FT_CHECK(xf_cq_quiet(ft_txcq, ft_rxcq, 0.05), "inject: an inject produced an initiator completion");
	os_sync();
	ft_log("inject: %zu bytes", n);
}

/* ---- compflags ---- */

static void phase_compflags(void)
{
	static const uint64_t fl[4] = { FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE,
					FI_DELIVERY_COMPLETE };
	static const char *const names[4] = { "fi_writemsg(FI_INJECT_COMPLETE)", "fi_writemsg(FI_TRANSMIT_COMPLETE)",
					      "fi_writemsg(FI_DELIVERY_COMPLETE)", "fi_readmsg(FI_DELIVERY_COMPLETE)" };
	size_t n = min_sz(256 * 1024, region - 2 * GUARD - 16), off = GUARD + 1;
	for (int k = 0; k < 4; k++) {
		size_t seed = 0x3000 + (size_t) k;
		int rd = k == 3;
		if (ft_is_client()) {
			struct iovec iov = { reg.buf + off, n };
			struct fi_rma_iov rma = { peer.addr + off, n, peer.key };
			struct fi_msg_rma m = one_msg(&iov, &rma, &reg);
			int rc;
			if (rd)
				os_sync();
			else
				xf_fill_at(reg.buf + off, n, seed);
			rc = (int) (rd ? fi_readmsg(ft_ep, &m, fl[k]) : fi_writemsg(ft_ep, &m, fl[k]));
			FT_CHECK(rc == 0, "%s = %d (%s)", names[k], rc, fi_strerror(-rc));
			if (!rc)
				wait_op(&reg, FI_RMA | (rd ? FI_READ : FI_WRITE), names[k]);
			if (rd && !rc)
				local_check(off, n, seed, names[k]);
			else if (!rd)
				memset(reg.buf + off, FILL_I, n);
			os_sync();
			if (!rd)
				os_sync();
		} else if (rd) {
			xf_fill_at(reg.buf + off, n, seed);
			os_sync();
			os_sync();
			memset(reg.buf + off, FILL_T, n);
		} else {
			os_sync();
			target_check(off, n, seed, names[k]);
			os_sync();
		}
	}
	os_sync();
	ft_log("compflags: %zu bytes", n);
}

/* ---- more ---- */

/* Three fi_writemsg with FI_MORE, then one without: all four complete and
 * land (FI_MORE only lets the provider batch). */
static void phase_more(void)
{
	static int ctx[4];
	size_t n = 3000;
	if (ft_is_client()) {
		struct fi_cq_tagged_entry e;
		int seen = 0;
		for (int k = 0; k < 4; k++) {
			size_t off = GUARD + (size_t) k * (n + 2 * GUARD);
			struct iovec iov = { reg.buf + off, n };
			struct fi_rma_iov rma = { peer.addr + off, n, peer.key };
			struct fi_msg_rma m = one_msg(&iov, &rma, &ctx[k]);
			xf_fill_at(reg.buf + off, n, 0x6000 + (size_t) k);
			FT_POST(fi_writemsg(ft_ep, &m, k < 3 ? FI_MORE : 0), k < 3 ? "fi_writemsg(FI_MORE)" : "fi_writemsg");
		}
		for (int k = 0; k < 4; k++)
			if (xf_cq_get(ft_txcq, &e, "FI_MORE write"))
				for (int j = 0; j < 4; j++)
					seen |= e.op_context == &ctx[j] ? 1 << j : 0;
		FT_CHECK(seen == 15, "FI_MORE: completions for writes %#x, want all four", seen);
		memset(reg.buf, FILL_I, 4 * (n + 2 * GUARD) + GUARD);
		os_sync();
	} else {
		os_sync();
		for (int k = 0; k < 4; k++)
			target_check(GUARD + (size_t) k * (n + 2 * GUARD), n, 0x6000 + (size_t) k, "FI_MORE write");
	}
	os_sync();
	ft_log("more: done");
}

/* ---- fence ---- */

static void phase_fence(void)
{
	size_t n = min_sz(1 << 20, (region - 2 * GUARD) / 2 - 16), woff = GUARD, roff = GUARD + n + GUARD;
	if (!(caps & FI_FENCE)) {
		printf("fence: endpoint lacks FI_FENCE, phase skipped\n");
		return;
	}
	if (roff + n + GUARD > region) {
		printf("fence: region too small, phase skipped\n");
		return;
	}
	if (ft_is_client()) {
		static int wctx, rctx;
		struct iovec iov = { reg.buf + roff, n };
		struct fi_rma_iov rma = { peer.addr + woff, n, peer.key };
		struct fi_msg_rma m = one_msg(&iov, &rma, &rctx);
		struct fi_cq_tagged_entry e;
		int seen = 0;
		xf_fill_at(reg.buf + woff, n, 0x4000);
		FT_POST(fi_write(ft_ep, reg.buf + woff, n, reg.desc, ft_peer, peer.addr + woff, peer.key, &wctx), "fi_write");
		FT_POST(fi_readmsg(ft_ep, &m, FI_FENCE), "fi_readmsg(FI_FENCE)");
		for (int i = 0; i < 2; i++)
			if (xf_cq_get(ft_txcq, &e, "fence completion"))
				seen |= e.op_context == &wctx ? 1 : e.op_context == &rctx ? 2 : 4;
		FT_CHECK(seen == 3, "fence: completions seen %#x, want the write's and the read's", seen);
		local_check(roff, n, 0x4000, "fenced read after a write of the same bytes");
		memset(reg.buf + woff, FILL_I, n);
		os_sync();
	} else {
		os_sync();
		target_check(woff, n, 0x4000, "write before a fenced read");
	}
	os_sync();
	ft_log("fence: %zu bytes", n);
}

/* ---- selective ---- */

static void phase_selective(void)
{
	if (ft_ep_type != FI_EP_RDM || (os_mr_mode & FI_MR_ENDPOINT)) {
		printf("selective: needs a second RDM endpoint on the same MRs, phase skipped\n");
		return;
	}
	size_t n = 5000;
	if (ft_is_client()) {
		static int c[4];
		struct xf_ep ep2;
		struct fi_cq_tagged_entry e;
		int seen = 0;
		xf_open_ep(&ep2, ft_info, ft_av, FI_CQ_FORMAT_TAGGED, FI_SELECTIVE_COMPLETION);
		for (int k = 0; k < 4; k++) {
			size_t off = GUARD + (size_t) k * (n + 2 * GUARD);
			struct iovec iov = { reg.buf + off, n };
			struct fi_rma_iov rma = { peer.addr + off, n, peer.key };
			struct fi_msg_rma m = one_msg(&iov, &rma, &c[k]);
			uint64_t f = (k & 1) ? FI_COMPLETION : 0;
			xf_fill_at(reg.buf + off, n, 0x5000 + (size_t) k);
			if (k < 2)
				FT_POST(fi_writemsg(ep2.ep, &m, f), "fi_writemsg(ep2)");
			else
				FT_POST(fi_readmsg(ep2.ep, &m, f), "fi_readmsg(ep2)");
		}
		for (int i = 0; i < 2; i++)
			if (xf_cq_get(ep2.txcq, &e, "selective completion"))
				seen |= e.op_context == &c[1] ? 1 : e.op_context == &c[3] ? 2 : 4;
		FT_CHECK(seen == 3, "selective: completions %#x, want only the FI_COMPLETION write's and read's", seen);
		/* the flagless read may still be in flight: a later read on the
		 * same endpoint with a completion orders after it (RAR) */
		{
			struct iovec iov = { reg.buf + GUARD, 1 };
			struct fi_rma_iov rma = { peer.addr + GUARD, 1, peer.key };
			struct fi_msg_rma m = one_msg(&iov, &rma, &c[0]);
			FT_POST(fi_readmsg(ep2.ep, &m, FI_COMPLETION), "fi_readmsg(ep2, drain)");
			xf_cq_get(ep2.txcq, &e, "selective drain read");
		}
		FT_CHECK(xf_cq_quiet(ep2.txcq, NULL, 0.1), "selective: an operation without FI_COMPLETION completed");
		os_sync();
		xf_close_ep(&ep2);
		memset(reg.buf, FILL_I, region);
	} else {
		for (int k = 2; k < 4; k++)
			xf_fill_at(reg.buf + GUARD + (size_t) k * (n + 2 * GUARD), n, 0x5000 + (size_t) k);
		os_sync();
		for (int k = 0; k < 2; k++)
			target_check(GUARD + (size_t) k * (n + 2 * GUARD), n, 0x5000 + (size_t) k, "selective write");
		memset(reg.buf, FILL_T, region);
	}
	os_sync();
	ft_log("selective: done");
}

#define PHASE(name) \
	do { \
		if (!strstr(skip, "," #name ",")) \
			phase_##name(); \
	} while (0)

int main(int argc, char **argv)
{
	struct fi_info *hints;
	size_t max = 0;
	parse_sizes(argc, argv);
	ft_args(argc, argv, "o:x:", opt);
	if (!ops_on[0] && !ops_on[1] && !ops_on[2])
		ops_on[0] = ops_on[1] = ops_on[2] = 1;
	hints = os_hints(FI_MSG | FI_RMA);
	hints->domain_attr->cq_data_size = 4;
	/* honoured: see wait_data */
	hints->mode = hints->rx_attr->mode = FI_RX_CQ_DATA;
	os_require(hints);
	/* FI_FENCE is tested when the provider has it. */
	hints->caps |= FI_FENCE;
	{
		struct fi_info *probe = NULL;
		if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &probe))
			hints->caps &= ~FI_FENCE;
		fi_freeinfo(probe);
	}
	ft_setup(hints);
	caps = ft_info->caps;
	for (int i = 0; i < nsizes; i++)
		if (sizes[i] > max)
			max = sizes[i];
	region = (max > 3 * 20000 ? max : 3 * 20000) + 2 * GUARD + 16;
	if (region < (2 << 20) + 4 * GUARD)
		region = (2 << 20) + 4 * GUARD;
	os_init();
	char *buf = malloc(region);
	if (!buf)
		ft_die("malloc(%zu)", region);
	memset(buf, ft_is_client() ? FILL_I : FILL_T, region);
	os_reg(&reg, buf, region, OS_ACCESS_ALL);
	{
		struct os_rkey mine = os_rkey_of(&reg, 0, region);
		os_swap_keys(&mine, &peer, 1);
		FT_CHECK(peer.len == region, "peer region of %llu bytes", (unsigned long long) peer.len);
	}
	ft_log("mr_mode %#llx, key %#llx, peer key %#llx", (unsigned long long) os_mr_mode,
	       (unsigned long long) reg.key, (unsigned long long) peer.key);
	PHASE(sizes);
	PHASE(iov);
	PHASE(inject);
	PHASE(compflags);
	PHASE(more);
	PHASE(fence);
	PHASE(selective);
	os_sync();
	os_unreg(&reg);
	free(buf);
	return os_finish("fi_rma");
}
