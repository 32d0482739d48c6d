/*
 * rsswrap FILE CMD [ARGS...]: runs CMD as a child and writes the child's
 * peak resident set (KiB) to FILE. The child is forked from this small
 * process, so its ru_maxrss (which on Linux includes the image it was
 * forked from) measures CMD rather than the Python harness.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _DEFAULT_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: rsswrap FILE CMD [ARGS...]\n");
		return 2;
	}
	child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	signal(SIGTERM, forward);
	signal(SIGINT, forward);
	int st = 0;
	struct rusage ru;
	while (wait4(child, &st, 0, &ru) < 0)
		;
	FILE *f = fopen(argv[1], "w");
	if (f) {
		fprintf(f, "%ld\n", ru.ru_maxrss);
		fclose(f);
	}
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}
