/*
 * The medium's limit: plain TCP over loopback, TCP_NODELAY, with the
 * receiver busy-polling (non-blocking recv spun in a loop, as a polling
 * libfabric provider does) so that wake-up latency is not counted. Prints
 * lines in the fabtests-compat programs' format so bench/run.py parses both
 * the same way.
 *
 *   server: tcp_pingpong [-m pingpong|stream] -B port [-S sizes] [-I iters]
 *   client: tcp_pingpong [-m pingpong|stream] -P port [-S sizes] [-I iters] 127.0.0.1
 *
 * -S takes one size or a comma list (1,64,1k,4m); with a list, sizes above
 * 64 KiB run at most 64 MiB / size iterations (at least 10). pingpong: usec/xfer is
 * half the round trip. stream: the client sends -I messages back to back,
 * the server acknowledges the last one with one byte; MB/sec counts the
 * payload; the stream sender uses blocking sends. Every wait gives up after 30 s without progress.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "../fabtests-compat/benchmarks/sizes.h"

#define TIMEOUT_S 30.0

/* Stream mode: the sender blocks (it has nothing else to do, and spinning
 * would take the CPU the receiver needs on a small machine). */
static int blocking_send;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

static void fail(const char *what)
{
	fprintf(stderr, "error: %s: %s\n", what, errno ? strerror(errno) : "timed out or peer closed");
	exit(1);
}

/* Moves exactly n bytes, spinning on non-blocking calls. */
static void xfer(int s, char *b, size_t n, int rd)
{
	double last = 0;
	unsigned spins = 0;
	while (n) {
		ssize_t k = rd ? recv(s, b, n, MSG_DONTWAIT)
			       : send(s, b, n, (blocking_send ? 0 : MSG_DONTWAIT) | MSG_NOSIGNAL);
		if (k > 0) {
			b += k;
			n -= (size_t) k;
			last = 0;
			continue;
		}
		if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
			if (k == 0)
				errno = 0;
			fail(rd ? "recv" : "send");
		}
		if (++spins % 65536 == 0) {
			double t = now_s();
			if (last == 0) {
				last = t;
			} else if (t - last > TIMEOUT_S) {
				errno = 0;
				fail(rd ? "recv" : "send");
			}
		}
	}
}

int main(int argc, char **argv)
{
	int port = 9228, iters = 1000, c, one = 1, s = -1, stream = 0, nsizes = 0;
	size_t sizes[64], max = 1;
	const char *host = NULL;
	while ((c = getopt(argc, argv, "B:P:S:I:m:")) != -1) {
		if (c == 'B' || c == 'P') {
			port = atoi(optarg);
		} else if (c == 'S') {
			nsizes = parse_size_list(optarg, sizes, 64);
			if (nsizes < 0)
				fail("bad size list");
		} else if (c == 'I') {
			iters = atoi(optarg);
		} else if (c == 'm') {
			stream = !strcmp(optarg, "stream");
		} else {
			fprintf(stderr, "usage: %s [-m pingpong|stream] [-B|-P port] [-S sizes] [-I iters] [host]\n",
				argv[0]);
			return 1;
		}
	}
	if (!nsizes)
		sizes[nsizes++] = 64;
	for (int i = 0; i < nsizes; i++)
		if (sizes[i] > max)
			max = sizes[i];
	if (optind < argc)
		host = argv[optind];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (host) {
		if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
			fail("bad IPv4 address");
		double t0 = now_s();
		for (;;) {
			s = socket(AF_INET, SOCK_STREAM, 0);
			if (!connect(s, (struct sockaddr *) &a, sizeof(a)))
				break;
			close(s);
			if (now_s() - t0 > TIMEOUT_S)
				fail("connect");
			usleep(10000);
		}
	} else {
		int l = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *) &a, sizeof(a)) || listen(l, 1))
			fail("listen");
		struct timeval tv = { .tv_sec = (time_t) TIMEOUT_S };
		setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		s = accept(l, NULL, NULL);
		if (s < 0)
			fail("accept");
		close(l);
	}
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct timeval stv = { .tv_sec = (time_t) TIMEOUT_S };
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &stv, sizeof(stv));
	blocking_send = stream;
	char *buf = calloc(1, max);
	if (!buf)
		fail("calloc");
	if (host)
		printf("%-10s%-10s%-12s%-10s%12s%12s%12s\n", "bytes", "iters", "total", "time", "MB/sec",
		       "usec/xfer", "Mxfers/sec");
	for (int k = 0; k < nsizes; k++) {
		size_t size = sizes[k];
		int n = iters;
		if (nsizes > 1 && n > 10 && size > 65536 && (size_t) n * size > (64u << 20))
			n = (int) ((64u << 20) / size) < 10 ? 10 : (int) ((64u << 20) / size);
		double t0 = 0;
		for (int i = -10; i < n; i++) { /* 10 warm-up iterations */
			if (i == 0)
				t0 = now_s();
			if (stream) {
				if (host)
					xfer(s, buf, size, 0);
				else
					xfer(s, buf, size, 1);
				if (i == -1 || i == n - 1) { /* sync after warm-up and at the end */
					if (host)
						xfer(s, buf, 1, 1);
					else
						xfer(s, buf, 1, 0);
				}
			} else if (host) {
				xfer(s, buf, size, 0);
				xfer(s, buf, size, 1);
			} else {
				xfer(s, buf, size, 1);
				xfer(s, buf, size, 0);
			}
		}
		double sec = now_s() - t0, xfers = stream ? n : 2.0 * n;
		char tm[32];
		snprintf(tm, sizeof(tm), "%.2fs", sec);
		if (host)
			printf("%-10zu%-10d%-12.0f%-10s%12.2f%12.2f%12.2f\n", size, n, (double) size * xfers, tm,
			       (double) size * xfers / sec / 1e6, sec * 1e6 / xfers, xfers / sec / 1e6);
	}
	close(s);
	free(buf);
	return 0;
}
