/* mpi_coll_bench: MPI_Bcast / MPI_Allgather / the FSDP pair measured exactly
 * as bench/osu/ measures MCCL (Debian packages no OSU micro-benchmarks), so
 * that bench/fabric/run.sh compares like with like.
 *
 *   mpirun ... mpi_coll_bench -b bcast|allgather|allreduce|reduce_scatter|alltoall|
 *                              ag_rs_concurrent
 *              [-m [MIN:]MAX]
 *              [-i ITER] [-x WARMUP] [-c] [--sequential] [--impl NAME]
 *              [--json FILE] [--netdev IFACE --traffic-iters K]
 *              [--thread-level single|funneled|serialized|multiple]
 *
 * ag_rs_concurrent (as mccl_osu_ag_rs): an allgather of m bytes per rank and
 * a reduce-scatter of N*m bytes of float32 (sum) leaving m bytes per rank,
 * started together with MPI_Iallgather + MPI_Ireduce_scatter_block and
 * completed with one MPI_Waitall. Open MPI runs those in libnbc, which has no
 * ring; --sequential runs the blocking MPI_Allgather then MPI_Reduce_scatter
 * instead, so that coll/tuned's pinned ring algorithms apply (the "ring
 * pair": on send-limited links nothing injects less than it).
 *
 * allreduce: MPI_Allreduce of m bytes of float32 (sum); reduce_scatter:
 * MPI_Reduce_scatter_block of N*m bytes of float32 (sum) leaving m bytes per
 * rank; alltoall: MPI_Alltoall of m bytes per pair of ranks (OSU's size, as
 * bench/osu/mccl_osu_alltoall). bench/tune/mpi_crossover.sh times them (and bcast, allgather) with
 * and without libmccl_mpi to find where the preload starts to serve.
 *
 * Per size (powers of two from MIN to MAX): each rank times every collective
 * between two barriers (untimed); avg/min/max over ranks of the per-rank
 * mean, and p50_max_us: per iteration the slowest rank, median over
 * iterations; without -c, cycle_us: rank 0's wall time per timed iteration
 * (the collective and the barrier after it), which does not depend on where
 * the barrier leaves each rank. With -c every iteration's data is checked. With --netdev, K
 * more collectives back to back (between two barriers) measure what each
 * rank's interface carried per collective (/sys/class/net/IFACE/statistics;
 * one rank per host or network namespace). Rank 0 appends one JSON line per
 * size to FILE (the same keys as bench/osu/'s --json, cpu_s_per_gb among
 * them: each rank's CPU seconds inside the timed collectives per GB of
 * bytes_per_rank) and prints a table.
 * --thread-level starts MPI with MPI_Init_thread at that level (default:
 * MPI_Init); bench/mpi/thread_level.sh compares MPI_THREAD_MULTIPLE with
 * MPI_THREAD_SERIALIZED under libmccl_mpi.
 * Build: mpicc -O2 -o mpi_coll_bench mpi_coll_bench.c
 */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time (user and system, every thread) of this process so far. */
static double process_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static unsigned char pattern(int rank, size_t i, int iter) {
  return (unsigned char)(((size_t)(rank + 1) * 131 + i * 7 + (size_t)iter * 13 + 1) & 0xFF);
}

/* Reduce-scatter input: small integers in float32, so sums are exact in any
 * order (the same values as bench/osu/reduce_data.h). */
static float reduce_input(int rank, size_t i, int iter) {
  return (float)(((size_t)(rank + 1) * 5 + i * 3 + (size_t)iter * 7) % 64 + 1);
}

static double read_counter(const char* dev, const char* name) {
  char path[256];
  double v = -1;
  snprintf(path, sizeof path, "/sys/class/net/%s/statistics/%s", dev, name);
  FILE* f = fopen(path, "r");
  if (f == NULL || fscanf(f, "%lf", &v) != 1) {
    fprintf(stderr, "mpi_coll_bench: cannot read %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  fclose(f);
  return v;
}

static void read_net(const char* dev, double out[4]) {
  static const char* names[4] = {"tx_bytes", "rx_bytes", "tx_packets", "rx_packets"};
  for (int k = 0; k < 4; ++k) out[k] = read_counter(dev, names[k]);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

enum kind { kBcast, kAllgather, kAllreduce, kReduceScatter, kAlltoall, kAgRs };

struct bench {
  enum kind kind;
  int rank, size, sequential;
  unsigned char *send, *recv;
  float *rs_send, *rs_recv;
  int* rs_counts; /* all m/4: MPI_Reduce_scatter's recvcounts */
};

static void run_one(const struct bench* b, size_t m) {
  if (b->kind == kAllgather) {
    MPI_Allgather(b->send, (int)m, MPI_CHAR, b->recv, (int)m, MPI_CHAR, MPI_COMM_WORLD);
  } else if (b->kind == kAlltoall) {
    MPI_Alltoall(b->send, (int)m, MPI_CHAR, b->recv, (int)m, MPI_CHAR, MPI_COMM_WORLD);
  } else if (b->kind == kBcast) {
    MPI_Bcast(b->recv, (int)m, MPI_CHAR, 0, MPI_COMM_WORLD);
  } else if (b->kind == kAllreduce) {
    MPI_Allreduce(b->rs_send, b->rs_recv, (int)(m / sizeof(float)), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  } else if (b->kind == kReduceScatter) {
    MPI_Reduce_scatter_block(b->rs_send, b->rs_recv, (int)(m / sizeof(float)), MPI_FLOAT, MPI_SUM,
                             MPI_COMM_WORLD);
  } else if (b->sequential) {
    for (int r = 0; r < b->size; ++r) b->rs_counts[r] = (int)(m / sizeof(float));
    MPI_Allgather(b->send, (int)m, MPI_CHAR, b->recv, (int)m, MPI_CHAR, MPI_COMM_WORLD);
    MPI_Reduce_scatter(b->rs_send, b->rs_recv, b->rs_counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else {
    MPI_Request req[2];
    MPI_Iallgather(b->send, (int)m, MPI_CHAR, b->recv, (int)m, MPI_CHAR, MPI_COMM_WORLD, &req[0]);
    MPI_Ireduce_scatter_block(b->rs_send, b->rs_recv, (int)(m / sizeof(float)), MPI_FLOAT, MPI_SUM,
                              MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  }
}

static int reduces(enum kind k) { return k == kAllreduce || k == kReduceScatter || k == kAgRs; }

static void fill(const struct bench* b, size_t m, int iter) {
  if (reduces(b->kind)) {
    size_t all = m / sizeof(float) * (b->kind == kAllreduce ? 1 : (size_t)b->size);
    for (size_t j = 0; j < all; ++j) b->rs_send[j] = reduce_input(b->rank, j, iter);
    memset(b->rs_recv, 0, m);
  }
  if (b->kind == kAllreduce || b->kind == kReduceScatter) return;
  if (b->kind == kAlltoall) {
    /* Block `to` carries the pair's own pattern (as mccl_osu_alltoall). */
    for (int to = 0; to < b->size; ++to) {
      for (size_t i = 0; i < m; ++i) {
        b->send[(size_t)to * m + i] = pattern(b->rank * b->size + to, i, iter);
      }
    }
    memset(b->recv, 0, m * (size_t)b->size);
  } else if (b->kind != kBcast) {
    for (size_t i = 0; i < m; ++i) b->send[i] = pattern(b->rank, i, iter);
    memset(b->recv, 0, m * (size_t)b->size);
  } else if (b->rank == 0) {
    for (size_t i = 0; i < m; ++i) b->recv[i] = pattern(0, i, iter);
  } else {
    memset(b->recv, 0, m);
  }
}

static double check(const struct bench* b, size_t m, int iter) {
  double wrong = 0;
  if (b->kind == kAlltoall) {
    for (int from = 0; from < b->size; ++from) {
      for (size_t i = 0; i < m; ++i) {
        wrong += b->recv[(size_t)from * m + i] != pattern(from * b->size + b->rank, i, iter);
      }
    }
    return wrong;
  }
  int roots = b->kind == kBcast ? 1 : reduces(b->kind) && b->kind != kAgRs ? 0 : b->size;
  for (int r = 0; r < roots; ++r) {
    for (size_t i = 0; i < m; ++i) wrong += b->recv[(size_t)r * m + i] != pattern(r, i, iter);
  }
  if (reduces(b->kind)) {
    size_t count = m / sizeof(float);
    size_t offset = b->kind == kAllreduce ? 0 : count * (size_t)b->rank;
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < b->size; ++r) want += reduce_input(r, offset + i, iter);
      wrong += b->rs_recv[i] != want;
    }
  }
  return wrong;
}

int main(int argc, char** argv) {
  const char *bench_name = NULL, *impl = "mpi", *json_path = NULL, *netdev = NULL;
  size_t min_size = 1, max_size = 1 << 20;
  int iters = 100, warmup = 10, validate = 0, traffic_iters = 0;
  static struct option longs[] = {{"impl", required_argument, NULL, 1},
                                  {"json", required_argument, NULL, 2},
                                  {"netdev", required_argument, NULL, 3},
                                  {"traffic-iters", required_argument, NULL, 4},
                                  {"sequential", no_argument, NULL, 5},
                                  {"thread-level", required_argument, NULL, 6},
                                  {NULL, 0, NULL, 0}};
  /* --thread-level is read before MPI starts: MPI_Init_thread needs it. */
  int level = -1, provided = 0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], "--thread-level") != 0) continue;
    level = strcmp(argv[i + 1], "multiple") == 0     ? MPI_THREAD_MULTIPLE
            : strcmp(argv[i + 1], "serialized") == 0 ? MPI_THREAD_SERIALIZED
            : strcmp(argv[i + 1], "funneled") == 0   ? MPI_THREAD_FUNNELED
                                                     : MPI_THREAD_SINGLE;
  }
  if (level < 0) {
    MPI_Init(&argc, &argv);
  } else {
    MPI_Init_thread(&argc, &argv, level, &provided);
    if (provided != level) {
      fprintf(stderr, "mpi_coll_bench: asked for thread level %d, MPI provides %d\n", level,
              provided);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  struct bench b = {0};
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.size);
  int c;
  while ((c = getopt_long(argc, argv, "b:m:i:x:c", longs, NULL)) != -1) {
    char* colon;
    switch (c) {
      case 'b':
        bench_name = optarg;
        break;
      case 'm':
        colon = strchr(optarg, ':');
        if (colon != NULL) {
          if (colon != optarg) min_size = strtoull(optarg, NULL, 10);
          if (colon[1] != '\0') max_size = strtoull(colon + 1, NULL, 10);
        } else {
          max_size = strtoull(optarg, NULL, 10);
        }
        break;
      case 'i':
        iters = atoi(optarg);
        break;
      case 'x':
        warmup = atoi(optarg);
        break;
      case 'c':
        validate = 1;
        break;
      case 1:
        impl = optarg;
        break;
      case 2:
        json_path = optarg;
        break;
      case 3:
        netdev = optarg;
        break;
      case 4:
        traffic_iters = atoi(optarg);
        break;
      case 5:
        b.sequential = 1;
        break;
      case 6:
        break; /* read before MPI_Init_thread */
      default:
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (bench_name == NULL ||
      (strcmp(bench_name, "bcast") && strcmp(bench_name, "allgather") &&
       strcmp(bench_name, "allreduce") && strcmp(bench_name, "reduce_scatter") &&
       strcmp(bench_name, "alltoall") && strcmp(bench_name, "ag_rs_concurrent")) ||
      min_size == 0 || iters < 1 || warmup < 0) {
    if (b.rank == 0) fprintf(stderr, "usage: see the comment at the top of mpi_coll_bench.c\n");
    MPI_Finalize();
    return 2;
  }
  b.kind = strcmp(bench_name, "bcast") == 0            ? kBcast
           : strcmp(bench_name, "allgather") == 0      ? kAllgather
           : strcmp(bench_name, "allreduce") == 0      ? kAllreduce
           : strcmp(bench_name, "reduce_scatter") == 0 ? kReduceScatter
           : strcmp(bench_name, "alltoall") == 0       ? kAlltoall
                                                       : kAgRs;
  if (reduces(b.kind)) {
    b.rs_send = malloc(max_size * (size_t)b.size);
    b.rs_recv = malloc(max_size);
    b.rs_counts = malloc(sizeof(int) * (size_t)b.size);
    memset(b.rs_send, 0, max_size * (size_t)b.size);
  }
  const size_t send_bytes = b.kind == kAlltoall ? max_size * (size_t)b.size : max_size;
  b.send = malloc(send_bytes);
  b.recv = malloc(max_size * (size_t)b.size);
  memset(b.send, 1, send_bytes);
  memset(b.recv, 0, max_size * (size_t)b.size);
  FILE* json = NULL;
  if (b.rank == 0 && json_path != NULL) json = fopen(json_path, "a");
  if (b.rank == 0) printf("# %s %s\n# Size       Avg Latency(us)\n", impl, bench_name);

  int status = 0;
  double* times = malloc(sizeof(double) * (size_t)iters);
  double* slowest = malloc(sizeof(double) * (size_t)iters);
  double* cpu_all = malloc(sizeof(double) * (size_t)b.size);
  for (size_t m = min_size; m <= max_size && m > 0; m *= 2) {
    double errors = 0, sum = 0, net[4] = {0, 0, 0, 0}, cpu_ns = 0;
    double loop_start = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + warmup; ++i) {
      if (i == warmup) loop_start = MPI_Wtime();
      if (validate) {
        fill(&b, m, i);
        MPI_Barrier(MPI_COMM_WORLD);
      }
      double c0 = process_cpu_ns();
      double t0 = MPI_Wtime();
      run_one(&b, m);
      double t1 = MPI_Wtime();
      if (i >= warmup) cpu_ns += process_cpu_ns() - c0;
      MPI_Barrier(MPI_COMM_WORLD);
      if (validate) errors += check(&b, m, i);
      if (i >= warmup) times[i - warmup] = (t1 - t0) * 1e6;
    }
    /* One timed iteration, the collective and the barrier after it, as
     * bench/osu's cycle_us (reported without -c). */
    const double cycle_us = (MPI_Wtime() - loop_start) * 1e6 / iters;
    if (netdev != NULL && traffic_iters > 0) {
      double a[4], z[4];
      // Every host reads before any rank starts: a rank leaves a barrier
      // before others do, and a root that started at once could land data
      // on a host that has not read its counters yet (the multicast of a
      // small broadcast then counted as 0 received bytes).
      MPI_Barrier(MPI_COMM_WORLD);
      read_net(netdev, a);
      MPI_Barrier(MPI_COMM_WORLD);
      for (int k = 0; k < traffic_iters; ++k) run_one(&b, m);
      MPI_Barrier(MPI_COMM_WORLD);
      read_net(netdev, z);
      for (int k = 0; k < 4; ++k) net[k] = (z[k] - a[k]) / traffic_iters;
    }
    for (int i = 0; i < iters; ++i) sum += times[i];
    double mean = sum / iters, avg = 0, mn = 0, mx = 0, total_errors = 0, net_max[4];
    MPI_Reduce(&mean, &avg, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mean, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mean, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(net, net_max, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(times, slowest, iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&errors, &total_errors, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Gather(&cpu_ns, 1, MPI_DOUBLE, cpu_all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (b.rank == 0) {
      avg /= b.size;
      qsort(slowest, (size_t)iters, sizeof(double), cmp_double);
      double p50 =
          iters % 2 ? slowest[iters / 2] : (slowest[iters / 2 - 1] + slowest[iters / 2]) / 2;
      printf("%-10zu%18.2f%s\n", m, avg, validate ? (total_errors > 0 ? "  Fail" : "  Pass") : "");
      fflush(stdout);
      if (json != NULL) {
        fprintf(json,
                "{\"bench\":\"%s\",\"impl\":\"%s\",\"ranks\":%d,\"bytes_per_rank\":%zu,"
                "\"avg_us\":%.3f,\"min_us\":%.3f,\"max_us\":%.3f,\"p50_max_us\":%.3f,"
                "\"iterations\":%d,\"warmup\":%d,\"validated\":%s,\"errors\":%.0f",
                bench_name, impl, b.size, m, avg, mn, mx, p50, iters, warmup,
                validate ? (total_errors > 0 ? "false" : "true") : "null", total_errors);
        if (!validate) fprintf(json, ",\"cycle_us\":%.3f", cycle_us);
        if (netdev != NULL && traffic_iters > 0) {
          fprintf(json,
                  ",\"netdev\":\"%s\",\"traffic_iters\":%d,\"tx_bytes_max\":%.1f,"
                  "\"rx_bytes_max\":%.1f,\"tx_packets_max\":%.2f,\"rx_packets_max\":%.2f",
                  netdev, traffic_iters, net_max[0], net_max[1], net_max[2], net_max[3]);
        }
        fprintf(json, ",\"cpu_s_per_gb\":[");
        for (int r = 0; r < b.size; ++r) {
          fprintf(json, "%s%.4f", r ? "," : "", cpu_all[r] / ((double)iters * (double)m));
        }
        fprintf(json, "]}\n");
        fflush(json);
      }
    }
    if (total_errors > 0) {
      status = 1;
      break;
    }
  }
  if (json != NULL) fclose(json);
  free(times);
  free(slowest);
  free(cpu_all);
  free(b.send);
  free(b.recv);
  free(b.rs_send);
  free(b.rs_recv);
  free(b.rs_counts);
  MPI_Finalize();
  return status;
}
