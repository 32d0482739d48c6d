/*
 * fi_rma_bw: RMA streaming bandwidth, fabtests' options and output
 * columns. -o write (default) | read | writedata picks the operation; the
 * client is the initiator and keeps a window (-W) of operations in flight
 * against one region of the server, which is registered for remote access
 * and whose address and key (FI_MR_VIRT_ADDR / FI_MR_PROV_KEY honoured)
 * the server sends over the control channel. With writedata the server
 * counts the remote-CQ-data completions of each window and acknowledges
 * it, as fi_rdm_tagged_bw acknowledges messages.
 *
 * Before each size the server says "ready" (for -v reads: its region holds
 * the pattern); after it the client says "done" (for -v writes: the server
 * then checks its region). A provider without FI_RMA: "SKIP: <prov> lacks
 * FI_RMA", exit 77.
 *
 * Server: fi_rma_bw -p PROV -e rdm|msg [-o OP] [-B port];
 * client: fi_rma_bw -p PROV -e rdm|msg [-o OP] [-P port] SERVER_ADDR.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "bench_common.h"
#include <rdma/fi_rma.h>

enum op { OP_WRITE, OP_READ, OP_WRITEDATA };
static enum op op = OP_WRITE;

struct rkey {
	uint64_t addr, key;
};

static struct fid_mr *rma_mr;
static void *rma_desc;
static struct rkey peer;

/* -o is ours; everything else goes to parse_opts. */
static int take_op_option(int argc, char **argv)
{
	int out = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			const char *v = argv[++i];
			if (!strcmp(v, "write"))
				op = OP_WRITE;
			else if (!strcmp(v, "read"))
				op = OP_READ;
			else if (!strcmp(v, "writedata"))
				op = OP_WRITEDATA;
			else
				die("-o takes write, read or writedata, not '%s'", v);
			continue;
		}
		argv[out++] = argv[i];
	}
	argv[out] = NULL;
	return out;
}

/* The skip convention of fabtests-compat: the provider has no RMA. */
static void require_rma(struct bench *b)
{
	struct fi_info *h = fi_allocinfo(), *info = NULL;
	int rc;
	if (!h)
		die("fi_allocinfo failed");
	h->caps = FI_RMA | (b->o.ep_type == FI_EP_RDM ? FI_TAGGED : FI_MSG);
	h->ep_attr->type = b->o.ep_type;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	if (b->o.prov)
		h->fabric_attr->prov_name = strdup(b->o.prov);
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	fi_freeinfo(h);
	fi_freeinfo(info);
	if (rc == -FI_ENODATA) {
		printf("SKIP: %s lacks FI_RMA\n", b->o.prov ? b->o.prov : "the provider");
		exit(77);
	}
}

static void ctrl_send(struct bench *b, const void *p, size_t len)
{
	memcpy(b->ctrl_tx, p, len);
	if (b->tagged)
		POST(b, fi_tsend(b->ep, b->ctrl_tx, len, b->desc, b->peer, TAG_CTRL, &b->ctrl_tx_ctx), "fi_tsend(ctrl)");
	else
		POST(b, fi_send(b->ep, b->ctrl_tx, len, b->desc, b->peer, &b->ctrl_tx_ctx), "fi_send(ctrl)");
	wait_tx(b, b->tx_done + 1);
}

static void ctrl_post_recv(struct bench *b)
{
	if (b->tagged)
		POST(b, fi_trecv(b->ep, b->ctrl_rx, CTRL_LEN, b->desc, FI_ADDR_UNSPEC, TAG_CTRL, 0, &b->ctrl_rx_ctx),
		     "fi_trecv(ctrl)");
	else
		POST(b, fi_recv(b->ep, b->ctrl_rx, CTRL_LEN, b->desc, FI_ADDR_UNSPEC, &b->ctrl_rx_ctx), "fi_recv(ctrl)");
}

/* Receives one control message (its receive must be posted). */
static void ctrl_wait(struct bench *b, void *p, size_t len)
{
	wait_rx(b, b->rx_done + 1);
	if (p)
		memcpy(p, b->ctrl_rx, len);
}

/* Registers the whole buffer area for RMA and swaps (address, key) of the
 * receive slots with the peer. */
static void setup_rma(struct bench *b)
{
	size_t total = (b->max_size ? b->max_size : 1) * (1 + b->rx_slots);
	uint64_t mode = (uint64_t) b->info->domain_attr->mr_mode;
	struct rkey mine;
	CHECK(fi_mr_reg(b->domain, b->mem, total, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0xb0, 0,
			&rma_mr, NULL));
	rma_desc = (mode & FI_MR_LOCAL) ? fi_mr_desc(rma_mr) : NULL;
	mine.addr = (mode & FI_MR_VIRT_ADDR) ? (uint64_t) (uintptr_t) b->rx : (uint64_t) (b->rx - b->mem);
	mine.key = fi_mr_key(rma_mr);
	if (mine.key == FI_KEY_NOTAVAIL)
		die("fi_mr_key: FI_KEY_NOTAVAIL");
	if (op == OP_WRITEDATA && b->info->domain_attr->cq_data_size < 8)
		die("writedata needs cq_data_size 8, the domain has %zu", b->info->domain_attr->cq_data_size);
	ctrl_post_recv(b);
	ctrl_send(b, &mine, sizeof(mine));
	ctrl_wait(b, &peer, sizeof(peer));
}

static void post_rma(struct bench *b, size_t size, size_t j, uint64_t seq)
{
	void *ctx = &b->tx_ctx[j];
	uint64_t addr = peer.addr + (j % b->rx_slots) * b->max_size;
	if (op == OP_WRITE)
		POST(b, fi_write(b->ep, b->tx, size, rma_desc, b->peer, addr, peer.key, ctx), "fi_write");
	else if (op == OP_WRITEDATA)
		POST(b, fi_writedata(b->ep, b->tx, size, rma_desc, seq, b->peer, addr, peer.key, ctx), "fi_writedata");
	else
		POST(b, fi_read(b->ep, b->rx + (j % b->rx_slots) * b->max_size, size, rma_desc, b->peer, addr, peer.key,
				ctx),
		     "fi_read");
}

int main(int argc, char **argv)
{
	struct bench b;
	argc = take_op_option(argc, argv);
	parse_opts(&b, argc, argv, FI_EP_RDM, "RMA streaming bandwidth (-o write|read|writedata)");
	require_rma(&b);
	if (b.o.ep_type == FI_EP_RDM) {
		b.tagged = 1;
		setup_rdm(&b, FI_TAGGED | FI_RMA, NULL);
	} else {
		setup_msg(&b, FI_MSG | FI_RMA, NULL);
	}
	setup_rma(&b);
	const long w = b.o.window;
	uint64_t seq = 0;
	print_header();
	for (int k = 0; k < b.o.nsizes; k++) {
		size_t size = b.o.sizes[k];
		long windows = (iters_for(&b, size) + w - 1) / w;
		long warm = b.o.warmup > 0 ? 1 : 0;
		double t0;
		seq++;
		if (b.is_client) {
			ctrl_post_recv(&b);
			ctrl_wait(&b, NULL, 0); /* ready */
			if (b.o.verify && op != OP_READ)
				fill(b.tx, size, seq);
			t0 = now_s();
			for (long i = -warm; i < windows; i++) {
				if (i == 0)
					t0 = now_s();
				if (op == OP_WRITEDATA)
					ctrl_post_recv(&b);
				for (long j = 0; j < w; j++)
					post_rma(&b, size, (size_t) j, seq);
				wait_tx(&b, b.tx_done + (uint64_t) w);
				if (op == OP_WRITEDATA)
					wait_rx(&b, b.rx_done + 1); /* the window's ack */
				if (b.o.verify && op == OP_READ)
					for (size_t j = 0; j < b.rx_slots && j < (size_t) w; j++)
						check(b.rx + j * b.max_size, size, seq, "client read");
			}
			print_result(size, windows * w, (double) (windows * w), now_s() - t0);
			ctrl_post_recv(&b);
			ctrl_send(&b, "done", 5);
			ctrl_wait(&b, NULL, 0); /* checked */
		} else {
			if (b.o.verify && op == OP_READ)
				for (size_t j = 0; j < b.rx_slots; j++)
					fill(b.rx + j * b.max_size, size, seq);
			ctrl_post_recv(&b);
			ctrl_send(&b, "ready", 6);
			t0 = now_s();
			if (op == OP_WRITEDATA) {
				/* the done message is already posted for: count data
				 * completions per window, then ack */
				for (long i = -warm; i < windows; i++) {
					if (i == 0)
						t0 = now_s();
					wait_rx(&b, b.rx_done + (uint64_t) w);
					ctrl_send(&b, "ack", 4);
				}
			}
			ctrl_wait(&b, NULL, 0); /* done */
			print_result(size, windows * w, (double) (windows * w), now_s() - t0);
			if (b.o.verify && op != OP_READ)
				for (size_t j = 0; j < b.rx_slots && j < (size_t) w; j++)
					check(b.rx + j * b.max_size, size, seq, "server (write target)");
			ctrl_send(&b, "checked", 8);
		}
	}
	if (rma_mr)
		fi_close(&rma_mr->fid);
	teardown(&b);
	return 0;
}
