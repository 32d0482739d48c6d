/*
 * The medium's limit: a plain TCP ping-pong over loopback (blocking sockets,
 * TCP_NODELAY), printing fi_pingpong-style lines so bench/run.py parses both
 * the same way. Server: tcp_pingpong -B port -S size -I iters.
 * Client: the same with -P port host.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int full(int s, char *b, size_t n, int rd)
{
	while (n) {
		ssize_t k = rd ? recv(s, b, n, 0) : send(s, b, n, MSG_NOSIGNAL);
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t) k;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int port = 0, iters = 1000, c, one = 1, s;
	size_t size = 64;
	const char *host = NULL;
	while ((c = getopt(argc, argv, "B:P:S:I:")) != -1) {
		if (c == 'B' || c == 'P')
			port = atoi(optarg);
		else if (c == 'S')
			size = strtoull(optarg, NULL, 0);
		else if (c == 'I')
			iters = atoi(optarg);
	}
	if (optind < argc)
		host = argv[optind];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port) };
	a.sin_addr.s_addr = htonl(0x7f000001);
	if (host) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		for (int i = 0; i < 200 && connect(s, (struct sockaddr *) &a, sizeof(a)); i++) {
			close(s);
			usleep(10000);
			s = socket(AF_INET, SOCK_STREAM, 0);
		}
	} else {
		int l = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *) &a, sizeof(a)) || listen(l, 1))
			return 1;
		s = accept(l, NULL, NULL);
		close(l);
	}
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	char *buf = calloc(1, size ? size : 1);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < iters; i++) {
		if (host ? (full(s, buf, size, 0) || full(s, buf, size, 1)) : (full(s, buf, size, 1) || full(s, buf, size, 0)))
			return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double sec = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (host) {
		printf("bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n");
		printf("%zu %d =%d x %.2fs %.2f %.2f %.2f\n", size, iters, iters, sec,
		       2.0 * size * iters / sec / 1e6, sec * 1e6 / iters / 2, iters * 2 / sec / 1e6);
	}
	return 0;
}
