/*
 * Shared pieces of the fabtests-compat functional programs: fabtests'
 * server/client convention and options, opening the objects, connecting
 * (MSG) or exchanging addresses (RDM, DGRAM), and bounded completion waits.
 *
 * Convention (as upstream fabtests):
 *   server:  fi_NAME -p PROV [-e msg|rdm|dgram] [-B PORT] [-s SRCADDR]
 *   client:  fi_NAME -p PROV [-e msg|rdm|dgram] [-P PORT] SERVERADDR
 * Other options: -I iterations, -S size, -v (print each step), -E (the
 * server's endpoint name travels out of band, as upstream fabtests' -E:
 * see ft_oob_serve).
 * Programs with options of their own pass them in `extra` to ft_args and
 * get them through the `ft_extra_opt` callback.
 *
 * Every wait is bounded by FT_TIMEOUT seconds and ends the program with a
 * failure message naming what it waited for.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_FT_SHARED_H
#define OXI_FT_SHARED_H

#include "../unit/common.h"
#include <stdarg.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <rdma/fi_cm.h>

#define FT_TIMEOUT 20.0

struct ft_opts {
	const char *src_addr; /* -s */
	const char *src_port; /* -B */
	const char *dst_addr; /* positional: client mode */
	const char *dst_port; /* -P */
	int iters; /* -I */
	size_t size; /* -S */
	int verbose; /* -v */
	int oob; /* -E */
};

static struct ft_opts ft_opts = { .src_port = "9228", .dst_port = "9228", .iters = 10, .size = 64 };

/* The objects a functional program works with; the server's passive
 * endpoint and the fi_info of an accepted connection are kept apart. */
static struct fid_eq *ft_eq;
static struct fid_pep *ft_pep;
static struct fid_ep *ft_ep;
static struct fid_cq *ft_txcq, *ft_rxcq;
static struct fid_av *ft_av;
static fi_addr_t ft_peer = FI_ADDR_UNSPEC;
static struct fi_info *ft_conn_info; /* server, MSG: the FI_CONNREQ's info */

static inline int ft_is_client(void)
{
	return ft_opts.dst_addr != NULL;
}

/* Ends the program: something the test depends on did not happen. */
static inline void ft_die(const char *fmt, ...)
{
	va_list ap;
	printf("FAIL [%s]: ", ft_is_client() ? "client" : "server");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(2);
}

static inline void ft_log(const char *fmt, ...)
{
	va_list ap;
	if (!ft_opts.verbose)
		return;
	printf("[%s] ", ft_is_client() ? "client" : "server");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Program-specific options: called for each option letter in `extra`. */
typedef void (*ft_extra_fn)(int opt, const char *arg);

static inline void ft_args(int argc, char **argv, const char *extra, ft_extra_fn fn)
{
	char spec[64] = "p:e:B:P:s:I:S:vE";
	int c;
	if (extra)
		strncat(spec, extra, sizeof(spec) - strlen(spec) - 1);
	while ((c = getopt(argc, argv, spec)) != -1) {
		switch (c) {
		case 'p': ft_prov = optarg; break;
		case 'e':
			ft_ep_type = !strcmp(optarg, "msg") ? FI_EP_MSG :
				     !strcmp(optarg, "dgram") ? FI_EP_DGRAM : FI_EP_RDM;
			break;
		case 'B': ft_opts.src_port = optarg; break;
		case 'P': ft_opts.dst_port = optarg; break;
		case 's': ft_opts.src_addr = optarg; break;
		case 'I': ft_opts.iters = atoi(optarg); break;
		case 'S': ft_opts.size = strtoul(optarg, NULL, 0); break;
		case 'v': ft_opts.verbose = 1; break;
		case 'E': ft_opts.oob = 1; break;
		default:
			if (fn && c != '?') {
				fn(c, optarg);
				break;
			}
			fprintf(stderr, "usage: %s -p PROV [-e msg|rdm|dgram] [-B PORT|-P PORT ADDR] [-I N] [-S SIZE] [-v] [-E]\n",
				argv[0]);
			exit(2);
		}
	}
	if (optind < argc)
		ft_opts.dst_addr = argv[optind];
}

/* Hints for this program: provider and endpoint type from the options,
 * the caps given. The caller may adjust them before ft_setup. */
static inline struct fi_info *ft_hints(uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();
	if (!h)
		ft_die("fi_allocinfo");
	h->fabric_attr->prov_name = strdup(ft_prov);
	h->ep_attr->type = ft_ep_type;
	h->caps = caps;
	h->mode = 0; /* these programs honour no mode bit (no FI_CONTEXT, no prefixes) */
	return h;
}

/* Drops FI_TAGGED from `hints` when the provider has no such entry for
 * this endpoint type (upstream tcp MSG); returns whether tagged calls can
 * be tested. */
static inline int ft_probe_tagged(struct fi_info *hints)
{
	struct fi_info *probe = NULL;
	int ok = !fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &probe);
	fi_freeinfo(probe);
	if (!ok) {
		hints->caps &= ~FI_TAGGED;
		printf("no FI_TAGGED on this endpoint: tagged cases skipped\n");
	}
	return ok;
}

/* Ends the program with "SKIP: PROV lacks WHAT" and exit status 77 when
 * the provider has no entry for `hints` (fi_getinfo gives -FI_ENODATA):
 * for programs that need something a provider may rightly not offer.
 * Frees hints only when it ends the program. */
static inline void ft_require(struct fi_info *hints, const char *what)
{
	struct fi_info *probe = NULL;
	int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &probe);
	fi_freeinfo(probe);
	if (rc != -FI_ENODATA)
		return;
	printf("SKIP: %s lacks %s\n", ft_prov, what);
	fi_freeinfo(hints);
	exit(77);
}

/* fi_getinfo for the server (bound to -s/-B) or the client (toward the
 * positional address and -P), then fabric, domain and EQ; with -E neither
 * side names a node or service (the client learns the server's address
 * in ft_open_ep). Frees hints. */
static inline void ft_setup(struct fi_info *hints)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	int rc;
	if (ft_opts.oob)
		rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &ft_info);
	else if (ft_is_client())
		rc = fi_getinfo(FI_VERSION(1, 17), ft_opts.dst_addr, ft_opts.dst_port, 0, hints, &ft_info);
	else
		rc = fi_getinfo(FI_VERSION(1, 17), ft_opts.src_addr ? ft_opts.src_addr : "127.0.0.1",
				ft_opts.src_port, FI_SOURCE, hints, &ft_info);
	fi_freeinfo(hints);
	if (rc)
		ft_die("fi_getinfo: %s", fi_strerror(-rc));
	if ((rc = fi_fabric(ft_info->fabric_attr, &ft_fabric, NULL)))
		ft_die("fi_fabric: %s", fi_strerror(-rc));
	if ((rc = fi_eq_open(ft_fabric, &eqa, &ft_eq, NULL)))
		ft_die("fi_eq_open: %s", fi_strerror(-rc));
	if ((rc = fi_domain(ft_fabric, ft_info, &ft_domain, NULL)))
		ft_die("fi_domain: %s", fi_strerror(-rc));
}

/* Opens the transmit and receive CQs (format given) and, except for MSG,
 * the AV. */
static inline void ft_open_cqs(enum fi_cq_format format)
{
	struct fi_cq_attr ca = { .format = format, .wait_obj = FI_WAIT_NONE, .size = 1024 };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	int rc;
	if ((rc = fi_cq_open(ft_domain, &ca, &ft_txcq, NULL)) || (rc = fi_cq_open(ft_domain, &ca, &ft_rxcq, NULL)))
		ft_die("fi_cq_open: %s", fi_strerror(-rc));
	if (ft_ep_type != FI_EP_MSG && (rc = fi_av_open(ft_domain, &aa, &ft_av, NULL)))
		ft_die("fi_av_open: %s", fi_strerror(-rc));
}

/*
 * -E, out-of-band address exchange: for providers whose addresses no
 * node and service name (FI_ADDR_STR: shm's names are made up when the
 * endpoint opens). Once the server's first endpoint is enabled, a thread
 * serves its name (4-byte length, then the name) to every TCP connection
 * on the -B port of 127.0.0.1 (or -s) for as long as the process lives:
 * clients that fork several endpoints (fi_killed_peer,
 * fi_rdm_atomic_contention) each fetch it. A client's first enabled
 * endpoint fetches it from the -P port of the server's address (retrying
 * while nothing listens, bounded) and it replaces ft_info->dest_addr, so
 * the programs use dest_addr as with any provider. Everything else still
 * goes through the provider.
 */
static char ft_oob_name[256];
static size_t ft_oob_namelen;

static void *ft_oob_serve(void *arg)
{
	int l = (int) (intptr_t) arg;
	for (;;) {
		uint32_t n = (uint32_t) ft_oob_namelen;
		int s = accept(l, NULL, NULL);
		if (s < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		if (send(s, &n, 4, MSG_NOSIGNAL) != 4 || send(s, ft_oob_name, n, MSG_NOSIGNAL) != (ssize_t) n)
			fprintf(stderr, "-E: sending the name to a client failed\n");
		close(s);
	}
}

static inline struct sockaddr_in ft_oob_sockaddr(const char *addr, const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t) atoi(port)) };
	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		ft_die("-E needs an IPv4 address, got '%s'", addr);
	return a;
}

/* A TCP connection to `a`, retried (bounded) while nothing listens there;
 * receives on it time out after FT_TIMEOUT. */
static inline int ft_oob_connect(struct sockaddr_in a)
{
	struct timeval tv = { .tv_sec = (time_t) FT_TIMEOUT };
	double end = ft_now() + FT_TIMEOUT;
	char where[INET_ADDRSTRLEN] = "?";
	int s;
	for (;;) {
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s >= 0 && !connect(s, (struct sockaddr *) &a, sizeof(a)))
			break;
		if (s >= 0)
			close(s);
		if (ft_now() > end) {
			inet_ntop(AF_INET, &a.sin_addr, where, sizeof(where));
			ft_die("-E: nothing listened on %s:%u within %.0f s", where, ntohs(a.sin_port), FT_TIMEOUT);
		}
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	}
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return s;
}

/* Server: publishes `ep`'s name; client: sets ft_info->dest_addr to the
 * server's. Once per process (the first endpoint). */
static inline void ft_oob_exchange(struct fid_ep *ep)
{
	static int done;
	uint32_t n = 0;
	int one = 1, rc, s = -1;
	if (!ft_opts.oob || done)
		return;
	done = 1;
	if (!ft_is_client()) {
		struct sockaddr_in a = ft_oob_sockaddr(ft_opts.src_addr ? ft_opts.src_addr : "127.0.0.1", ft_opts.src_port);
		pthread_t t;
		ft_oob_namelen = sizeof(ft_oob_name);
		if ((rc = fi_getname(&ep->fid, ft_oob_name, &ft_oob_namelen)))
			ft_die("fi_getname: %s", fi_strerror(-rc));
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (s < 0 || bind(s, (struct sockaddr *) &a, sizeof(a)) || listen(s, 64))
			ft_die("-E: listen on port %s: %s", ft_opts.src_port, strerror(errno));
		if (pthread_create(&t, NULL, ft_oob_serve, (void *) (intptr_t) s) || pthread_detach(t))
			ft_die("-E: pthread_create failed");
		ft_log("-E: serving the name %.*s on port %s", (int) ft_oob_namelen, ft_oob_name, ft_opts.src_port);
		return;
	}
	s = ft_oob_connect(ft_oob_sockaddr(ft_opts.dst_addr, ft_opts.dst_port));
	if (recv(s, &n, 4, MSG_WAITALL) != 4 || n == 0 || n > sizeof(ft_oob_name) ||
	    recv(s, ft_oob_name, n, MSG_WAITALL) != (ssize_t) n)
		ft_die("-E: receiving the server's name failed");
	close(s);
	free(ft_info->dest_addr);
	if (!(ft_info->dest_addr = malloc(n)))
		ft_die("malloc");
	memcpy(ft_info->dest_addr, ft_oob_name, n);
	ft_info->dest_addrlen = n;
	ft_oob_namelen = n;
	ft_log("-E: the server's name is %.*s", (int) n, ft_oob_name);
}

/* Called by ft_open_ep after its bindings and before fi_enable, when set:
 * a program binds more (counters, ...) to the endpoint there. */
static void (*ft_before_enable)(struct fid_ep *ep);

/* Creates, binds and enables the active endpoint from `info`. */
static inline void ft_open_ep(struct fi_info *info)
{
	int rc;
	if ((rc = fi_endpoint(ft_domain, info, &ft_ep, NULL)))
		ft_die("fi_endpoint: %s", fi_strerror(-rc));
	if ((rc = fi_ep_bind(ft_ep, &ft_txcq->fid, FI_TRANSMIT)) || (rc = fi_ep_bind(ft_ep, &ft_rxcq->fid, FI_RECV)))
		ft_die("fi_ep_bind(cq): %s", fi_strerror(-rc));
	if (ft_av && (rc = fi_ep_bind(ft_ep, &ft_av->fid, 0)))
		ft_die("fi_ep_bind(av): %s", fi_strerror(-rc));
	if (info->ep_attr->type == FI_EP_MSG && (rc = fi_ep_bind(ft_ep, &ft_eq->fid, 0)))
		ft_die("fi_ep_bind(eq): %s", fi_strerror(-rc));
	if (ft_before_enable)
		ft_before_enable(ft_ep);
	if ((rc = fi_enable(ft_ep)))
		ft_die("fi_enable: %s", fi_strerror(-rc));
	ft_oob_exchange(ft_ep);
}

/* Reads one EQ event, bounded. Returns the event, fills `entry` (and `err`
 * when the EQ holds an error, then returning -FI_EAVAIL). */
static inline int ft_eq_wait(void *entry, size_t len, struct fi_eq_err_entry *err, uint32_t *event)
{
	double end = ft_now() + FT_TIMEOUT;
	while (ft_now() < end) {
		ssize_t n = fi_eq_sread(ft_eq, event, entry, len, 100, 0);
		if (n >= 0)
			return (int) n;
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			fi_eq_readerr(ft_eq, err, 0);
			return -FI_EAVAIL;
		}
		if (n != -FI_EAGAIN && n != -FI_ETIMEDOUT)
			ft_die("fi_eq_sread: %s", fi_strerror((int) -n));
	}
	ft_die("no EQ event within %.0f s", FT_TIMEOUT);
	return 0;
}

/* Waits for one specific EQ event (dying on anything else). */
static inline void ft_eq_expect(uint32_t want, struct fi_eq_cm_entry *cm, size_t len)
{
	struct fi_eq_err_entry err;
	uint32_t event = 0;
	int n = ft_eq_wait(cm, len, &err, &event);
	if (n == -FI_EAVAIL)
		ft_die("EQ error while waiting for event %u: %s", want, fi_strerror(err.err));
	if (event != want)
		ft_die("EQ event %u, want %u", event, want);
}

/* MSG server: passive endpoint listening on the bound address; returns
 * once listening. */
static inline void ft_listen(void)
{
	int rc;
	if ((rc = fi_passive_ep(ft_fabric, ft_info, &ft_pep, NULL)) || (rc = fi_pep_bind(ft_pep, &ft_eq->fid, 0)) ||
	    (rc = fi_listen(ft_pep)))
		ft_die("passive endpoint: %s", fi_strerror(-rc));
}

/* MSG server: waits for a connection request and accepts it with
 * `data`/`len` as private data; the endpoint's domain is ours (same
 * fabric). Fills `req` with the FI_CONNREQ entry (its data included). */
/* Accepts the connection request `req` already read from the EQ. */
static inline void ft_accept_req(struct fi_eq_cm_entry *req, const void *data, size_t len)
{
	struct fi_eq_cm_entry cm;
	int rc;
	ft_conn_info = req->info;
	ft_open_ep(ft_conn_info);
	if ((rc = fi_accept(ft_ep, data, len)))
		ft_die("fi_accept: %s", fi_strerror(-rc));
	ft_eq_expect(FI_CONNECTED, &cm, sizeof(cm));
}

static inline void ft_accept(struct fi_eq_cm_entry *req, size_t reqlen, const void *data, size_t len)
{
	ft_eq_expect(FI_CONNREQ, req, reqlen);
	ft_accept_req(req, data, len);
}

/* MSG client: connects with private data and waits for FI_CONNECTED,
 * whose entry (with the server's accept data) is copied to `out`. */
static inline void ft_connect(const void *data, size_t len, struct fi_eq_cm_entry *out, size_t outlen)
{
	int rc;
	ft_open_ep(ft_info);
	if ((rc = fi_connect(ft_ep, ft_info->dest_addr, data, len)))
		ft_die("fi_connect: %s", fi_strerror(-rc));
	ft_eq_expect(FI_CONNECTED, out, outlen);
}

/* One non-blocking read of `cq`: 1 with `entry` filled (it must hold the
 * CQ's format), -err with `err` filled for an error completion, 0 when
 * nothing is there. `src` (may be NULL) receives the source address. */
static inline int ft_cq_poll(struct fid_cq *cq, void *entry, struct fi_cq_err_entry *err, fi_addr_t *src)
{
	ssize_t n = src ? fi_cq_readfrom(cq, entry, 1, src) : fi_cq_read(cq, entry, 1);
	if (n == 1)
		return 1;
	if (n == -FI_EAVAIL) {
		memset(err, 0, sizeof(*err));
		if (fi_cq_readerr(cq, err, 0) != 1)
			ft_die("fi_cq_readerr failed");
		return err->err ? -err->err : -FI_EOTHER;
	}
	if (n != -FI_EAGAIN)
		ft_die("fi_cq_read: %s", fi_strerror((int) -n));
	return 0;
}

/* Reads one completion of `cq`, bounded: as ft_cq_poll, but waits. */
static inline int ft_cq_wait(struct fid_cq *cq, void *entry, struct fi_cq_err_entry *err, fi_addr_t *src)
{
	double end = ft_now() + FT_TIMEOUT;
	struct fi_cq_err_entry scratch;
	if (!err)
		err = &scratch;
	while (ft_now() < end) {
		int n = ft_cq_poll(cq, entry, err, src);
		if (n)
			return n;
	}
	ft_die("no completion within %.0f s", FT_TIMEOUT);
	return 0;
}

/* Waits for one successful completion (any error completion is fatal). */
static inline void ft_cq_ok(struct fid_cq *cq, void *entry, const char *what)
{
	struct fi_cq_err_entry err;
	int n = ft_cq_wait(cq, entry, &err, NULL);
	if (n < 0)
		ft_die("%s: error completion %s (prov_errno %d)", what, fi_strerror(err.err), err.prov_errno);
}

/* Posts an operation, retrying -FI_EAGAIN while driving progress on both
 * CQs, bounded. `post` is the expression, re-evaluated each try. */
#define FT_POST(post, what) \
	do { \
		double ft_end_ = ft_now() + FT_TIMEOUT; \
		ssize_t ft_rc_; \
		while ((ft_rc_ = (post)) == -FI_EAGAIN && ft_now() < ft_end_) { \
			(void) fi_cq_read(ft_txcq, NULL, 0); \
			(void) fi_cq_read(ft_rxcq, NULL, 0); \
		} \
		if (ft_rc_) \
			ft_die("%s: %s", what, fi_strerror((int) -ft_rc_)); \
	} while (0)

/* RDM and DGRAM: the client inserts the server's address and sends its own
 * name; the server receives it, inserts it, and answers, so both sides
 * end with `ft_peer` set. Uses fi_send/fi_recv and waits for completions
 * with an entry of `entry_size` bytes (the CQ format's). */
static inline void ft_exchange_addresses(void)
{
	char name[256], peer[256];
	union {
		struct fi_cq_tagged_entry t;
		char pad[64];
	} e;
	size_t len = sizeof(name);
	int rc;
	if ((rc = fi_getname(&ft_ep->fid, name, &len)))
		ft_die("fi_getname: %s", fi_strerror(-rc));
	if (ft_is_client()) {
		if ((rc = fi_av_insert(ft_av, ft_info->dest_addr, 1, &ft_peer, 0, NULL)) != 1)
			ft_die("fi_av_insert(server) = %d", rc);
		FT_POST(fi_recv(ft_ep, peer, sizeof(peer), NULL, FI_ADDR_UNSPEC, NULL), "fi_recv(ack)");
		FT_POST(fi_send(ft_ep, name, len, NULL, ft_peer, NULL), "fi_send(name)");
		ft_cq_ok(ft_txcq, &e, "send of the client's name");
		ft_cq_ok(ft_rxcq, &e, "receive of the server's ack");
	} else {
		FT_POST(fi_recv(ft_ep, peer, sizeof(peer), NULL, FI_ADDR_UNSPEC, NULL), "fi_recv(name)");
		ft_cq_ok(ft_rxcq, &e, "receive of the client's name");
		if ((rc = fi_av_insert(ft_av, peer, 1, &ft_peer, 0, NULL)) != 1)
			ft_die("fi_av_insert(client) = %d", rc);
		FT_POST(fi_send(ft_ep, "ack", 4, NULL, ft_peer, NULL), "fi_send(ack)");
		ft_cq_ok(ft_txcq, &e, "send of the ack");
	}
}

/* Brings the endpoint up the way its type needs: MSG connects (server:
 * listen + accept), RDM/DGRAM exchange addresses. CQs must be open. */
static inline void ft_init_ep(void)
{
	struct fi_eq_cm_entry cm;
	if (ft_ep_type == FI_EP_MSG) {
		if (ft_is_client()) {
			ft_connect(NULL, 0, &cm, sizeof(cm));
		} else {
			ft_listen();
			ft_accept(&cm, sizeof(cm), NULL, 0);
		}
	} else {
		ft_open_ep(ft_info);
		ft_exchange_addresses();
	}
}

/* Remote CQ data as the provider carries it: the low cq_data_size bytes
 * of `v` (verbs carries 4). Upstream's fabtests mask the data they send the
 * same way (ft_init_cq_data), so a provider with fewer than 8 bytes runs
 * the same checks on what it can carry. */
static inline uint64_t ft_cq_data(uint64_t v)
{
	size_t n = ft_info ? ft_info->domain_attr->cq_data_size : 8;
	return n >= 8 ? v : v & ((1ULL << (n * 8)) - 1);
}

/* Synchronisation point: a zero-byte message each way. */
static inline void ft_sync(void)
{
	char e[64];
	FT_POST(fi_recv(ft_ep, NULL, 0, NULL, ft_peer, NULL), "fi_recv(sync)");
	FT_POST(fi_send(ft_ep, NULL, 0, NULL, ft_peer, NULL), "fi_send(sync)");
	ft_cq_ok(ft_txcq, e, "sync send");
	ft_cq_ok(ft_rxcq, e, "sync receive");
}

/* Deterministic payload: byte i of message `seq` of this direction. */
static inline void ft_fill(void *buf, size_t size, unsigned seq)
{
	unsigned char *p = buf;
	for (size_t i = 0; i < size; i++)
		p[i] = (unsigned char) (i * 7 + seq * 13 + 1);
}

/* Returns the first index that differs from ft_fill's pattern, or -1. */
static inline long ft_verify(const void *buf, size_t size, unsigned seq)
{
	const unsigned char *p = buf;
	for (size_t i = 0; i < size; i++)
		if (p[i] != (unsigned char) (i * 7 + seq * 13 + 1))
			return (long) i;
	return -1;
}

/* Closes everything that is open, in dependency order. */
static inline void ft_teardown(void)
{
	if (ft_ep)
		fi_close(&ft_ep->fid);
	if (ft_pep)
		fi_close(&ft_pep->fid);
	if (ft_av)
		fi_close(&ft_av->fid);
	if (ft_txcq)
		fi_close(&ft_txcq->fid);
	if (ft_rxcq)
		fi_close(&ft_rxcq->fid);
	if (ft_conn_info)
		fi_freeinfo(ft_conn_info);
	if (ft_domain)
		fi_close(&ft_domain->fid);
	ft_domain = NULL;
	if (ft_eq)
		fi_close(&ft_eq->fid);
	ft_close();
}

/* Prints the summary line (with the side) and returns the exit status. */
static inline int ft_finish(const char *name)
{
	char label[128];
	snprintf(label, sizeof(label), "%s [%s]", name, ft_is_client() ? "client" : "server");
	ft_teardown();
	return ft_report(label);
}

#endif
