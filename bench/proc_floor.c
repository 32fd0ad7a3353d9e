// proc_floor — the "raw floor" of per-process sampling.
//
// The least work any sampler must do to export the per-process metrics of loadwatch: for each
// PID, read /proc/PID/stat, /proc/PID/status and /proc/PID/io once, and stat() /proc/PID/fd
// (st_size is the open-fd count on Linux >= 6.2). No parsing, no lookups, no allocation: one
// open/read/close per file into a stack buffer, by absolute path. It prints the CPU time
// (user + system) this process spent per pass, which is the yardstick the targets collector
// is measured against (bench/targets_bench, budget 1.5x).
//
// Usage: proc_floor [-n PASSES] [-r PROCFS] PID...     (or PIDs on stdin, blank separated,
//        when no PID argument is given)
// Output (one line, key=value, for targets_bench --floor and bench/run_core.py to pick up):
//   proc_floor pids=500 passes=20 cpu_us_per_pass=14873.1 cpu_us_per_pid=29.75 missing=0
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// One open/read/close. A single read() is enough: these are single_open seq_files, which
// hand out their whole text in one read when the buffer is large enough (fs/seq_file.c).
static int read_once(const char* path) {
  char buf[8192];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  return n < 0 ? -1 : 0;
}

int main(int argc, char** argv) {
  int passes = 20;
  const char* root = "/proc";
  int opt;
  while ((opt = getopt(argc, argv, "n:r:")) != -1) {
    if (opt == 'n')
      passes = atoi(optarg);
    else if (opt == 'r')
      root = optarg;
    else {
      fprintf(stderr, "usage: %s [-n PASSES] [-r PROCFS] PID...\n", argv[0]);
      return 2;
    }
  }
  if (passes < 1) passes = 1;

  size_t cap = 1024, count = 0;
  long* pids = malloc(cap * sizeof *pids);
  if (!pids) return 1;
  if (optind < argc) {
    for (int i = optind; i < argc; ++i) {
      if (count == cap) pids = realloc(pids, (cap *= 2) * sizeof *pids);
      pids[count++] = atol(argv[i]);
    }
  } else {
    long p;
    while (scanf("%ld", &p) == 1) {
      if (count == cap) pids = realloc(pids, (cap *= 2) * sizeof *pids);
      pids[count++] = p;
    }
  }
  if (count == 0) {
    fprintf(stderr, "proc_floor: no PIDs given\n");
    return 2;
  }

  // Paths are built before timing: building strings is not part of what the kernel charges.
  char(*paths)[4][64] = malloc(count * sizeof *paths);
  if (!paths) return 1;
  for (size_t i = 0; i < count; ++i) {
    snprintf(paths[i][0], 64, "%s/%ld/stat", root, pids[i]);
    snprintf(paths[i][1], 64, "%s/%ld/status", root, pids[i]);
    snprintf(paths[i][2], 64, "%s/%ld/io", root, pids[i]);
    snprintf(paths[i][3], 64, "%s/%ld/fd", root, pids[i]);
  }

  long missing = 0;
  unsigned long long fds = 0;
  double t0 = cpu_seconds();
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = 0; i < count; ++i) {
      int bad = read_once(paths[i][0]) | read_once(paths[i][1]) | read_once(paths[i][2]);
      struct stat st;
      if (stat(paths[i][3], &st) == 0)
        fds += (unsigned long long)st.st_size;
      else
        bad = -1;
      if (bad && pass == 0) ++missing;
    }
  }
  double used = cpu_seconds() - t0;
  double per_pass_us = used / passes * 1e6;
  printf(
      "proc_floor pids=%zu passes=%d cpu_us_per_pass=%.1f cpu_us_per_pid=%.2f missing=%ld "
      "open_fds=%llu\n",
      count, passes, per_pass_us, per_pass_us / (double)count, missing, fds / passes);
  free(paths);
  free(pids);
  return 0;
}
