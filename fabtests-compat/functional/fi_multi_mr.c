/*
 * fi_multi_mr: many memory regions registered at once. Each side registers
 * -c regions (default 256) of different sizes (1 B to 64 KiB), each its
 * own allocation with its own key, and sends their keys and addresses to
 * the peer. Then, in each direction, the initiator writes a distinct
 * pattern over every peer region (up to 16 operations in flight), reads
 * every region back and checks it, and the target checks every region in
 * its memory. A second round closes every other region, registers new
 * ones in their place (keys of closed regions may come back) and runs
 * again, so that keys and lookups stay right as the table changes.
 *
 * Run: -e msg|rdm [-c count]
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "onesided.h"

#define MAXSZ (64 * 1024)
#define WINDOW 16
#define CHUNK 128 /* keys per control message */

static int count = 256;
static struct os_mr *regs, local;
static struct os_rkey *mine, *peer;
static char *lbuf;

static size_t size_of(int i, int round)
{
	static const size_t s[] = { 1, 7, 64, 100, 4096, 4097, 12345, MAXSZ };
	return s[(i + round) % 8];
}

static void opt(int c, const char *arg)
{
	if (c == 'c')
		count = atoi(arg);
}

static void reg_one(int i, int round)
{
	size_t len = size_of(i, round);
	char *p = malloc(len);
	if (!p)
		ft_die("malloc");
	memset(p, 0, len);
	os_reg(&regs[i], p, len, FI_REMOTE_READ | FI_REMOTE_WRITE);
	mine[i] = os_rkey_of(&regs[i], 0, len);
}

static void unreg_one(int i)
{
	char *p = regs[i].buf;
	os_unreg(&regs[i]);
	free(p);
}

static void swap_all_keys(void)
{
	for (int i = 0; i < count; i += CHUNK) {
		int n = count - i < CHUNK ? count - i : CHUNK;
		os_swap_keys(mine + i, peer + i, (size_t) n);
	}
}

/* Local slot of operation i in the window. */
static char *slot(int i)
{
	return lbuf + (size_t) (i % WINDOW) * MAXSZ;
}

/* Initiator: writes then reads back every peer region, WINDOW
 * operations at a time (completions may come in any order). */
static void initiate(int round)
{
	struct fi_cq_tagged_entry e;
	for (int pass = 0; pass < 2; pass++) {
		for (int first = 0; first < count; first += WINDOW) {
			int n = count - first < WINDOW ? count - first : WINDOW, seen = 0;
			for (int i = first; i < first + n; i++) {
				size_t len = peer[i].len, seed = (size_t) i * 1000 + (size_t) round;
				void *ctx = (void *) (uintptr_t) (i + 1);
				if (pass == 0) {
					xf_fill_at(slot(i), len, seed);
					FT_POST(fi_write(ft_ep, slot(i), len, local.desc, ft_peer, peer[i].addr, peer[i].key, ctx),
						"fi_write");
				} else {
					memset(slot(i), 0, len);
					FT_POST(fi_read(ft_ep, slot(i), len, local.desc, ft_peer, peer[i].addr, peer[i].key, ctx),
						"fi_read");
				}
			}
			for (int k = 0; k < n; k++) {
				if (!xf_cq_get(ft_txcq, &e, pass ? "fi_read of a region" : "fi_write of a region"))
					ft_die("an RMA operation failed (region %d..%d)", first, first + n - 1);
				int i = (int) (uintptr_t) e.op_context - 1;
				if (i < first || i >= first + n || (seen & (1 << (i - first)))) {
					FT_CHECK(0, "completion with op_context %p: not an outstanding operation", e.op_context);
					continue;
				}
				seen |= 1 << (i - first);
				if (pass == 1)
					FT_CHECK(xf_verify_at(slot(i), peer[i].len, (size_t) i * 1000 + (size_t) round) < 0,
						 "round %d: region %d (%llu bytes, key %#llx) read back wrong", round, i,
						 (unsigned long long) peer[i].len, (unsigned long long) peer[i].key);
			}
		}
	}
	os_sync();
	os_sync();
}

/* Target: checks every region once the initiator is done. */
static void target(int round)
{
	int bad = 0;
	os_sync();
	for (int i = 0; i < count; i++)
		if (xf_verify_at(regs[i].buf, regs[i].len, (size_t) i * 1000 + (size_t) round) >= 0 && bad++ < 5)
			FT_CHECK(0, "round %d: region %d (%zu bytes) holds wrong bytes", round, i, regs[i].len);
	FT_CHECK(bad == 0, "round %d: %d regions wrong", round, bad);
	os_sync();
}

static void run_round(int round)
{
	swap_all_keys();
	for (int dir = 0; dir < 2; dir++) {
		if (ft_is_client() == (dir == 0))
			initiate(round * 2 + dir);
		else
			target(round * 2 + dir);
	}
	ft_log("round %d: %d regions each way", round, count);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_args(argc, argv, "c:", opt);
	if (count < 1)
		ft_die("-c must be at least 1");
	hints = os_hints(FI_MSG | FI_RMA);
	os_require(hints);
	ft_setup(hints);
	os_init();
	regs = calloc((size_t) count, sizeof(*regs));
	mine = calloc((size_t) count, sizeof(*mine));
	peer = calloc((size_t) count, sizeof(*peer));
	lbuf = malloc((size_t) WINDOW * MAXSZ);
	if (!regs || !mine || !peer || !lbuf)
		ft_die("malloc");
	os_reg(&local, lbuf, (size_t) WINDOW * MAXSZ, FI_READ | FI_WRITE);
	for (int i = 0; i < count; i++)
		reg_one(i, 0);
	run_round(0);
	for (int i = 0; i < count; i += 2) {
		unreg_one(i);
		reg_one(i, 1);
	}
	run_round(1);
	for (int i = 0; i < count; i++)
		unreg_one(i);
	os_unreg(&local);
	free(regs);
	free(mine);
	free(peer);
	free(lbuf);
	return os_finish("fi_multi_mr");
}
