/*
 * MPI one-sided communication through Open MPI's osc rdma component over
 * btl ofi (our RMA and atomics underneath). Every rank runs every case;
 * each result is checked:
 *
 *  fence      MPI_Put / MPI_Get of 8 B .. 4 MiB to and from the right
 *             neighbour between fences
 *  pscw       post/start/complete/wait with the neighbours as the groups
 *  lock       passive target: lock/put/flush/get/unlock, exclusive and
 *             shared; lock_all with MPI_Accumulate(MPI_SUM) from every rank
 *             into rank 0
 *  atomics    MPI_Fetch_and_op (MPI_SUM, MPI_NO_OP), MPI_Compare_and_swap
 *             (a counter every rank increments by CAS), MPI_Get_accumulate
 *  request    MPI_Rput / MPI_Rget with MPI_Wait
 *  dynamic    MPI_Win_create_dynamic + MPI_Win_attach, addresses exchanged
 *             with MPI_Get_address, put and get
 *
 * Prints "mpi one-sided (N ranks): P passed, F failed" and exits non-zero
 * on a failure.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, passed, failed;

#define CHECK(cond, ...) \
	do { \
		if (cond) { \
			passed++; \
		} else { \
			failed++; \
			printf("rank %d FAIL %s:%d: ", rank, __FILE__, __LINE__); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
	} while (0)

static unsigned char pat(size_t i, int who, int salt)
{
	return (unsigned char) (i * 7 + (size_t) who * 31 + (size_t) salt);
}

static void fill(unsigned char *b, size_t n, int who, int salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(i, who, salt);
}

static long bad_at(const unsigned char *b, size_t n, int who, int salt)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(i, who, salt))
			return (long) i;
	return -1;
}

#define MAXB (4 << 20)

static void case_fence(void)
{
	static const size_t sizes[] = { 8, 1000, 65536, 1 << 20, MAXB };
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	unsigned char *win_buf, *local = malloc(MAXB);
	MPI_Win win;
	MPI_Win_allocate(MAXB, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_buf, &win);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		memset(win_buf, 0, n);
		fill(local, n, rank, (int) k);
		MPI_Win_fence(0, win);
		MPI_Put(local, (int) n, MPI_BYTE, right, 0, (int) n, MPI_BYTE, win);
		MPI_Win_fence(0, win);
		long b = bad_at(win_buf, n, left, (int) k);
		CHECK(b < 0, "fence put of %zu bytes: byte %ld wrong", n, b);
		memset(local, 0, n);
		MPI_Get(local, (int) n, MPI_BYTE, right, 0, (int) n, MPI_BYTE, win);
		MPI_Win_fence(0, win);
		b = bad_at(local, n, rank, (int) k);
		CHECK(b < 0, "fence get of %zu bytes: byte %ld wrong", n, b);
		MPI_Win_fence(0, win);
	}
	MPI_Win_free(&win);
	free(local);
}

static void case_pscw(void)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int *win_buf, v[16];
	MPI_Win win;
	MPI_Group world, to, from;
	MPI_Win_allocate(16 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win_buf, &win);
	memset(win_buf, 0, 16 * sizeof(int));
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	MPI_Group_incl(world, 1, &right, &to);
	MPI_Group_incl(world, 1, &left, &from);
	for (int i = 0; i < 16; i++)
		v[i] = rank * 100 + i;
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_post(from, 0, win);
	MPI_Win_start(to, 0, win);
	MPI_Put(v, 16, MPI_INT, right, 0, 16, MPI_INT, win);
	MPI_Win_complete(win);
	MPI_Win_wait(win);
	int ok = 1;
	for (int i = 0; i < 16; i++)
		ok &= win_buf[i] == left * 100 + i;
	CHECK(ok, "post/start/complete/wait: the left neighbour's put is not in place");
	MPI_Group_free(&to);
	MPI_Group_free(&from);
	MPI_Group_free(&world);
	MPI_Win_free(&win);
}

static void case_lock(void)
{
	int right = (rank + 1) % size;
	int64_t *win_buf, v = 0, one = 1;
	unsigned char *bbuf, *local = malloc(65536);
	MPI_Win win, bwin;
	MPI_Win_allocate(8 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &win_buf, &win);
	MPI_Win_allocate(65536, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &bbuf, &bwin);
	memset(win_buf, 0, 8 * sizeof(int64_t));
	memset(bbuf, 0, 65536);
	MPI_Barrier(MPI_COMM_WORLD);
	/* exclusive lock: put, flush, get back */
	fill(local, 65536, rank, 9);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, bwin);
	MPI_Put(local, 65536, MPI_BYTE, right, 0, 65536, MPI_BYTE, bwin);
	MPI_Win_flush(right, bwin);
	memset(local, 0, 65536);
	MPI_Get(local, 65536, MPI_BYTE, right, 0, 65536, MPI_BYTE, bwin);
	MPI_Win_unlock(right, bwin);
	CHECK(bad_at(local, 65536, rank, 9) < 0, "lock/put/flush/get/unlock: data wrong");
	/* shared lock_all: every rank adds 1 to rank 0's slot 0, rank+1 to slot 1 */
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock_all(0, win);
	v = rank + 1;
	MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_SUM, win);
	MPI_Accumulate(&v, 1, MPI_INT64_T, 0, 1, 1, MPI_INT64_T, MPI_SUM, win);
	MPI_Win_unlock_all(win);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
		MPI_Win_sync(win);
		int64_t want1 = (int64_t) size * (size + 1) / 2;
		CHECK(win_buf[0] == size && win_buf[1] == want1, "lock_all accumulate: %lld %lld, want %d %lld",
		      (long long) win_buf[0], (long long) win_buf[1], size, (long long) want1);
		MPI_Win_unlock(0, win);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_free(&win);
	MPI_Win_free(&bwin);
	free(local);
}

static void case_atomics(void)
{
	int64_t *win_buf = calloc(8, sizeof(int64_t)), one = 1, old = -1, none = 0, got = -1;
	MPI_Win win;
	int rounds = 50;
	/* MPI_Win_create, not MPI_Win_allocate, and no compare-and-swap on
	 * the own window: Open MPI 4.1's osc rdma hands MPI_Compare_and_swap
	 * to btl ofi with a NULL remote registration handle when the target
	 * is the calling rank or a same-node rank whose allocated window lives
	 * in shared memory, and btl ofi dereferences it (README, "Open MPI
	 * one-sided") */
	MPI_Win_create(win_buf, 8 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	memset(win_buf, 0, 8 * sizeof(int64_t));
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock_all(0, win);
	/* fetch-and-add on rank 0's slot 0: the old values are all different */
	int64_t seen_max = -1;
	for (int i = 0; i < rounds; i++) {
		MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win);
		MPI_Win_flush(0, win);
		CHECK(old >= 0 && old < (int64_t) rounds * size && old > seen_max - (int64_t) rounds * size,
		      "fetch_and_op returned %lld", (long long) old);
		if (old > seen_max)
			seen_max = old;
	}
	/* CAS increment loop on rank 0's slot 1, by the other ranks */
	for (int i = 0; i < rounds && rank != 0; i++) {
		int64_t cur = 0, want, res;
		MPI_Fetch_and_op(&none, &cur, MPI_INT64_T, 0, 1, MPI_NO_OP, win);
		MPI_Win_flush(0, win);
		for (int tries = 0; tries < 100000; tries++) {
			want = cur + 1;
			MPI_Compare_and_swap(&want, &cur, &res, MPI_INT64_T, 0, 1, win);
			MPI_Win_flush(0, win);
			if (res == cur)
				break;
			cur = res;
		}
	}
	/* get_accumulate (sum) on rank 0's slot 2 */
	for (int i = 0; i < rounds; i++) {
		MPI_Get_accumulate(&one, 1, MPI_INT64_T, &got, 1, MPI_INT64_T, 0, 2, 1, MPI_INT64_T, MPI_SUM, win);
		MPI_Win_flush(0, win);
		CHECK(got >= 0 && got < (int64_t) rounds * size, "get_accumulate returned %lld", (long long) got);
	}
	MPI_Win_unlock_all(win);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
		MPI_Win_sync(win);
		int64_t want = (int64_t) rounds * size;
		CHECK(win_buf[0] == want, "fetch_and_op total %lld, want %lld", (long long) win_buf[0], (long long) want);
		CHECK(win_buf[1] == want - rounds, "compare_and_swap counter %lld, want %lld", (long long) win_buf[1],
		      (long long) (want - rounds));
		CHECK(win_buf[2] == want, "get_accumulate total %lld, want %lld", (long long) win_buf[2], (long long) want);
		MPI_Win_unlock(0, win);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_free(&win);
	free(win_buf);
}

static void case_request(void)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	unsigned char *win_buf, *local = malloc(1 << 20);
	MPI_Win win;
	MPI_Request rq;
	MPI_Win_allocate(1 << 20, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_buf, &win);
	memset(win_buf, 0, 1 << 20);
	fill(local, 1 << 20, rank, 3);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock_all(0, win);
	MPI_Rput(local, 1 << 20, MPI_BYTE, right, 0, 1 << 20, MPI_BYTE, win, &rq);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	MPI_Win_flush(right, win);
	MPI_Win_unlock_all(win);
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK(bad_at(win_buf, 1 << 20, left, 3) < 0, "rput: data wrong");
	MPI_Win_lock_all(0, win);
	memset(local, 0, 1 << 20);
	MPI_Rget(local, 1 << 20, MPI_BYTE, right, 0, 1 << 20, MPI_BYTE, win, &rq);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	MPI_Win_unlock_all(win);
	CHECK(bad_at(local, 1 << 20, rank, 3) < 0, "rget: data wrong");
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_free(&win);
	free(local);
}

static void case_dynamic(void)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	size_t n = 100000;
	unsigned char *mem = calloc(1, n), *local = malloc(n);
	MPI_Aint mine, theirs;
	MPI_Win win;
	MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	MPI_Win_attach(win, mem, (MPI_Aint) n);
	MPI_Get_address(mem, &mine);
	MPI_Sendrecv(&mine, 1, MPI_AINT, left, 7, &theirs, 1, MPI_AINT, right, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	fill(local, n, rank, 5);
	MPI_Win_lock_all(0, win);
	MPI_Put(local, (int) n, MPI_BYTE, right, theirs, (int) n, MPI_BYTE, win);
	MPI_Win_flush(right, win);
	MPI_Win_unlock_all(win);
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK(bad_at(mem, n, left, 5) < 0, "dynamic window put: data wrong");
	MPI_Win_lock_all(0, win);
	memset(local, 0, n);
	MPI_Get(local, (int) n, MPI_BYTE, right, theirs, (int) n, MPI_BYTE, win);
	MPI_Win_flush(right, win);
	MPI_Win_unlock_all(win);
	CHECK(bad_at(local, n, rank, 5) < 0, "dynamic window get: data wrong");
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_detach(win, mem);
	MPI_Win_free(&win);
	free(mem);
	free(local);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	case_fence();
	case_pscw();
	case_lock();
	case_atomics();
	case_request();
	case_dynamic();
	int tot[2] = { passed, failed }, all[2];
	MPI_Reduce(tot, all, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi one-sided (%d ranks): %d passed, %d failed\n", size, all[0], all[1]);
	MPI_Finalize();
	return failed ? 1 : 0;
}
