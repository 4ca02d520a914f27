#include <hwloc.h>
#include <stdio.h>
#include <time.h>
static double now() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
int main(int argc, char** argv) {
  int io = argc > 1;
  double t0 = now();
  hwloc_topology_t t;
  hwloc_topology_init(&t);
  hwloc_topology_set_io_types_filter(
      t, io ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT : HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_load(t);
  double t1 = now();
  printf("%s %.1f ms, %d osdevs\n", io ? "with io" : "no io", t1 - t0,
         hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_OS_DEVICE));
  return 0;
}
