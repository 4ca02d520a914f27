/* memcpy_bw: one core's memcpy bandwidth for a buffer of SIZE bytes, the
 * physical limit beside bench/loopback/run.sh's figures (a receiver that
 * copies each byte once can move at most this many bytes per second; one
 * that copies twice, half).
 *
 *   memcpy_bw SIZE [SECONDS]
 *
 * Copies SIZE bytes from one buffer to another (both touched first, so no
 * page faults are timed) for about SECONDS (default 1) and prints one line:
 *   {"memcpy_gbyte_s":G,"bytes":SIZE,"copies":K}
 * G is the median over 9 slices of the time of bytes copied per second
 * (GB = 1e9 bytes). Build: cc -O2 -o memcpy_bw memcpy_bw.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: memcpy_bw SIZE [SECONDS]\n");
    return 2;
  }
  const size_t size = strtoull(argv[1], NULL, 10);
  const double seconds = argc == 3 ? atof(argv[2]) : 1.0;
  if (size == 0 || !(seconds > 0)) {
    fprintf(stderr, "memcpy_bw: SIZE and SECONDS must be positive\n");
    return 2;
  }
  unsigned char* src = malloc(size);
  unsigned char* dst = malloc(size);
  if (src == NULL || dst == NULL) {
    fprintf(stderr, "memcpy_bw: cannot allocate 2 x %zu bytes\n", size);
    return 1;
  }
  memset(src, 0x5A, size);
  memset(dst, 0, size);
  enum { kSlices = 9 };
  double rate[kSlices];
  long copies = 0;
  for (int s = 0; s < kSlices; ++s) {
    long k = 0;
    const double t0 = now_s();
    double t1 = t0;
    do {
      src[k % size] = (unsigned char)k; /* a different source each time */
      memcpy(dst, src, size);
      __asm__ volatile("" : : "r"(dst) : "memory");
      ++k;
      t1 = now_s();
    } while (t1 - t0 < seconds / kSlices);
    rate[s] = (double)size * (double)k / (t1 - t0) / 1e9;
    copies += k;
  }
  qsort(rate, kSlices, sizeof rate[0], cmp_double);
  printf("{\"memcpy_gbyte_s\":%.3f,\"bytes\":%zu,\"copies\":%ld}\n", rate[kSlices / 2], size,
         copies);
  free(src);
  free(dst);
  return 0;
}
