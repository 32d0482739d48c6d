/*
 * fi_killed_peer: a peer dies (SIGKILL) in the middle of a stream of large
 * messages; the server must notice within KILL_BOUND seconds, never hang,
 * never report a partial message as a successful receive, and go on
 * serving another peer.
 *
 * The client process itself touches libfabric only after its children are
 * done with fork; it exits 0 when its children behaved as designed.
 *
 * -e msg: the client forks a victim that connects, streams STREAM_SIZE
 *   messages (WINDOW in flight) and kills itself on its KILL_AFTER-th send
 *   completion. The server has NSTREAM receives and NTOVICTIM sends (which
 *   the victim never receives) posted; it must get FI_SHUTDOWN (or an EQ
 *   error) for that endpoint within KILL_BOUND s of the stream stopping,
 *   unless all those operations end in error completions first. Every
 *   receive that completes successfully holds a whole, intact message.
 *   Outstanding receives are then cancelled (fi_cancel: FI_ECANCELED error
 *   completions, fi_endpoint(3)). Once the client has reaped the victim
 *   (killed by SIGKILL) it connects itself and exchanges checked messages
 *   of 1 B..1 MiB with the server, on the same listener.
 *
 * -e rdm: the client forks a victim and a survivor; both say hello (tagged
 *   messages; the tag tells the kind of message). The victim streams and
 *   kills itself as above; the server's NTOVICTIM sends to the victim must
 *   all complete (successfully or not) within KILL_BOUND s of the victim's
 *   death, which the survivor reports once the client has reaped the
 *   victim; a send posted to the dead victim after that must fail (error
 *   completion or error return) within KILL_BOUND s, as a send cannot be
 *   transmit-complete to a dead peer (fi_cq(3)). The survivor then does
 *   checked ping-pongs of 1 B..1 MiB with the server; the server cancels
 *   its leftover stream receives as above.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#define STREAM_SIZE (4 << 20)
#define NSTREAM (KILL_AFTER + WINDOW)
#define WINDOW 8
#define KILL_AFTER 3
#define NTOVICTIM 4
#define KILL_BOUND 10.0

enum { TAG_HELLO = 1, TAG_ACK, TAG_STREAM, TAG_TOVICTIM, TAG_DEAD, TAG_PING, TAG_PONG, TAG_BYE };

static const size_t ping_sizes[] = { 1, 4096, 65536, STREAM_SIZE };

/* Completion contexts, one per outstanding operation and each a struct
 * fi_context, so that providers asking for FI_CONTEXT mode can use them. */
static struct fi_context ctx_stream[NSTREAM], ctx_tov[NTOVICTIM + 1], ctx_vsend[NSTREAM], ctx_hello[2];
static struct fi_context ctx_rx, ctx_tx, ctx_ack[2], ctx_dead;
static int stream_done[NSTREAM]; /* 0 posted, 1 ok, 2 error */

static int is_rdm(void)
{
	return ft_ep_type == FI_EP_RDM;
}

static void do_send(const void *buf, size_t len, fi_addr_t to, uint64_t tag, void *ctx, const char *what)
{
	if (is_rdm())
		FT_POST(fi_tsend(ft_ep, buf, len, NULL, to, tag, ctx), what);
	else
		FT_POST(fi_send(ft_ep, buf, len, NULL, 0, ctx), what);
}

static void do_recv(void *buf, size_t len, uint64_t tag, void *ctx, const char *what)
{
	if (is_rdm())
		FT_POST(fi_trecv(ft_ep, buf, len, NULL, FI_ADDR_UNSPEC, tag, 0, ctx), what);
	else
		FT_POST(fi_recv(ft_ep, buf, len, NULL, 0, ctx), what);
}


/* A stream message: its sequence number in the first 4 bytes, then the
 * fill pattern of that sequence number. */
static void fill_stream(char *buf, unsigned seq)
{
	memcpy(buf, &seq, sizeof(seq));
	ft_fill(buf + sizeof(seq), STREAM_SIZE - sizeof(seq), seq);
}

static void check_stream(const char *buf, size_t len, const char *what)
{
	unsigned seq;
	long bad;
	FT_CHECK(len == STREAM_SIZE, "%s: a successful stream receive of %zu bytes, want %d", what, len, STREAM_SIZE);
	if (len != STREAM_SIZE)
		return;
	memcpy(&seq, buf, sizeof(seq));
	bad = ft_verify(buf + sizeof(seq), STREAM_SIZE - sizeof(seq), seq);
	FT_CHECK(seq < NSTREAM && bad < 0, "%s: stream message %u is damaged at byte %ld", what, seq, bad);
}

/* ---- client side ---- */

/* The victim: streams and kills itself on its KILL_AFTER-th completion. */
static void victim_stream(fi_addr_t server)
{
	char *bufs[KILL_AFTER + WINDOW];
	int posted = 0, done = 0;
	double end = ft_now() + FT_TIMEOUT;
	for (int i = 0; i < KILL_AFTER + WINDOW; i++) {
		if (!(bufs[i] = malloc(STREAM_SIZE)))
			ft_die("malloc");
		fill_stream(bufs[i], (unsigned) i);
	}
	while (ft_now() < end) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int n;
		while (posted - done < WINDOW && posted < KILL_AFTER + WINDOW) {
			do_send(bufs[posted], STREAM_SIZE, server, TAG_STREAM, &ctx_vsend[posted], "victim stream send");
			posted++;
		}
		n = ft_cq_poll(ft_txcq, &e, &err, NULL);
		if (n < 0)
			ft_die("victim: send error %s", fi_strerror(err.err));
		if (n > 0 && ++done == KILL_AFTER) {
			printf("[victim] %d sends posted, %d complete: SIGKILL\n", posted, done);
			fflush(stdout);
			raise(SIGKILL);
		}
	}
	ft_die("victim: only %d of %d stream sends completed", done, KILL_AFTER);
}

/* RDM child: hello to the server with our id and name; waits for the
 * server's ack. Returns the server's fi_addr. */
static fi_addr_t rdm_hello(int id)
{
	char msg[256 + sizeof(int)], ack[16];
	struct fi_cq_tagged_entry e;
	size_t len = 256;
	fi_addr_t server;
	int rc;
	ft_open_ep(ft_info);
	if ((rc = fi_av_insert(ft_av, ft_info->dest_addr, 1, &server, 0, NULL)) != 1)
		ft_die("fi_av_insert(server) = %d", rc);
	memcpy(msg, &id, sizeof(id));
	if ((rc = fi_getname(&ft_ep->fid, msg + sizeof(id), &len)))
		ft_die("fi_getname: %s", fi_strerror(-rc));
	do_recv(ack, sizeof(ack), TAG_ACK, &ctx_rx, "fi_trecv(ack)");
	do_send(msg, sizeof(id) + len, server, TAG_HELLO, &ctx_tx, "fi_tsend(hello)");
	ft_cq_ok(ft_txcq, &e, "hello send");
	ft_cq_ok(ft_rxcq, &e, "ack receive");
	return server;
}

/* Ping-pongs of every size with the server, payloads checked. */
static void client_pingpong(fi_addr_t server)
{
	char *tx = malloc(STREAM_SIZE), *rx = malloc(STREAM_SIZE);
	struct fi_cq_tagged_entry e;
	for (unsigned s = 0; s < sizeof(ping_sizes) / sizeof(ping_sizes[0]); s++) {
		size_t size = ping_sizes[s];
		long bad;
		ft_fill(tx, size, 100 + s);
		memset(rx, 0, size);
		do_recv(rx, size, TAG_PONG, &ctx_rx, "fi_recv(pong)");
		do_send(tx, size, server, TAG_PING, &ctx_tx, "fi_send(ping)");
		ft_cq_ok(ft_txcq, &e, "ping send");
		ft_cq_ok(ft_rxcq, &e, "pong receive");
		FT_CHECK(e.len == size, "pong of %zu bytes, want %zu", e.len, size);
		bad = ft_verify(rx, size, 200 + s);
		FT_CHECK(bad < 0, "pong of %zu bytes: byte %ld differs", size, bad);
	}
	free(tx);
	free(rx);
}

/* Waits (bounded) for child `pid`; returns its wait status. */
static int reap(pid_t pid, const char *who)
{
	double end = ft_now() + 60;
	int st;
	while (ft_now() < end) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		if (r < 0)
			ft_die("waitpid(%s)", who);
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	ft_die("%s did not end within 60 s", who);
	return 0;
}

static void check_killed(int st)
{
	FT_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "victim ended with status %#x, not by SIGKILL", st);
}

static int run_client(void)
{
	if (!is_rdm()) {
		struct fi_eq_cm_entry cm;
		pid_t v = fork();
		if (v < 0)
			ft_die("fork");
		if (v == 0) {
			ft_setup(ft_hints(FI_MSG));
			ft_open_cqs(FI_CQ_FORMAT_TAGGED);
			ft_connect(NULL, 0, &cm, sizeof(cm));
			victim_stream(0);
			_exit(3);
		}
		check_killed(reap(v, "victim"));
		/* The victim is gone: connect ourselves. */
		ft_setup(ft_hints(FI_MSG));
		ft_open_cqs(FI_CQ_FORMAT_TAGGED);
		ft_connect(NULL, 0, &cm, sizeof(cm));
		client_pingpong(0);
		return ft_finish("fi_killed_peer");
	} else {
		int fds[2], st;
		pid_t v, s;
		if (pipe(fds))
			ft_die("pipe");
		if ((v = fork()) < 0)
			ft_die("fork");
		if (v == 0) {
			close(fds[0]);
			close(fds[1]);
			ft_setup(ft_hints(FI_MSG | FI_TAGGED));
			ft_open_cqs(FI_CQ_FORMAT_TAGGED);
			victim_stream(rdm_hello(1));
			_exit(3);
		}
		if ((s = fork()) < 0)
			ft_die("fork");
		if (s == 0) {
			struct pollfd p = { .fd = fds[0], .events = POLLIN };
			struct fi_cq_tagged_entry e;
			fi_addr_t server;
			char c = 0, bye = 'b';
			double end;
			close(fds[1]);
			ft_setup(ft_hints(FI_MSG | FI_TAGGED));
			ft_open_cqs(FI_CQ_FORMAT_TAGGED);
			server = rdm_hello(2);
			/* Wait for the client's word that the victim is dead,
			 * driving progress meanwhile. */
			end = ft_now() + 60;
			while (ft_now() < end && poll(&p, 1, 20) == 0) {
				(void) fi_cq_read(ft_txcq, NULL, 0);
				(void) fi_cq_read(ft_rxcq, NULL, 0);
			}
			if (read(fds[0], &c, 1) != 1)
				ft_die("survivor: no word about the victim");
			do_send(&c, 1, server, TAG_DEAD, &ctx_tx, "fi_tsend(dead)");
			ft_cq_ok(ft_txcq, &e, "dead notice send");
			client_pingpong(server);
			do_send(&bye, 1, server, TAG_BYE, &ctx_tx, "fi_tsend(bye)");
			ft_cq_ok(ft_txcq, &e, "bye send");
			_exit(ft_finish("fi_killed_peer survivor"));
		}
		close(fds[0]);
		signal(SIGPIPE, SIG_IGN); /* a survivor that died early must not kill us */
		check_killed(reap(v, "victim"));
		if (write(fds[1], "k", 1) != 1)
			ft_die("write to the survivor");
		close(fds[1]);
		st = reap(s, "survivor");
		FT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "survivor ended with status %#x", st);
		return ft_report("fi_killed_peer [client]");
	}
}

/* ---- server side ---- */

static char *stream_bufs[NSTREAM], *tov_buf;
static int stream_ok, stream_err, tov_ok, tov_err;

/* Handles one completion (or error) of the stream receives and the sends
 * to the victim; returns 1 if it was one of those. */
static int account(struct fid_cq *cq, int n, struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err)
{
	void *ctx = n > 0 ? e->op_context : err->op_context;
	if ((struct fi_context *) ctx >= ctx_stream && (struct fi_context *) ctx < ctx_stream + NSTREAM) {
		int i = (int) ((struct fi_context *) ctx - ctx_stream);
		FT_CHECK(cq == ft_rxcq, "stream receive completion on the transmit CQ");
		FT_CHECK(!stream_done[i], "stream receive %d completed twice", i);
		if (n > 0) {
			check_stream(stream_bufs[i], e->len, "stream receive");
			stream_ok++;
			stream_done[i] = 1;
		} else {
			ft_log("stream receive %d: error %s", i, fi_strerror(err->err));
			stream_err++;
			stream_done[i] = 2;
		}
		return 1;
	}
	if ((struct fi_context *) ctx >= ctx_tov && (struct fi_context *) ctx < ctx_tov + NTOVICTIM + 1) {
		FT_CHECK(cq == ft_txcq, "send completion on the receive CQ");
		if (n > 0)
			tov_ok++;
		else
			tov_err++;
		ft_log("send %d to the victim: %s", (int) ((struct fi_context *) ctx - ctx_tov),
		       n > 0 ? "success" : fi_strerror(err->err));
		return 1;
	}
	return 0;
}

/* Polls both CQs once; completions other than stream/victim ones are
 * handed back through `e` (returns 1) or fatal if errors. */
static int poll_server(struct fi_cq_tagged_entry *out, double *last)
{
	struct fid_cq *cqs[2] = { ft_rxcq, ft_txcq };
	for (int k = 0; k < 2; k++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int n = ft_cq_poll(cqs[k], &e, &err, NULL);
		if (!n)
			continue;
		if (last)
			*last = ft_now();
		if (account(cqs[k], n, &e, &err))
			continue;
		if (n < 0)
			ft_die("unexpected error completion %s", fi_strerror(err.err));
		*out = e;
		return 1;
	}
	return 0;
}

/* Ends the stream receives still outstanding: fi_cancel each (0, or
 * -FI_ENOENT when the provider already ended it, e.g. flushed it after
 * FI_SHUTDOWN, or -FI_ENOSYS from a provider without fi_cancel: verbs,
 * like upstream's, cannot take a receive back from a queue pair, which
 * flushes it when the connection goes) and checks that each ends with an error completion within
 * KILL_BOUND s, FI_ECANCELED for those fi_cancel found. */
static void cancel_stream(void)
{
	int found[NSTREAM] = { 0 }, left = 0, ended = 0;
	double end = ft_now() + KILL_BOUND;
	for (int i = 0; i < NSTREAM; i++) {
		int rc;
		if (stream_done[i])
			continue;
		left++;
		rc = fi_cancel(&ft_ep->fid, &ctx_stream[i]);
		FT_CHECK(rc == 0 || rc == -FI_ENOENT || rc == -FI_ENOSYS, "fi_cancel(stream receive %d) = %d (%s)", i, rc,
			 fi_strerror(-rc));
		found[i] = rc == 0;
	}
	while (ended < left && ft_now() < end) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int n = ft_cq_poll(ft_rxcq, &e, &err, NULL), i;
		if (!n)
			continue;
		if (!account(ft_rxcq, n, &e, &err))
			ft_die("unexpected completion while cancelling");
		ended++;
		i = (int) ((struct fi_context *) (n > 0 ? e.op_context : err.op_context) - ctx_stream);
		if (found[i])
			FT_CHECK(n < 0 && err.err == FI_ECANCELED,
				 "stream receive %d, cancelled, ended with %s, want FI_ECANCELED", i,
				 n > 0 ? "success" : fi_strerror(err.err));
	}
	FT_CHECK(ended == left, "%d of %d outstanding stream receives still not ended %.0f s after fi_cancel",
		 left - ended, left, KILL_BOUND);
	{
		int nfound = 0;
		for (int i = 0; i < NSTREAM; i++)
			nfound += found[i];
		printf("server: stream receives: %d ok, %d error; of the %d outstanding, %d found by fi_cancel\n",
		       stream_ok, stream_err, left, nfound);
	}
}

static void post_stream_and_tov(fi_addr_t victim)
{
	for (int i = 0; i < NSTREAM; i++) {
		if (!(stream_bufs[i] = malloc(STREAM_SIZE)))
			ft_die("malloc");
		do_recv(stream_bufs[i], STREAM_SIZE, TAG_STREAM, &ctx_stream[i], "stream receive");
	}
	if (!(tov_buf = malloc(STREAM_SIZE)))
		ft_die("malloc");
	ft_fill(tov_buf, STREAM_SIZE, 77);
	for (int i = 0; i < NTOVICTIM; i++)
		do_send(tov_buf, STREAM_SIZE, victim, TAG_TOVICTIM, &ctx_tov[i], "send to the victim");
}

/* Serves the survivor's ping-pongs (pongs go to `to`). */
static void serve_pingpong(fi_addr_t to)
{
	char *rx = malloc(STREAM_SIZE), *tx = malloc(STREAM_SIZE);
	for (unsigned s = 0; s < sizeof(ping_sizes) / sizeof(ping_sizes[0]); s++) {
		size_t size = ping_sizes[s];
		struct fi_cq_tagged_entry e;
		double end = ft_now() + FT_TIMEOUT;
		long bad;
		memset(rx, 0, size);
		do_recv(rx, size, TAG_PING, &ctx_rx, "fi_recv(ping)");
		while (!poll_server(&e, NULL))
			if (ft_now() > end)
				ft_die("no ping of %zu bytes", size);
		FT_CHECK(e.op_context == &ctx_rx && e.len == size, "ping: context %p, %zu bytes, want %zu", e.op_context,
			 e.len, size);
		bad = ft_verify(rx, size, 100 + s);
		FT_CHECK(bad < 0, "ping of %zu bytes: byte %ld differs", size, bad);
		ft_fill(tx, size, 200 + s);
		do_send(tx, size, to, TAG_PONG, &ctx_tx, "fi_send(pong)");
		while (!poll_server(&e, NULL))
			if (ft_now() > end)
				ft_die("no completion of the pong of %zu bytes", size);
		FT_CHECK(e.op_context == &ctx_tx, "pong send: context %p", e.op_context);
	}
	free(rx);
	free(tx);
}

static void server_msg(void)
{
	struct fi_eq_cm_entry cm;
	struct fid_ep *victim_ep;
	struct fi_info *victim_info;
	double last, start, end;
	int shutdown = 0, eq_error = 0, next_req = 0;
	struct fi_eq_cm_entry next;

	ft_listen();
	ft_accept(&cm, sizeof(cm), NULL, 0);
	victim_ep = ft_ep;
	victim_info = ft_conn_info;
	post_stream_and_tov(0);
	start = last = ft_now();
	end = start + 60;
	while (!shutdown && !eq_error && ft_now() < end && ft_now() - last < KILL_BOUND) {
		struct fi_cq_tagged_entry e;
		struct fi_eq_cm_entry ev;
		uint32_t event;
		ssize_t n;
		if (poll_server(&e, &last))
			ft_die("unexpected completion (context %p)", e.op_context);
		n = fi_eq_read(ft_eq, &event, &ev, sizeof(ev), 0);
		if (n >= 0 && event == FI_CONNREQ && !next_req) {
			/* The client connects as soon as it has reaped the victim:
			 * its request may come before the victim's FI_SHUTDOWN. */
			next = ev;
			next_req = 1;
		} else if (n >= 0) {
			FT_CHECK(event == FI_SHUTDOWN, "EQ event %u, want FI_SHUTDOWN", event);
			FT_CHECK(ev.fid == &victim_ep->fid, "FI_SHUTDOWN for fid %p, want the victim's endpoint %p",
				 (void *) ev.fid, (void *) &victim_ep->fid);
			shutdown = event == FI_SHUTDOWN;
		} else if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry err = { 0 };
			fi_eq_readerr(ft_eq, &err, 0);
			printf("server: EQ error %s for the victim's endpoint\n", fi_strerror(err.err));
			eq_error = 1;
		} else if (n != -FI_EAGAIN) {
			ft_die("fi_eq_read: %s", fi_strerror((int) -n));
		}
		if (stream_ok + stream_err == NSTREAM && tov_ok + tov_err == NTOVICTIM && stream_err + tov_err > 0)
			break; /* every operation ended, some in error */
	}
	printf("server: %s %.1f s after the last completion; stream %d ok %d error; sends to the victim %d ok %d "
	       "error\n",
	       shutdown ? "FI_SHUTDOWN" : eq_error ? "EQ error" : "no FI_SHUTDOWN", ft_now() - last, stream_ok,
	       stream_err, tov_ok, tov_err);
	FT_CHECK(shutdown || eq_error || (stream_ok + stream_err == NSTREAM && tov_ok + tov_err == NTOVICTIM),
		 "the killed peer went unnoticed for %.0f s: no FI_SHUTDOWN, %d stream receives and %d sends still "
		 "outstanding",
		 KILL_BOUND, NSTREAM - stream_ok - stream_err, NTOVICTIM - tov_ok - tov_err);
	FT_CHECK(stream_ok < KILL_AFTER + WINDOW + 1, "%d stream messages received, more than were sent", stream_ok);
	cancel_stream();
	/* Sends to the victim: give them the same bound to end. */
	end = ft_now() + KILL_BOUND;
	while (tov_ok + tov_err < NTOVICTIM && ft_now() < end) {
		struct fi_cq_tagged_entry e;
		if (poll_server(&e, NULL))
			ft_die("unexpected completion (context %p)", e.op_context);
	}
	printf("server: sends to the victim: %d ok, %d error, %d never completed\n", tov_ok, tov_err,
	       NTOVICTIM - tov_ok - tov_err);
	fi_close(&victim_ep->fid);
	fi_freeinfo(victim_info);
	ft_ep = NULL;
	ft_conn_info = NULL;

	/* The next peer on the same listener. */
	if (next_req)
		ft_accept_req(&next, NULL, 0);
	else
		ft_accept(&cm, sizeof(cm), NULL, 0);
	serve_pingpong(0);
}

static void server_rdm(void)
{
	char hello[2][300], dead;
	fi_addr_t addr[3] = { FI_ADDR_UNSPEC, FI_ADDR_UNSPEC, FI_ADDR_UNSPEC };
	struct fi_cq_tagged_entry e;
	double end, t_dead;
	int got = 0, rc;
	ssize_t ret;

	ft_open_ep(ft_info);
	do_recv(hello[0], sizeof(hello[0]), TAG_HELLO, &ctx_hello[0], "fi_trecv(hello)");
	do_recv(hello[1], sizeof(hello[1]), TAG_HELLO, &ctx_hello[1], "fi_trecv(hello)");
	end = ft_now() + FT_TIMEOUT;
	while (got < 2) {
		int id;
		if (ft_now() > end)
			ft_die("only %d hellos", got);
		if (!poll_server(&e, NULL))
			continue;
		char *h;
		if (e.op_context != &ctx_hello[0] && e.op_context != &ctx_hello[1])
			ft_die("unexpected completion (context %p) while waiting for hellos", e.op_context);
		h = hello[e.op_context == &ctx_hello[1]];
		memcpy(&id, h, sizeof(id));
		if (id < 1 || id > 2 || addr[id] != FI_ADDR_UNSPEC)
			ft_die("hello with id %d", id);
		if ((rc = fi_av_insert(ft_av, h + sizeof(id), 1, &addr[id], 0, NULL)) != 1)
			ft_die("fi_av_insert = %d", rc);
		got++;
	}
	/* Stream receives and sends to the victim before its ack. */
	post_stream_and_tov(addr[1]);
	do_recv(&dead, 1, TAG_DEAD, &ctx_dead, "fi_trecv(dead)");
	do_send("ack", 4, addr[1], TAG_ACK, &ctx_ack[0], "ack to the victim");
	do_send("ack", 4, addr[2], TAG_ACK, &ctx_ack[1], "ack to the survivor");
	end = ft_now() + 60;
	t_dead = 0;
	while (!t_dead || tov_ok + tov_err < NTOVICTIM) {
		if (ft_now() > end)
			ft_die("no word of the victim's death within 60 s");
		if (t_dead && ft_now() - t_dead > KILL_BOUND)
			break;
		if (!poll_server(&e, NULL))
			continue;
		if (e.op_context == &ctx_dead)
			t_dead = ft_now();
		else
			FT_CHECK(e.op_context == &ctx_ack[0] || e.op_context == &ctx_ack[1], "unexpected completion (context %p)", e.op_context);
	}
	printf("server: victim dead; stream %d ok %d error; sends to the victim %d ok %d error, %d outstanding "
	       "after %.0f s\n",
	       stream_ok, stream_err, tov_ok, tov_err, NTOVICTIM - tov_ok - tov_err, KILL_BOUND);
	FT_CHECK(tov_ok + tov_err == NTOVICTIM, "%d sends to the killed peer still outstanding %.0f s after its death",
		 NTOVICTIM - tov_ok - tov_err, KILL_BOUND);

	/* A send to the dead peer must fail, bounded. */
	{
		int before = tov_err;
		double t0 = ft_now();
		end = t0 + KILL_BOUND;
		while ((ret = fi_tsend(ft_ep, tov_buf, 64, NULL, addr[1], TAG_TOVICTIM, &ctx_tov[NTOVICTIM])) ==
			       -FI_EAGAIN &&
		       ft_now() < end)
			(void) poll_server(&e, NULL);
		if (ret) {
			printf("server: send to the dead peer: fi_tsend returned %s\n", fi_strerror((int) -ret));
			FT_CHECK(ret != -FI_EAGAIN, "send to the dead peer: -FI_EAGAIN for %.0f s", KILL_BOUND);
		} else {
			int ok_before = tov_ok;
			while (tov_ok == ok_before && tov_err == before && ft_now() < end)
				if (poll_server(&e, NULL))
					FT_CHECK(0, "unexpected completion (context %p)", e.op_context);
			printf("server: send to the dead peer: %s after %.2f s\n",
			       tov_err > before ? "error completion" :
			       tov_ok > ok_before ? "successful completion" : "no completion", ft_now() - t0);
			FT_CHECK(tov_err > before, "a send to the killed peer did not fail within %.0f s (%s)",
				 KILL_BOUND, tov_ok > ok_before ? "it completed successfully" : "no completion");
		}
	}

	serve_pingpong(addr[2]);
	cancel_stream();
	{
		char bye;
		do_recv(&bye, 1, TAG_BYE, &ctx_rx, "fi_trecv(bye)");
		end = ft_now() + FT_TIMEOUT;
		while (!poll_server(&e, NULL) || e.op_context != &ctx_rx)
			if (ft_now() > end)
				ft_die("no bye from the survivor");
	}
}

int main(int argc, char **argv)
{
	int rc;
	ft_args(argc, argv, NULL, NULL);
	if (ft_ep_type == FI_EP_DGRAM)
		ft_die("fi_killed_peer needs -e msg or -e rdm");
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (ft_is_client())
		return run_client();
	ft_setup(ft_hints(is_rdm() ? FI_MSG | FI_TAGGED : FI_MSG));
	ft_open_cqs(FI_CQ_FORMAT_TAGGED);
	if (is_rdm())
		server_rdm();
	else
		server_msg();
	for (int i = 0; i < NSTREAM; i++)
		free(stream_bufs[i]);
	free(tov_buf);
	rc = ft_finish("fi_killed_peer");
	return rc;
}
