/*
 * fi_rdm_atomic: every atomic operation and datatype fi_atomic(3) defines,
 * in its three forms: base (FI_MIN..FI_BXOR, FI_ATOMIC_WRITE), fetch (the
 * same plus FI_ATOMIC_READ) and compare (FI_CSWAP, FI_CSWAP_NE/LE/LT/GE/GT,
 * FI_MSWAP), on an RDM endpoint or, with -e msg, an MSG one. The client
 * is the initiator, the server the target.
 *
 * For each form x datatype x op the client asks fi_atomicvalid /
 * fi_fetch_atomicvalid / fi_compare_atomicvalid and fi_query_atomic: the
 * two must agree (same answer, same count, size = the C type's size), and
 * the combinations the man page leaves out of a form (FI_ATOMIC_READ and
 * the compare ops in the base form, the compare ops in the fetch form, the
 * others in the compare form) must be rejected. Every valid combination
 * with a C reference runs on up to 4 elements of its own target slot
 * (through fi_atomic/atomicv/atomicmsg/inject_atomic, the fetch and compare
 * variants in turn); fetched values must equal the slot's initial values;
 * afterwards the server checks every slot against the reference
 * computation (integers of 8..128 bits, float, double, long double and
 * their complex forms; values chosen so that float results are exact).
 * Valid combinations without a natural C meaning (bitwise ops on floating
 * point, ordered compares on complex) are counted and reported, not run.
 *
 * A provider that offers only some combinations (verbs: its device's
 * FI_SUM and FI_CSWAP on 64-bit integers, one element each) answers the
 * others with an error, and those are counted as invalid and skipped, as
 * upstream's fabtests atomic test skips what fi_query_atomic refuses.
 *
 * Run: -e rdm|msg [-o OP|all] [-z DATATYPE|all] (names as fi_atomic(3)
 * without the FI_ prefix, lower case: -o cswap_le -z uint16).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "onesided.h"
#include <complex.h>

#define NDT 16
#define NOP 19
#define NEL 4
#define ELMAX 32 /* long double complex */
#define SLOT (NEL * ELMAX)
enum form { BASE, FETCH, COMPARE, NFORM };
static const char *const form_name[NFORM] = { "base", "fetch", "compare" };
static const char *const dt_name[NDT] = { "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
					  "float", "double", "float_complex", "double_complex", "long_double",
					  "long_double_complex", "int128", "uint128" };
static const char *const op_name[NOP] = { "min", "max", "sum", "prod", "lor", "land", "bor", "band", "lxor", "bxor",
					  "read", "write", "cswap", "cswap_ne", "cswap_le", "cswap_lt", "cswap_ge",
					  "cswap_gt", "mswap" };
static int only_op = -1, only_dt = -1;

typedef __int128 i128;
typedef unsigned __int128 u128;
typedef float _Complex fcx;
typedef double _Complex dcx;
typedef long double _Complex ldcx;

/* ---- the C reference ---- */

/* Integers: every op; arithmetic in the unsigned type (wraps like the
 * hardware), comparisons in the declared type. Returns 0 if undefined. */
#define REF_INT(N, T, U) \
	static int ref_##N(int op, void *av, const void *bv, const void *cv) \
	{ \
		T *a = av, b = *(const T *) bv, c = *(const T *) cv; \
		switch (op) { \
		case FI_MIN: if (b < *a) *a = b; break; \
		case FI_MAX: if (b > *a) *a = b; break; \
		case FI_SUM: *a = (T) ((U) *a + (U) b); break; \
		case FI_PROD: *a = (T) ((U) *a * (U) b); break; \
		case FI_LOR: *a = (T) (*a || b); break; \
		case FI_LAND: *a = (T) (*a && b); break; \
		case FI_BOR: *a = (T) (*a | b); break; \
		case FI_BAND: *a = (T) (*a & b); break; \
		case FI_LXOR: *a = (T) ((*a && !b) || (!*a && b)); break; \
		case FI_BXOR: *a = (T) (*a ^ b); break; \
		case FI_ATOMIC_READ: break; \
		case FI_ATOMIC_WRITE: *a = b; break; \
		case FI_CSWAP: if (c == *a) *a = b; break; \
		case FI_CSWAP_NE: if (c != *a) *a = b; break; \
		case FI_CSWAP_LE: if (c <= *a) *a = b; break; \
		case FI_CSWAP_LT: if (c < *a) *a = b; break; \
		case FI_CSWAP_GE: if (c >= *a) *a = b; break; \
		case FI_CSWAP_GT: if (c > *a) *a = b; break; \
		case FI_MSWAP: *a = (T) ((b & c) | (*a & ~c)); break; \
		default: return 0; \
		} \
		return 1; \
	} \
	static int eq_##N(const void *x, const void *y) { return *(const T *) x == *(const T *) y; } \
	static void set_##N(void *p, double re, double im) { (void) im; *(T *) p = (T) (long long) re; }

/* Real floating point: no bitwise ops, no MSWAP. */
#define REF_REAL(N, T) \
	static int ref_##N(int op, void *av, const void *bv, const void *cv) \
	{ \
		T *a = av, b = *(const T *) bv, c = *(const T *) cv; \
		switch (op) { \
		case FI_MIN: if (b < *a) *a = b; break; \
		case FI_MAX: if (b > *a) *a = b; break; \
		case FI_SUM: *a = *a + b; break; \
		case FI_PROD: *a = *a * b; break; \
		case FI_LOR: *a = (T) (*a || b); break; \
		case FI_LAND: *a = (T) (*a && b); break; \
		case FI_LXOR: *a = (T) ((*a && !b) || (!*a && b)); break; \
		case FI_ATOMIC_READ: break; \
		case FI_ATOMIC_WRITE: *a = b; break; \
		case FI_CSWAP: if (c == *a) *a = b; break; \
		case FI_CSWAP_NE: if (c != *a) *a = b; break; \
		case FI_CSWAP_LE: if (c <= *a) *a = b; break; \
		case FI_CSWAP_LT: if (c < *a) *a = b; break; \
		case FI_CSWAP_GE: if (c >= *a) *a = b; break; \
		case FI_CSWAP_GT: if (c > *a) *a = b; break; \
		default: return 0; \
		} \
		return 1; \
	} \
	static int eq_##N(const void *x, const void *y) { return *(const T *) x == *(const T *) y; } \
	static void set_##N(void *p, double re, double im) { (void) im; *(T *) p = (T) re; }

/* Complex: no ordering, no bitwise ops. A complex value is "true" when
 * either part is non-zero. */
#define REF_CPLX(N, T, R) \
	static int ref_##N(int op, void *av, const void *bv, const void *cv) \
	{ \
		T *a = av, b = *(const T *) bv, c = *(const T *) cv; \
		switch (op) { \
		case FI_SUM: *a = *a + b; break; \
		case FI_PROD: *a = *a * b; break; \
		case FI_LOR: *a = (T) (R) (*a != 0 || b != 0); break; \
		case FI_LAND: *a = (T) (R) (*a != 0 && b != 0); break; \
		case FI_LXOR: *a = (T) (R) ((*a != 0) != (b != 0)); break; \
		case FI_ATOMIC_READ: break; \
		case FI_ATOMIC_WRITE: *a = b; break; \
		case FI_CSWAP: if (c == *a) *a = b; break; \
		case FI_CSWAP_NE: if (c != *a) *a = b; break; \
		default: return 0; \
		} \
		return 1; \
	} \
	static int eq_##N(const void *x, const void *y) { return *(const T *) x == *(const T *) y; } \
	static void set_##N(void *p, double re, double im) { *(T *) p = (R) re + (R) im * (T) I; }

REF_INT(int8, int8_t, uint8_t)
REF_INT(uint8, uint8_t, uint8_t)
REF_INT(int16, int16_t, uint16_t)
REF_INT(uint16, uint16_t, uint16_t)
REF_INT(int32, int32_t, uint32_t)
REF_INT(uint32, uint32_t, uint32_t)
REF_INT(int64, int64_t, uint64_t)
REF_INT(uint64, uint64_t, uint64_t)
REF_REAL(float, float)
REF_REAL(double, double)
REF_CPLX(fcx, fcx, float)
REF_CPLX(dcx, dcx, double)
REF_REAL(ldouble, long double)
REF_CPLX(ldcx, ldcx, long double)
REF_INT(int128, i128, u128)
REF_INT(uint128, u128, u128)

static const struct dtype {
	size_t size;
	int (*ref)(int op, void *a, const void *b, const void *c);
	int (*eq)(const void *x, const void *y);
	void (*set)(void *p, double re, double im);
} dts[NDT] = {
	{ 1, ref_int8, eq_int8, set_int8 }, { 1, ref_uint8, eq_uint8, set_uint8 },
	{ 2, ref_int16, eq_int16, set_int16 }, { 2, ref_uint16, eq_uint16, set_uint16 },
	{ 4, ref_int32, eq_int32, set_int32 }, { 4, ref_uint32, eq_uint32, set_uint32 },
	{ 8, ref_int64, eq_int64, set_int64 }, { 8, ref_uint64, eq_uint64, set_uint64 },
	{ sizeof(float), ref_float, eq_float, set_float }, { sizeof(double), ref_double, eq_double, set_double },
	{ sizeof(fcx), ref_fcx, eq_fcx, set_fcx }, { sizeof(dcx), ref_dcx, eq_dcx, set_dcx },
	{ sizeof(long double), ref_ldouble, eq_ldouble, set_ldouble }, { sizeof(ldcx), ref_ldcx, eq_ldcx, set_ldcx },
	{ 16, ref_int128, eq_int128, set_int128 }, { 16, ref_uint128, eq_uint128, set_uint128 },
};

/* Operand values: element e of the target's initial value (kind 0), the
 * operand (1) and the compare value (2). Integer types take the integer
 * part; the compare values meet equal, smaller and greater targets for
 * signed and unsigned types alike; float products and sums are exact. */
static const double vals[3][NEL][2] = {
	{ { 5.5, 1.5 }, { 0, 0 }, { -9.25, 2 }, { 3, 0 } },
	{ { 7.5, -0.5 }, { 0, 0 }, { 2.5, 1 }, { 0, 1 } },
	{ { 5.5, 1.5 }, { -4, 0 }, { 12, 2 }, { 3, 0 } },
};

static void fill_vals(int dt, int kind, char *p)
{
	memset(p, 0, SLOT);
	for (int e = 0; e < NEL; e++) {
		double re = vals[kind][e][0];
		if (dt < FI_FLOAT || dt >= FI_INT128)
			re = (double) (long long) re; /* integer part */
		dts[dt].set(p + (size_t) e * dts[dt].size, re, vals[kind][e][1]);
	}
}

/* Whether the man page lets `op` appear in `form`. */
static int allowed(enum form f, int op)
{
	if (f == BASE)
		return op <= FI_BXOR || op == FI_ATOMIC_WRITE;
	if (f == FETCH)
		return op <= FI_ATOMIC_WRITE;
	return op >= FI_CSWAP;
}

static int has_ref(int dt, int op)
{
	char a[ELMAX] = { 0 }, b[ELMAX] = { 0 }, c[ELMAX] = { 0 };
	return dts[dt].ref(op, a, b, c);
}

static size_t slot_of(enum form f, int dt, int op)
{
	return (((size_t) f * NDT + (size_t) dt) * NOP + (size_t) op) * SLOT;
}
#define NSLOT (NFORM * NDT * NOP)

static struct os_mr tgt, loc; /* server: target slots; client: operand | compare | result */
static struct os_rkey peer;
static unsigned char ran[NSLOT]; /* elements run per combination (0: not run) */

static int valid(enum form f, int dt, int op, size_t *count)
{
	if (f == BASE)
		return fi_atomicvalid(ft_ep, (enum fi_datatype) dt, (enum fi_op) op, count);
	if (f == FETCH)
		return fi_fetch_atomicvalid(ft_ep, (enum fi_datatype) dt, (enum fi_op) op, count);
	return fi_compare_atomicvalid(ft_ep, (enum fi_datatype) dt, (enum fi_op) op, count);
}

static int run_stats[4]; /* run, invalid, valid without reference, skipped by size */

/* Runs one combination on n elements; returns whether it ran. */
static void run_one(enum form f, int dt, int op, size_t n, unsigned variant)
{
	static int ctx;
	size_t sz = dts[dt].size, bytes = n * sz;
	char *opnd = loc.buf, *cmp = loc.buf + SLOT, *res = loc.buf + 2 * SLOT;
	uint64_t raddr = peer.addr + slot_of(f, dt, op);
	enum fi_datatype d = (enum fi_datatype) dt;
	enum fi_op o = (enum fi_op) op;
	void *descs[2] = { loc.desc, loc.desc };
	struct fi_ioc ioc[2] = { { opnd, 1 }, { opnd + sz, n - 1 } };
	struct fi_ioc cioc[2] = { { cmp, 1 }, { cmp + sz, n - 1 } };
	struct fi_ioc rioc[2] = { { res, 1 }, { res + sz, n - 1 } };
	struct fi_rma_ioc rma = { raddr, n, peer.key };
	struct fi_msg_atomic m = { .msg_iov = ioc, .desc = descs, .iov_count = 1, .addr = ft_peer, .rma_iov = &rma,
				   .rma_iov_count = 1, .datatype = d, .op = o, .context = &ctx };
	size_t niov = n > 1 && ft_info->tx_attr->iov_limit >= 2 ? 2 : 1;
	char what[96], init[SLOT];
	int inject = 0;
	snprintf(what, sizeof(what), "%s %s %s x%zu (variant %u)", form_name[f], op_name[op], dt_name[dt], n, variant);
	if (niov == 1)
		ioc[0].count = cioc[0].count = rioc[0].count = n;
	fill_vals(dt, 1, opnd);
	fill_vals(dt, 2, cmp);
	memset(res, 0xcc, SLOT);
	m.data = 0;
	if (f == BASE) {
		switch (variant % 4) {
		case 0: FT_POST(fi_atomic(ft_ep, opnd, n, loc.desc, ft_peer, raddr, peer.key, d, o, &ctx), what); break;
		case 1: FT_POST(fi_atomicv(ft_ep, ioc, descs, niov, ft_peer, raddr, peer.key, d, o, &ctx), what); break;
		case 2:
			m.iov_count = niov;
			FT_POST(fi_atomicmsg(ft_ep, &m, 0), what);
			break;
		default:
			if (bytes <= ft_info->tx_attr->inject_size) {
				FT_POST(fi_inject_atomic(ft_ep, opnd, n, ft_peer, raddr, peer.key, d, o), what);
				inject = 1;
				memset(opnd, 0, SLOT); /* copied by the call */
			} else {
				FT_POST(fi_atomic(ft_ep, opnd, n, loc.desc, ft_peer, raddr, peer.key, d, o, &ctx), what);
			}
		}
	} else if (f == FETCH) {
		const void *src = op == FI_ATOMIC_READ ? NULL : opnd;
		switch (variant % 3) {
		case 0:
			FT_POST(fi_fetch_atomic(ft_ep, src, n, loc.desc, res, loc.desc, ft_peer, raddr, peer.key, d, o, &ctx),
				what);
			break;
		case 1:
			FT_POST(fi_fetch_atomicv(ft_ep, ioc, descs, niov, rioc, descs, niov, ft_peer, raddr, peer.key, d, o,
						 &ctx),
				what);
			break;
		default:
			m.iov_count = niov;
			FT_POST(fi_fetch_atomicmsg(ft_ep, &m, rioc, descs, niov, 0), what);
		}
	} else {
		switch (variant % 3) {
		case 0:
			FT_POST(fi_compare_atomic(ft_ep, opnd, n, loc.desc, cmp, loc.desc, res, loc.desc, ft_peer, raddr,
						  peer.key, d, o, &ctx),
				what);
			break;
		case 1:
			FT_POST(fi_compare_atomicv(ft_ep, ioc, descs, niov, cioc, descs, niov, rioc, descs, niov, ft_peer,
						   raddr, peer.key, d, o, &ctx),
				what);
			break;
		default:
			m.iov_count = niov;
			FT_POST(fi_compare_atomicmsg(ft_ep, &m, cioc, descs, niov, rioc, descs, niov, 0), what);
		}
	}
	ran[slot_of(f, dt, op) / SLOT] = (unsigned char) n;
	run_stats[0]++;
	if (inject)
		return;
	{
		struct fi_cq_tagged_entry e;
		if (!xf_cq_get(ft_txcq, &e, what))
			return;
		FT_CHECK(e.op_context == &ctx, "%s: op_context %p", what, e.op_context);
		FT_CHECK((e.flags & FI_ATOMIC) && (e.flags & (FI_READ | FI_WRITE)) &&
				 !(e.flags & (FI_RMA | FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE)),
			 "%s: completion flags %#llx, want FI_ATOMIC with FI_READ or FI_WRITE", what,
			 (unsigned long long) e.flags);
	}
	if (f == BASE)
		return;
	fill_vals(dt, 0, init);
	for (size_t i = 0; i < n; i++)
		FT_CHECK(dts[dt].eq(res + i * sz, init + i * sz), "%s: fetched element %zu is not the initial value", what,
			 i);
	for (size_t i = n * sz; i < SLOT; i++)
		if ((unsigned char) res[i] != 0xcc) {
			FT_CHECK(0, "%s: result buffer written past %zu elements", what, n);
			break;
		}
}

static void client(void)
{
	unsigned variant = 0;
	for (int f = 0; f < NFORM; f++) {
		uint64_t qflags = f == FETCH ? FI_FETCH_ATOMIC : f == COMPARE ? FI_COMPARE_ATOMIC : 0;
		for (int dt = 0; dt < NDT; dt++) {
			for (int op = 0; op < NOP; op++) {
				struct fi_atomic_attr attr = { 0, 0 };
				size_t count = 0;
				int rc = valid((enum form) f, dt, op, &count);
				int qrc = fi_query_atomic(ft_domain, (enum fi_datatype) dt, (enum fi_op) op, &attr, qflags);
				const char *fn = f == BASE ? "fi_atomicvalid" : f == FETCH ? "fi_fetch_atomicvalid" :
							      "fi_compare_atomicvalid";
				FT_CHECK((rc == 0) == (qrc == 0), "%s(%s, %s) = %d but fi_query_atomic = %d", fn, dt_name[dt],
					 op_name[op], rc, qrc);
				if (!allowed((enum form) f, op)) {
					FT_CHECK(rc < 0, "%s(%s, %s) = %d: fi_atomic(3) has no %s %s", fn, dt_name[dt],
						 op_name[op], rc, form_name[f], op_name[op]);
					FT_CHECK(qrc < 0, "fi_query_atomic(%s, %s, %s) = %d: fi_atomic(3) has no such form",
						 dt_name[dt], op_name[op], form_name[f], qrc);
					continue;
				}
				if (rc) {
					FT_CHECK(rc < 0, "%s = %d", fn, rc);
					run_stats[1]++;
					continue;
				}
				FT_CHECK(count >= 1, "%s(%s, %s): count %zu", fn, dt_name[dt], op_name[op], count);
				if (!qrc) {
					FT_CHECK(attr.count == count, "fi_query_atomic(%s, %s): count %zu, %s says %zu",
						 dt_name[dt], op_name[op], attr.count, fn, count);
					FT_CHECK(attr.size == dts[dt].size, "fi_query_atomic(%s): size %zu, want %zu",
						 dt_name[dt], attr.size, dts[dt].size);
				}
				if ((only_op >= 0 && op != only_op) || (only_dt >= 0 && dt != only_dt))
					continue;
				if (!has_ref(dt, op)) {
					ft_log("%s %s %s: valid, no C reference, not run", form_name[f], op_name[op],
					       dt_name[dt]);
					run_stats[2]++;
					continue;
				}
				if (count < 1 || (!qrc && attr.size != dts[dt].size)) {
					run_stats[3]++;
					continue;
				}
				run_one((enum form) f, dt, op, count < NEL ? count : NEL, variant++);
			}
		}
	}
	{
		struct fi_atomic_attr attr;
		int rc = fi_query_atomic(ft_domain, FI_UINT64, FI_CSWAP, &attr, FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC);
		FT_CHECK(rc < 0, "fi_query_atomic with FI_FETCH_ATOMIC|FI_COMPARE_ATOMIC = %d, want an error", rc);
	}
	printf("fi_rdm_atomic: %d combinations run, %d reported invalid, %d valid without a C reference, %d skipped\n",
	       run_stats[0], run_stats[1], run_stats[2], run_stats[3]);
	FT_CHECK(run_stats[0] > 0, "no atomic combination was valid");
	/* the server checks what ran */
	os_swap(ran, sizeof(ran), NULL, 0);
	os_sync();
}

static void server(void)
{
	int checked = 0;
	os_swap(NULL, 0, ran, sizeof(ran));
	for (int f = 0; f < NFORM; f++)
		for (int dt = 0; dt < NDT; dt++)
			for (int op = 0; op < NOP; op++) {
				size_t s = slot_of((enum form) f, dt, op), sz = dts[dt].size, n = ran[s / SLOT];
				char want[SLOT], opnd[SLOT], cmp[SLOT];
				if (!n)
					continue;
				fill_vals(dt, 0, want);
				fill_vals(dt, 1, opnd);
				fill_vals(dt, 2, cmp);
				for (size_t e = 0; e < n; e++)
					dts[dt].ref(op, want + e * sz, opnd + e * sz, cmp + e * sz);
				for (size_t e = 0; e < NEL; e++)
					FT_CHECK(dts[dt].eq(tgt.buf + s + e * sz, want + e * sz),
						 "%s %s %s x%zu: target element %zu differs from the reference%s",
						 form_name[f], op_name[op], dt_name[dt], n, e,
						 e >= n ? " (beyond the count: must be untouched)" : "");
				checked++;
			}
	printf("fi_rdm_atomic: %d target slots checked\n", checked);
	os_sync();
}

static void opt(int c, const char *arg)
{
	if (c == 'o' && strcmp(arg, "all")) {
		for (int i = 0; i < NOP; i++)
			if (!strcmp(arg, op_name[i]))
				only_op = i;
		if (only_op < 0)
			ft_die("unknown op '%s'", arg);
	} else if (c == 'z' && strcmp(arg, "all")) {
		for (int i = 0; i < NDT; i++)
			if (!strcmp(arg, dt_name[i]))
				only_dt = i;
		if (only_dt < 0)
			ft_die("unknown datatype '%s'", arg);
	}
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	static char lbuf[3 * SLOT];
	char *tbuf;
	ft_args(argc, argv, "o:z:", opt);
	hints = os_hints(FI_MSG | FI_ATOMIC);
	/* honoured: no fi_writedata here, nothing consumes a receive */
	hints->mode = hints->rx_attr->mode = FI_RX_CQ_DATA;
	os_require(hints);
	ft_setup(hints);
	os_init();
	tbuf = calloc(NSLOT, SLOT);
	if (!tbuf)
		ft_die("calloc");
	if (!ft_is_client())
		for (int f = 0; f < NFORM; f++)
			for (int dt = 0; dt < NDT; dt++)
				for (int op = 0; op < NOP; op++)
					fill_vals(dt, 0, tbuf + slot_of((enum form) f, dt, op));
	os_reg(&tgt, tbuf, (size_t) NSLOT * SLOT, FI_REMOTE_READ | FI_REMOTE_WRITE);
	os_reg(&loc, lbuf, sizeof(lbuf), FI_READ | FI_WRITE);
	{
		struct os_rkey mine = os_rkey_of(&tgt, 0, tgt.len);
		os_swap_keys(&mine, &peer, 1);
	}
	if (ft_is_client())
		client();
	else
		server();
	os_unreg(&loc);
	os_unreg(&tgt);
	free(tbuf);
	return os_finish("fi_rdm_atomic");
}
