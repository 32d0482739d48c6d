/*
 * fi_rma_badaccess: RMA that the target must refuse. The server registers
 * four regions inside one larger buffer filled with a sentinel: a
 * read-write region, a read-only (FI_REMOTE_READ) one, a write-only
 * (FI_REMOTE_WRITE) one and one it closes before the client uses its key.
 * The client then tries:
 *
 *  wrongkey   fi_write / fi_read with a key the server never handed out
 *  range      a write and a read crossing the end of the read-write region
 *             (and, under FI_MR_VIRT_ADDR, starting before it)
 *  wrap       an address whose addr + len wraps around 2^64
 *  readonly   a write into the read-only region (a read of it succeeds)
 *  writeonly  a read of the write-only region (a write into it succeeds)
 *  closed     a write and a read through the key of the closed region
 *
 * Each refused operation must complete at the initiator with an error
 * (fi_cq_readerr): its op_context, an error of the access class
 * (FI_EACCES, which upstream's sockets provider reports for every case
 * here, or FI_EPERM / FI_EKEYREJECTED) and a provider error string from
 * fi_cq_strerror; nothing outside the accepted ranges of the server's
 * buffer changes (checked byte by byte after every case); and the
 * connection still carries a valid write and a message afterwards.
 *
 * -1 (MSG only): one refusal per connection. On RC queue pairs (verbs) a
 * refused access puts the connection in the error state, as upstream's
 * verbs provider and the device behave: after each refusal the client
 * closes its endpoint and connects anew, the server sees FI_SHUTDOWN (its
 * pending receives flushed) and accepts the new connection; the checks
 * are otherwise the same, the valid write and message after each case on
 * the new connection.
 *
 * Run: -e msg|rdm [-x case]... [-1]
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "onesided.h"

#define BUFSZ (1 << 20)
#define REG (64 * 1024)
#define SENT 0x5a
enum { RW, RO, WO, CLOSED, NREG };
static const size_t reg_off[NREG] = { 64 * 1024, 256 * 1024, 384 * 1024, 512 * 1024 };
static const uint64_t reg_access[NREG] = { FI_REMOTE_READ | FI_REMOTE_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE,
					   FI_REMOTE_READ | FI_REMOTE_WRITE };
static struct os_mr regs[NREG], local;
static struct os_rkey peer[NREG];
static char *buf, *lbuf;
static char skip[256];
static int refused, accepted;
static int renew; /* -1 */
static int srv_ctx; /* the server's control receive in serve_case */

/* Client, -1: the connection died with the refusal; a new one. */
static void reconnect(void)
{
	struct fi_eq_cm_entry cm;
	int rc;
	if ((rc = fi_close(&ft_ep->fid)))
		ft_die("fi_close(ep): %s", fi_strerror(-rc));
	ft_ep = NULL;
	ft_connect(NULL, 0, &cm, sizeof(cm));
}

/* Server, -1: the first half of a case's closing sync, accepting every
 * new connection the client makes on the way: FI_SHUTDOWN closes the
 * endpoint (its flushed receive is dropped), FI_CONNREQ is accepted; the
 * client's sync message ends it, answered with an empty one. */
static void serve_case(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char entry[sizeof(struct fi_eq_cm_entry) + 64];
	struct fi_eq_err_entry eqerr;
	double end = ft_now() + FT_TIMEOUT;
	int posted = 0;
	while (ft_now() < end) {
		uint32_t ev;
		ssize_t n;
		if (ft_ep && !posted) {
			FT_POST(fi_recv(ft_ep, os_ctl.buf + OS_CTL, OS_CTL, os_ctl.desc, ft_peer, &srv_ctx),
				"fi_recv(control)");
			posted = 1;
		}
		n = ft_cq_poll(ft_rxcq, &e, &err, NULL);
		if (n > 0 && e.op_context == &srv_ctx) {
			FT_POST(fi_send(ft_ep, os_ctl.buf, 0, os_ctl.desc, ft_peer, &os_ctl_tx_ctx), "fi_send(control)");
			os_cq_ctx(ft_txcq, &os_ctl_tx_ctx, "control send");
			return;
		}
		if (n < 0 && err.err != FI_ECANCELED)
			ft_die("receive error %s while the client reconnects", fi_strerror(err.err));
		n = fi_eq_read(ft_eq, &ev, entry, sizeof(entry), 0);
		if (n == -FI_EAVAIL) {
			fi_eq_readerr(ft_eq, &eqerr, 0);
			ft_die("EQ error %s while the client reconnects", fi_strerror(eqerr.err));
		}
		if (n < 0)
			continue;
		if (ev == FI_SHUTDOWN) {
			/* (an endpoint closed below reports nothing more) */
			if (ft_ep && ((struct fi_eq_cm_entry *) entry)->fid == &ft_ep->fid) {
				fi_close(&ft_ep->fid);
				ft_ep = NULL;
			}
		} else if (ev == FI_CONNREQ) {
			/* the old connection's FI_SHUTDOWN may not have come yet */
			if (ft_ep)
				fi_close(&ft_ep->fid);
			ft_ep = NULL;
			ft_accept_req((struct fi_eq_cm_entry *) entry, NULL, 0);
			posted = 0;
		} else {
			ft_die("EQ event %u while the client reconnects", ev);
		}
	}
	ft_die("the case's sync did not come within %.0f s", FT_TIMEOUT);
}

/* Whether the error is one of the access class. */
static int access_class(int err)
{
	return err == FI_EACCES || err == FI_EKEYREJECTED || err == FI_EPERM;
}

/* Client: one operation that the target must refuse. */
static void refuse(int is_write, uint64_t addr, size_t len, uint64_t key, const char *what)
{
	static int ctx;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t rc;
	int n;
	memset(lbuf, 0x77, len);
	if (is_write)
		rc = fi_write(ft_ep, lbuf, len, local.desc, ft_peer, addr, key, &ctx);
	else
		rc = fi_read(ft_ep, lbuf, len, local.desc, ft_peer, addr, key, &ctx);
	if (rc) {
		/* refused at posting: allowed only with the same class of error */
		FT_CHECK(rc < 0 && access_class((int) -rc), "%s: posting returned %zd (%s)", what, rc,
			 fi_strerror((int) -rc));
		refused++;
		return;
	}
	n = ft_cq_wait(ft_txcq, &e, &err, NULL);
	FT_CHECK(n < 0, "%s: completed successfully, want an error completion", what);
	if (n >= 0)
		return;
	refused++;
	FT_CHECK(access_class(err.err), "%s: error %d (%s), want an access error such as FI_EACCES", what, err.err,
		 fi_strerror(err.err));
	FT_CHECK(err.op_context == &ctx, "%s: error completion op_context %p, want %p", what, err.op_context,
		 (void *) &ctx);
	{
		const char *s = fi_cq_strerror(ft_txcq, err.prov_errno, err.err_data, NULL, 0);
		FT_CHECK(s && *s, "%s: fi_cq_strerror gives no provider error string", what);
		ft_log("%s: %s (%d), provider: %s", what, fi_strerror(err.err), err.err, s ? s : "(null)");
	}
	if (renew)
		reconnect();
}

/* Client: one operation that must succeed (the connection still works);
 * a write puts the pattern at `seed`, a read must bring the sentinel. */
static void accept_op(int is_write, uint64_t addr, size_t len, uint64_t key, size_t seed, const char *what)
{
	static int ctx;
	struct fi_cq_tagged_entry e;
	if (is_write)
		xf_fill_at(lbuf, len, seed);
	else
		memset(lbuf, 0, len); /* the read brings the server's sentinel */
	if (is_write)
		FT_POST(fi_write(ft_ep, lbuf, len, local.desc, ft_peer, addr, key, &ctx), what);
	else
		FT_POST(fi_read(ft_ep, lbuf, len, local.desc, ft_peer, addr, key, &ctx), what);
	if (!xf_cq_get(ft_txcq, &e, what))
		return;
	if (!is_write)
		FT_CHECK(os_untouched(lbuf, len, SENT) < 0, "%s: read returned other bytes than the region holds", what);
	accepted++;
}

/* Server: the whole buffer holds the sentinel except [off, off+len),
 * which holds the pattern at `seed` (len 0: nothing written). Restores. */
static void server_check(size_t off, size_t len, size_t seed, const char *what)
{
	long bad;
	if (len)
		FT_CHECK(xf_verify_at(buf + off, len, seed) < 0, "%s: the accepted write did not land", what);
	memset(buf + off, SENT, len);
	bad = os_untouched(buf, BUFSZ, SENT);
	FT_CHECK(bad < 0, "%s: server memory changed at buffer offset %ld (region %s)", what, bad,
		 bad < 0 ? "" : "outside any accepted range");
	if (bad >= 0)
		memset(buf, SENT, BUFSZ);
}

/* One case: the client runs `body`, both sides sync, the server checks
 * that only [off, off+len) changed, then a valid write and a message show
 * the connection is still usable. */
#define CASE(name, off, len, seed, body) \
	do { \
		if (strstr(skip, "," name ",")) \
			break; \
		if (ft_is_client()) { \
			body; \
			accept_op(1, peer[RW].addr + 8, 1000, peer[RW].key, 0xa000, name ": valid write after"); \
			os_sync(); \
			os_sync(); \
		} else { \
			if (renew) \
				serve_case(); \
			else \
				os_sync(); \
			server_check(off, len, seed, name); \
			os_sync(); \
		} \
		ft_log("%s: done", name); \
	} while (0)

static void opt(int c, const char *arg)
{
	if (c == 'x')
		snprintf(skip + strlen(skip), sizeof(skip) - strlen(skip), ",%s,", arg);
	else if (c == '1')
		renew = 1;
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	struct os_rkey mine[NREG];
	uint64_t bogus = 0;
	ft_args(argc, argv, "x:1", opt);
	if (renew && ft_ep_type != FI_EP_MSG)
		ft_die("-1 is for MSG endpoints");
	hints = os_hints(FI_MSG | FI_RMA);
	/* honoured: no fi_writedata here, nothing consumes a receive */
	hints->mode = hints->rx_attr->mode = FI_RX_CQ_DATA;
	os_require(hints);
	ft_setup(hints);
	os_init();
	buf = malloc(BUFSZ);
	lbuf = malloc(2 * REG + 4096);
	if (!buf || !lbuf)
		ft_die("malloc");
	memset(buf, SENT, BUFSZ);
	os_reg(&local, lbuf, 2 * REG + 4096, FI_READ | FI_WRITE);
	for (int i = 0; i < NREG; i++) {
		if (ft_is_client())
			break;
		os_reg(&regs[i], buf + reg_off[i], REG, reg_access[i]);
		mine[i] = os_rkey_of(&regs[i], 0, REG);
	}
	if (ft_is_client())
		memset(mine, 0, sizeof(mine));
	os_swap_keys(mine, peer, NREG);
	if (!ft_is_client()) {
		/* the client holds the key of a region that goes away now */
		os_unreg(&regs[CLOSED]);
	} else {
		for (int i = 0; i < NREG; i++)
			bogus = peer[i].key > bogus ? peer[i].key : bogus;
		bogus += 0x10001; /* a key the server never handed out */
	}
	os_sync();

	/* The valid write each case ends with lands here: */
#define VALID_OFF (reg_off[RW] + 8)
	CASE("wrongkey", VALID_OFF, 1000, 0xa000, {
		refuse(1, peer[RW].addr, 100, bogus, "fi_write with a wrong key");
		refuse(0, peer[RW].addr, 100, bogus, "fi_read with a wrong key");
	});
	CASE("range", VALID_OFF, 1000, 0xa000, {
		refuse(1, peer[RW].addr + REG - 100, 200, peer[RW].key, "fi_write crossing the region's end");
		refuse(0, peer[RW].addr + REG - 100, 200, peer[RW].key, "fi_read crossing the region's end");
		refuse(1, peer[RW].addr + REG, 1, peer[RW].key, "fi_write of the byte after the region");
		if (os_mr_mode & FI_MR_VIRT_ADDR)
			refuse(1, peer[RW].addr - 100, 200, peer[RW].key, "fi_write starting before the region");
	});
	CASE("wrap", VALID_OFF, 1000, 0xa000, {
		refuse(1, UINT64_MAX - 50, 100, peer[RW].key, "fi_write whose addr + len wraps");
		refuse(0, UINT64_MAX - 50, 100, peer[RW].key, "fi_read whose addr + len wraps");
	});
	CASE("readonly", VALID_OFF, 1000, 0xa000, {
		refuse(1, peer[RO].addr + 10, 100, peer[RO].key, "fi_write into a read-only region");
		accept_op(0, peer[RO].addr + 10, 100, peer[RO].key, 0, "fi_read of the read-only region");
	});
	CASE("writeonly", VALID_OFF, 1000, 0xa000, {
		refuse(0, peer[WO].addr + 10, 100, peer[WO].key, "fi_read of a write-only region");
	});
	CASE("closed", VALID_OFF, 1000, 0xa000, {
		refuse(1, peer[CLOSED].addr, 100, peer[CLOSED].key, "fi_write through a closed region's key");
		refuse(0, peer[CLOSED].addr, 100, peer[CLOSED].key, "fi_read through a closed region's key");
	});
	/* A message still goes through, both ways. */
	os_sync();
	if (ft_is_client())
		printf("fi_rma_badaccess: %d operations refused, %d accepted\n", refused, accepted);
	for (int i = 0; i < NREG; i++)
		os_unreg(&regs[i]);
	os_unreg(&local);
	free(buf);
	free(lbuf);
	return os_finish("fi_rma_badaccess");
}
