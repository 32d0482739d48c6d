/*
 * fi_msg_epoll: completion queues with FI_WAIT_FD used from epoll(7), as
 * fi_poll(3) prescribes: fi_trywait before blocking on the native fd.
 *
 * Both CQs are opened with FI_WAIT_FD; their fds (fi_control FI_GETWAIT)
 * go into one epoll set. -I ping-pongs of -S bytes, every payload checked,
 * every completion waited for by alternating fi_cq_read, fi_trywait and
 * epoll_wait with bounded timeouts. Checked on the way:
 *  - FI_GETWAIT gives a valid fd per CQ;
 *  - fi_cq_sread with a timeout and nothing to come returns -FI_EAGAIN
 *    (fi_cq(3)) after roughly that timeout, on the transmit CQ (nothing
 *    posted) and, on the client, on the receive CQ before the first ping;
 *  - with every completion read and nothing in flight, fi_trywait returns
 *    0 and the fd then stays quiet (epoll_wait times out);
 *  - after fi_trywait returned 0, the arrival of a completion makes the fd
 *    readable (a completion found after an epoll timeout with the fd still
 *    quiet is a failure);
 *  - when epoll reports the fd readable, the completion is pending, so
 *    fi_trywait returns -FI_EAGAIN before it is read.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <sys/epoll.h>

#define EPOLL_WAIT_MS 3000

static int epfd, txfd, rxfd;
static char *txbuf, *rxbuf;
static int wakeups, quiet_waits, spins, spurious;

static void open_fd_cqs(void)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_FD, .size = 64 };
	struct epoll_event ev;
	int rc;
	if ((rc = fi_cq_open(ft_domain, &ca, &ft_txcq, NULL)) || (rc = fi_cq_open(ft_domain, &ca, &ft_rxcq, NULL)))
		ft_die("fi_cq_open(FI_WAIT_FD): %s", fi_strerror(-rc));
	txfd = rxfd = -1;
	if ((rc = fi_control(&ft_txcq->fid, FI_GETWAIT, &txfd)) || (rc = fi_control(&ft_rxcq->fid, FI_GETWAIT, &rxfd)))
		ft_die("fi_control(FI_GETWAIT): %s", fi_strerror(-rc));
	FT_CHECK(txfd >= 0 && rxfd >= 0, "FI_GETWAIT fds %d and %d", txfd, rxfd);
	if ((epfd = epoll_create1(0)) < 0)
		ft_die("epoll_create1");
	ev.events = EPOLLIN;
	ev.data.fd = txfd;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, txfd, &ev))
		ft_die("epoll_ctl(tx fd %d)", txfd);
	if (rxfd != txfd) {
		ev.data.fd = rxfd;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, rxfd, &ev))
			ft_die("epoll_ctl(rx fd %d)", rxfd);
	}
}

/* epoll_wait on the set; returns whether `fd` was reported readable. */
static int fd_ready(int fd, int timeout_ms)
{
	struct epoll_event evs[2];
	int n = epoll_wait(epfd, evs, 2, timeout_ms);
	if (n < 0)
		ft_die("epoll_wait");
	for (int i = 0; i < n; i++)
		if (evs[i].data.fd == fd)
			return 1;
	return 0;
}

/* Waits for one completion of `cq` (fd `fd`) the fi_poll(3) way. */
static void wait_cq(struct fid_cq *cq, int fd, struct fi_cq_msg_entry *e, const char *what)
{
	struct fid *fids[1] = { &cq->fid };
	double end = ft_now() + FT_TIMEOUT;
	int after_wake = 0, rc_wake = 0;
	while (ft_now() < end) {
		ssize_t n = fi_cq_read(cq, e, 1);
		if (n == 1) {
			/* fi_poll(3): -FI_EAGAIN "if there are events queued". */
			FT_CHECK(!after_wake || rc_wake == -FI_EAGAIN,
				 "%s: the fd signalled, a completion was queued, yet fi_trywait returned %d", what,
				 rc_wake);
			return;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(cq, &err, 0);
			ft_die("%s: error completion %s", what, fi_strerror(err.err));
		}
		if (n != -FI_EAGAIN)
			ft_die("%s: fi_cq_read: %s", what, fi_strerror((int) -n));
		if (after_wake)
			spurious++;
		after_wake = 0;
		int rc = fi_trywait(ft_fabric, fids, 1);
		if (rc == -FI_EAGAIN) {
			spins++;
			continue;
		}
		if (rc)
			ft_die("%s: fi_trywait: %s", what, fi_strerror(-rc));
		if (fd_ready(fd, EPOLL_WAIT_MS)) {
			wakeups++;
			rc_wake = fi_trywait(ft_fabric, fids, 1);
			after_wake = 1;
			continue;
		}
		/* Quiet for EPOLL_WAIT_MS: nothing may be queued meanwhile
		 * unless it arrived just now, which the fd would show. */
		quiet_waits++;
		if (!fd_ready(fd, 0)) {
			n = fi_cq_read(cq, e, 1);
			FT_CHECK(n != 1, "%s: a completion was queued but the fd stayed quiet for %d ms", what,
				 EPOLL_WAIT_MS);
			if (n == 1)
				return;
		}
	}
	ft_die("%s: no completion within %.0f s", what, FT_TIMEOUT);
}

/* With every completion of `cq` read: fi_trywait says 0; with nothing in
 * flight at all (`quiet`), the fd then stays quiet (epoll_wait times out). */
static void check_quiet(struct fid_cq *cq, int fd, int quiet, const char *what)
{
	struct fid *fids[1] = { &cq->fid };
	FT_RC(fi_trywait(ft_fabric, fids, 1), 0);
	/* One spurious signal is tolerated (a provider may share the fd with
	 * its sockets); a second one after another fi_trywait is not. */
	if (quiet && fd_ready(fd, 50)) {
		spurious++;
		FT_RC(fi_trywait(ft_fabric, fids, 1), 0);
		FT_CHECK(!fd_ready(fd, 50), "%s: fd still readable with nothing pending after fi_trywait returned 0",
			 what);
	}
}

/* fi_cq_sread with nothing to come: -FI_EAGAIN after about `ms`. */
static void check_sread_timeout(struct fid_cq *cq, int ms, const char *what)
{
	struct fi_cq_msg_entry e;
	double t0 = ft_now(), dt;
	ssize_t n = fi_cq_sread(cq, &e, 1, NULL, ms);
	dt = (ft_now() - t0) * 1000;
	FT_CHECK(n == -FI_EAGAIN, "%s: fi_cq_sread(timeout %d ms) = %zd (%s), want -FI_EAGAIN", what, ms, n,
		 fi_strerror((int) -n));
	FT_CHECK(dt >= ms * 0.9 && dt < ms + 2000, "%s: fi_cq_sread(timeout %d ms) returned after %.0f ms", what, ms,
		 dt);
}

static void ping_pong(size_t size, unsigned seq)
{
	struct fi_cq_msg_entry e;
	unsigned mine = seq * 2 + (ft_is_client() ? 0 : 1), theirs = seq * 2 + (ft_is_client() ? 1 : 0);
	long bad;

	ft_fill(txbuf, size, mine);
	if (ft_is_client()) {
		memset(rxbuf, 0, size);
		FT_POST(fi_recv(ft_ep, rxbuf, size, NULL, 0, rxbuf), "fi_recv");
		FT_POST(fi_send(ft_ep, txbuf, size, NULL, 0, txbuf), "fi_send");
		wait_cq(ft_txcq, txfd, &e, "ping send");
		FT_CHECK(e.op_context == txbuf, "send context %p", e.op_context);
		wait_cq(ft_rxcq, rxfd, &e, "pong receive");
	} else {
		/* The receive for this ping was posted beforehand. */
		wait_cq(ft_rxcq, rxfd, &e, "ping receive");
	}
	FT_CHECK(e.op_context == rxbuf, "receive context %p", e.op_context);
	FT_CHECK(e.len == size, "receive length %zu, want %zu", e.len, size);
	bad = ft_verify(rxbuf, size, theirs);
	FT_CHECK(bad < 0, "iteration %u: byte %ld differs", seq, bad);
	if (ft_is_client()) {
		/* Nothing is in flight until the next ping. */
		check_quiet(ft_rxcq, rxfd, 1, "rx CQ after the pong");
		check_quiet(ft_txcq, txfd, 1, "tx CQ after the pong");
	} else {
		memset(rxbuf, 0, size);
		if (seq + 1 < (unsigned) ft_opts.iters)
			FT_POST(fi_recv(ft_ep, rxbuf, size, NULL, 0, rxbuf), "fi_recv");
		FT_POST(fi_send(ft_ep, txbuf, size, NULL, 0, txbuf), "fi_send");
		wait_cq(ft_txcq, txfd, &e, "pong send");
		FT_CHECK(e.op_context == txbuf, "send context %p", e.op_context);
		check_quiet(ft_txcq, txfd, 0, "tx CQ after the pong");
	}
}

int main(int argc, char **argv)
{
	struct fi_eq_cm_entry cm;
	ft_args(argc, argv, NULL, NULL);
	if (ft_ep_type != FI_EP_MSG)
		ft_die("fi_msg_epoll needs -e msg");
	ft_setup(ft_hints(FI_MSG));
	open_fd_cqs();
	txbuf = malloc(ft_opts.size ? ft_opts.size : 1);
	rxbuf = malloc(ft_opts.size ? ft_opts.size : 1);
	if (ft_is_client()) {
		ft_connect(NULL, 0, &cm, sizeof(cm));
	} else {
		ft_listen();
		/* Accept, then pre-post the first receive before the client's
		 * ping can come (the client waits for FI_CONNECTED). */
		ft_accept(&cm, sizeof(cm), NULL, 0);
		FT_POST(fi_recv(ft_ep, rxbuf, ft_opts.size, NULL, 0, rxbuf), "fi_recv");
	}
	check_sread_timeout(ft_txcq, 200, "tx CQ, nothing posted");
	if (ft_is_client())
		check_sread_timeout(ft_rxcq, 300, "rx CQ before the first ping");
	for (int i = 0; i < ft_opts.iters; i++)
		ping_pong(ft_opts.size, (unsigned) i);
	ft_log("%d ping-pongs of %zu bytes: %d fd wakeups, %d quiet epoll timeouts, %d fi_trywait -FI_EAGAIN on an empty CQ, %d wakeups without a completion",
	       ft_opts.iters, ft_opts.size, wakeups, quiet_waits, spins, spurious);
	FT_CHECK(wakeups > 0, "no completion was ever waited for through the fd");
	ft_sync();
	close(epfd);
	free(txbuf);
	free(rxbuf);
	return ft_finish("fi_msg_epoll");
}
