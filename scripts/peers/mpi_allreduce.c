/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allreduce timing for scripts/peers.sh (doc/peers.md): WARMUP then
 * ITERS back-to-back all-reduces of BYTES of float32, as a training loop
 * issues them. Rank 0 prints one line per timed exchange
 * ("EXCHANGE i ms") and checks the sum (every rank contributes rank + 1).
 *
 *   mpi_allreduce BYTES ITERS [WARMUP]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

int
main(int argc, char **argv)
{
	int rank, size, i, n, iters, warmup, bad = 0;
	double t0, t1;
	float *in, *out;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 3) {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_allreduce BYTES ITERS [WARMUP]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	n = (atoi(argv[1]) + 3) / 4;
	iters = atoi(argv[2]);
	warmup = argc > 3 ? atoi(argv[3]) : 2;
	in = malloc(sizeof(*in) * (size_t)n);
	out = malloc(sizeof(*out) * (size_t)n);
	if (in == NULL || out == NULL || n < 1 || iters < 1)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (i = 0; i < n; i++)
		in[i] = (float)(rank + 1);
	for (i = 0; i < warmup; i++)
		MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (i = 0; i < iters; i++) {
		MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		t1 = MPI_Wtime();
		if (rank == 0)
			printf("EXCHANGE %d %.3f\n", i, (t1 - t0) * 1e3);
		t0 = t1;
	}
	/* 1 + 2 + ... + size, exact in float for any sane size */
	for (i = 0; i < n; i++)
		if (fabsf(out[i] - (float)size * (float)(size + 1) / 2) > 0.5f)
			bad++;
	if (rank == 0)
		printf("CHECK ranks=%d elems=%d wrong=%d\n", size, n, bad);
	free(in);
	free(out);
	MPI_Finalize();
	return bad ? 1 : 0;
}
