/* The MPI side of the dist module: init, the collectives the scene uses. Built only when CMake
 * finds MPI (comm_none.c otherwise). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/types.h>
#include <unistd.h>

#include "dist/dist_internal.h"
#include "dist/over.cuh"

struct ir_dist {
  int rank, size;
  int local_rank, local_size; /* among the ranks of this host (shared memory) */
  bool initialized_here;
  bool broken; /* a rank may never meet the others again (ir_dist_mark_broken) */
  /* Translucent compositing: the strips received from every rank and the blended strip; per-rank
   * counts and offsets. Grown, never shrunk. */
  uint64_t *strips, *blended;
  size_t strip_capacity;
  int *counts; /* 4 x size: send counts, send offsets, receive counts, receive offsets */
  /* Opaque compositing by windows: the other ranks' windows, one after another (rank 0), and the
   * most words they took so far (every rank: the same, as every rank computes every window). */
  uint64_t *windows_in;
  size_t windows_capacity;
};

bool ir_dist_built_with_mpi(void) { return true; }

/* ---- Naming a dead peer ------------------------------------------------------------------------
 * When a rank dies, mpirun names it and stops the others (SIGCONT, SIGTERM a second later, SIGKILL
 * a second after that). The surviving ranks say so too: the lowest surviving rank on the dead
 * one's host prints one line naming it. The ranks of a host exchange their process ids at start;
 * a watcher thread of each rank then looks at its peers every 50 ms (kill(pid, 0), and /proc for a
 * zombie not yet reaped), so the line is out within 50 ms of the death, before the launcher starts
 * stopping anyone. Waiting for the launcher's SIGTERM alone was not enough: now and then the
 * lowest surviving rank never ran its handler before the launcher's SIGKILL, while the others
 * deferred to it, and no line came. The SIGTERM handler stays, for a rank without the thread. Both
 * report through report_dead_peer, which decides once per process. A signal handler has no
 * context, hence this file-scope state, written before the handler and the thread start and only
 * read by them until the watch ends (stop_watching). */
static int watch_rank, watch_count;
static int *watch_ranks;
static pid_t *watch_pids;
static int watch_reported; /* set once, atomically, at the first death seen: decided */
static pthread_t watch_thread;
static bool watch_thread_running;
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_wake = PTHREAD_COND_INITIALIZER;
static bool watch_stop; /* under watch_lock */

static size_t put_text(char *buf, size_t at, size_t cap, const char *s) {
  while (*s && at + 1 < cap) buf[at++] = *s++;
  return at;
}
static size_t put_number(char *buf, size_t at, size_t cap, long v) {
  char digits[24];
  int n = 0;
  do digits[n++] = (char)('0' + v % 10), v /= 10; while (v && n < 23);
  while (n && at + 1 < cap) buf[at++] = digits[--n];
  return at;
}

/* Async-signal-safe (kill, open, read, close): whether a process has ended. A process killed but
 * not yet reaped by its parent (the launcher) is a zombie: kill(pid, 0) still finds it, so its
 * state letter in /proc/PID/stat (after the name's closing parenthesis) says Z or X. */
static bool process_gone(pid_t pid) {
  int saved = errno;
  bool gone = kill(pid, 0) != 0 && errno == ESRCH;
  if (!gone) {
    char path[40], stat[256];
    size_t n = put_text(path, 0, sizeof path, "/proc/");
    n = put_number(path, n, sizeof path, (long)pid);
    n = put_text(path, n, sizeof path, "/stat");
    path[n] = '\0';
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
      ssize_t got = read(fd, stat, sizeof stat - 1);
      close(fd);
      for (ssize_t k = got - 2; k > 0; k--) {
        if (stat[k] == ')' && stat[k + 1] == ' ' && k + 2 < got) {
          gone = stat[k + 2] == 'Z' || stat[k + 2] == 'X';
          break;
        }
      }
    }
  }
  errno = saved;
  return gone;
}

/* Async-signal-safe (the checks above, an atomic exchange and write): the first time a peer of
 * this host is seen gone, print the line if this is the lowest surviving rank of the host, and
 * decide nothing again. A rank that deferred to a lower one stays silent when that one dies in
 * turn (stopped by the launcher a second later), so the host prints one line, not two. */
static void report_dead_peer(void) {
  int dead = -1;
  long dead_pid = 0;
  bool lowest_alive = true;
  for (int k = 0; k < watch_count; k++) {
    if (watch_ranks[k] == watch_rank) continue;
    bool gone = process_gone(watch_pids[k]);
    if (gone && dead < 0) dead = watch_ranks[k], dead_pid = (long)watch_pids[k];
    if (!gone && watch_ranks[k] < watch_rank) lowest_alive = false;
  }
  if (dead < 0 || __atomic_exchange_n(&watch_reported, 1, __ATOMIC_SEQ_CST) || !lowest_alive) return;
  char line[160];
  size_t n = put_text(line, 0, sizeof line, "inkray: rank ");
  n = put_number(line, n, sizeof line, watch_rank);
  n = put_text(line, n, sizeof line, ": rank ");
  n = put_number(line, n, sizeof line, dead);
  n = put_text(line, n, sizeof line, " (pid ");
  n = put_number(line, n, sizeof line, dead_pid);
  n = put_text(line, n, sizeof line, " on this host) died during the run; the launcher stops the others\n");
  ssize_t written = write(STDERR_FILENO, line, n);
  (void)written;
}

static void on_term(int sig) {
  int saved = errno;
  report_dead_peer();
  errno = saved;
  signal(sig, SIG_DFL);
  raise(sig);
}

/* The watcher: every 50 ms until stop_watching, or until it has reported. */
static void *watch_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&watch_lock);
  while (!watch_stop && !__atomic_load_n(&watch_reported, __ATOMIC_SEQ_CST)) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 50 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&watch_wake, &watch_lock, &until);
    if (watch_stop) break;
    pthread_mutex_unlock(&watch_lock);
    report_dead_peer();
    pthread_mutex_lock(&watch_lock);
  }
  pthread_mutex_unlock(&watch_lock);
  return NULL;
}

/* Collective (the host's ranks): their ranks and pids, the handler and the watcher. */
static void watch_peers(ir_dist *d, MPI_Comm local) {
  int n = d->local_size;
  int *ranks = malloc((size_t)n * sizeof *ranks);
  long *pids = malloc((size_t)n * sizeof *pids);
  pid_t *as_pids = malloc((size_t)n * sizeof *as_pids);
  long mine = (long)getpid();
  bool ok = ranks && pids && as_pids;
  /* Every rank of the host takes part whatever its allocations gave: no one is left waiting. */
  int status = ok ? 0 : 1, worst = 1;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, local);
  if (worst == 0 && MPI_Allgather(&d->rank, 1, MPI_INT, ranks, 1, MPI_INT, local) == MPI_SUCCESS &&
      MPI_Allgather(&mine, 1, MPI_LONG, pids, 1, MPI_LONG, local) == MPI_SUCCESS) {
    for (int k = 0; k < n; k++) as_pids[k] = (pid_t)pids[k];
    watch_rank = d->rank;
    watch_count = n;
    watch_ranks = ranks;
    watch_pids = as_pids;
    watch_reported = 0;
    watch_stop = false;
    ranks = NULL;
    as_pids = NULL;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    /* Without the thread the handler still names the dead rank when the launcher's SIGTERM comes. */
    watch_thread_running = pthread_create(&watch_thread, NULL, watch_main, NULL) == 0;
  }
  free(ranks);
  free(pids);
  free(as_pids);
}

/* Ends the watch of this rank (ir_dist_finalize then waits for every rank to have ended its own:
 * a rank leaving normally while another still watches it would be named dead). */
static void stop_watching(void) {
  if (watch_thread_running) {
    pthread_mutex_lock(&watch_lock);
    watch_stop = true;
    pthread_cond_signal(&watch_wake);
    pthread_mutex_unlock(&watch_lock);
    pthread_join(watch_thread, NULL);
    watch_thread_running = false;
  }
  if (!watch_count) return;
  signal(SIGTERM, SIG_DFL);
  watch_count = 0;
  free(watch_ranks);
  free(watch_pids);
  watch_ranks = NULL;
  watch_pids = NULL;
}

static ir_status mpi_fail(char err[IR_ERR_LEN], int rc, const char *call) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "code %d", rc);
  snprintf(err, IR_ERR_LEN, "MPI error in %s: %s", call, text);
  return IR_ERR_RUNTIME;
}

ir_status ir_dist_init(int *argc, char ***argv, ir_dist **out, char err[IR_ERR_LEN]) {
  *out = NULL;
  ir_dist *d = calloc(1, sizeof *d);
  if (!d) {
    snprintf(err, IR_ERR_LEN, "out of host memory starting MPI");
    return IR_ERR_RUNTIME;
  }
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) {
      free(d);
      return mpi_fail(err, rc, "MPI_Init");
    }
    d->initialized_here = true;
  }
  /* Errors come back as codes (turned into messages), instead of aborting the job. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &d->size);
  /* The compositing collectives' counts, here where a failure ends the run before any rank waits
   * in one of them. */
  d->counts = malloc(4 * (size_t)d->size * sizeof *d->counts);
  if (!d->counts) {
    snprintf(err, IR_ERR_LEN, "rank %d: out of host memory starting MPI", d->rank);
    if (d->initialized_here) MPI_Abort(MPI_COMM_WORLD, 1);
    free(d);
    return IR_ERR_RUNTIME;
  }
  /* The host's ranks: a rank picks its GPU by its place among them (rank 5 of a job on two hosts
   * of four GPUs is the second on its host), and they watch each other's processes. */
  d->local_rank = 0;
  d->local_size = 1;
  MPI_Comm local;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &local) == MPI_SUCCESS) {
    MPI_Comm_rank(local, &d->local_rank);
    MPI_Comm_size(local, &d->local_size);
    if (d->local_size > 1) watch_peers(d, local);
    MPI_Comm_free(&local);
  }
  *out = d;
  return IR_OK;
}

void ir_dist_finalize(ir_dist *d) {
  if (!d) return;
  /* No rank leaves before every rank has stopped watching the others (stop_watching). */
  stop_watching();
  if (!d->broken) MPI_Barrier(MPI_COMM_WORLD);
  /* A broken run cannot finalize with a lost rank: the launcher ends every rank (status 1). So
   * also where the caller started MPI: its other ranks would wait for this one in a collective
   * that never comes. */
  if (d->broken) MPI_Abort(MPI_COMM_WORLD, 1);
  if (d->initialized_here) MPI_Finalize();
  free(d->strips);
  free(d->blended);
  free(d->counts);
  free(d->windows_in);
  free(d);
}

int ir_dist_rank(const ir_dist *d) { return d->rank; }
int ir_dist_size(const ir_dist *d) { return d->size; }

void ir_dist_mark_broken(ir_dist *d) { d->broken = true; }

int ir_dist_agree(ir_dist *d, int status) {
  if (d->broken) return status > IR_ERR_RUNTIME ? status : IR_ERR_RUNTIME;
  int worst = status;
  if (MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
    return status > IR_ERR_RUNTIME ? status : IR_ERR_RUNTIME;
  return worst;
}

int ir_dist_agree_times(ir_dist *d, int status, double mine, double *times, double *scratch) {
  if (d->broken) return status > IR_ERR_RUNTIME ? status : IR_ERR_RUNTIME;
  double pair[2] = {(double)status, mine};
  if (MPI_Allgather(pair, 2, MPI_DOUBLE, scratch, 2, MPI_DOUBLE, MPI_COMM_WORLD) != MPI_SUCCESS)
    return status > IR_ERR_RUNTIME ? status : IR_ERR_RUNTIME;
  int worst = status;
  for (int r = 0; r < d->size; r++) {
    worst = (int)scratch[2 * r] > worst ? (int)scratch[2 * r] : worst;
    times[r] = scratch[2 * r + 1];
  }
  return worst;
}

ir_status ir_dist_broadcast(ir_dist *d, void *buf, size_t bytes, char err[IR_ERR_LEN]) {
  (void)d;
  int rc = MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? IR_OK : mpi_fail(err, rc, "MPI_Bcast");
}

int ir_dist_local_size(const ir_dist *d) { return d->local_size; }
int ir_dist_local_rank(const ir_dist *d) { return d->local_rank; }

ir_status ir_dist_max_to_root(ir_dist *d, const double *in, double *out, int n, char err[IR_ERR_LEN]) {
  int rc = MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? IR_OK : mpi_fail(err, rc, "MPI_Reduce (timings)");
}

ir_status ir_dist_share_parts(ir_dist *d, void *buf, const size_t *at, char err[IR_ERR_LEN]) {
  const size_t piece = (size_t)256 << 20;
  for (int r = 0; r < d->size; r++)
    for (size_t from = at[r]; from < at[r + 1]; from += piece) {
      size_t n = at[r + 1] - from < piece ? at[r + 1] - from : piece;
      int rc = MPI_Bcast((char *)buf + from, (int)n, MPI_BYTE, r, MPI_COMM_WORLD);
      if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Bcast (the volume's parts)");
    }
  return IR_OK;
}

ir_status ir_dist_sum_all(ir_dist *d, const double *in, double *out, int n, char err[IR_ERR_LEN]) {
  (void)d;
  int rc = MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? IR_OK : mpi_fail(err, rc, "MPI_Allreduce (sums)");
}

ir_status ir_dist_max_all(ir_dist *d, const double *in, double *out, int n, char err[IR_ERR_LEN]) {
  (void)d;
  int rc = MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? IR_OK : mpi_fail(err, rc, "MPI_Allreduce (colour range)");
}

ir_status ir_dist_composite_windows(ir_dist *d, const uint64_t *local, const int (*windows)[4], int width,
                                    uint64_t *frame, char err[IR_ERR_LEN]) {
  int P = d->size;
  /* Every rank computes every window, so the counts need no exchange. */
  int *recv_n = d->counts, *recv_at = d->counts + P;
  size_t total = 0;
  for (int r = 0; r < P; r++) {
    size_t n = r == 0 ? 0 : ir_dist_window_count(windows[r]);
    if (total + n > (size_t)INT_MAX) {
      snprintf(err, IR_ERR_LEN, "rank %d: the windows of a %d-pixel-wide frame exceed the %d pixels MPI_Gatherv takes",
               d->rank, width, INT_MAX);
      return IR_ERR_INPUT;
    }
    recv_n[r] = (int)n;
    recv_at[r] = (int)total;
    total += n;
  }
  if (total > d->windows_capacity) {
    /* Rank 0 grows its buffer and says whether it could: every rank knows when that happens, so
     * the steady state costs no message. */
    int ok = 1;
    if (d->rank == 0) {
      free(d->windows_in);
      d->windows_in = malloc(total * sizeof *d->windows_in);
      ok = d->windows_in != NULL;
    }
    int rc = MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Bcast (compositing by windows)");
    if (!ok) {
      d->windows_capacity = 0;
      if (d->rank == 0)
        snprintf(err, IR_ERR_LEN, "rank 0: out of host memory for %zu pixels of the ranks' windows", total);
      else
        snprintf(err, IR_ERR_LEN, "rank %d: rank 0 could not composite (its message is above)", d->rank);
      return IR_ERR_RUNTIME;
    }
    d->windows_capacity = total;
  }
  int rc = MPI_Gatherv(local, d->rank == 0 ? 0 : recv_n[d->rank], MPI_UINT64_T, d->windows_in, recv_n, recv_at,
                       MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Gatherv (compositing by windows)");
  if (d->rank == 0)
    for (int r = 1; r < P; r++) ir_dist_min_window(d->windows_in + recv_at[r], width, windows[r], frame);
  return IR_OK;
}

ir_status ir_dist_composite_over(ir_dist *d, const uint64_t *local, const int *order, uint64_t *result,
                                 size_t pixels, char err[IR_ERR_LEN]) {
  int P = d->size;
  if (pixels > (size_t)INT_MAX) {
    snprintf(err, IR_ERR_LEN, "rank %d: %zu-pixel frames are above the %d pixels translucent compositing takes",
             d->rank, pixels, INT_MAX);
    return IR_ERR_INPUT;
  }
  size_t mine_lo = (size_t)d->rank * pixels / (size_t)P, mine = ((size_t)d->rank + 1) * pixels / (size_t)P - mine_lo;
  size_t need = (pixels / (size_t)P + 1) * (size_t)P;
  if (need > d->strip_capacity) {
    /* Every rank grows at the same frame (the same sizes), and they agree on whether all could
     * before the exchange: a rank that returned alone would leave the others in MPI_Alltoallv. */
    free(d->strips);
    free(d->blended);
    d->strips = malloc(need * sizeof *d->strips);
    d->blended = malloc((pixels / (size_t)P + 1) * sizeof *d->blended);
    int mine_failed = !d->strips || !d->blended, any_failed = mine_failed;
    int rc = MPI_Allreduce(&mine_failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) any_failed = 1;
    if (any_failed) {
      free(d->strips);
      free(d->blended);
      d->strips = NULL, d->blended = NULL, d->strip_capacity = 0;
      if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Allreduce (translucent compositing)");
      if (mine_failed)
        snprintf(err, IR_ERR_LEN, "rank %d: out of host memory compositing %zu-pixel frames", d->rank, pixels);
      else
        snprintf(err, IR_ERR_LEN, "rank %d: another rank ran out of host memory compositing (its message is above)",
                 d->rank);
      return IR_ERR_RUNTIME;
    }
    d->strip_capacity = need;
  }
  int *send_n = d->counts, *send_at = d->counts + P, *recv_n = d->counts + 2 * P, *recv_at = d->counts + 3 * P;
  for (int j = 0; j < P; j++) {
    size_t lo = (size_t)j * pixels / (size_t)P, hi = ((size_t)j + 1) * pixels / (size_t)P;
    send_n[j] = (int)(hi - lo);
    send_at[j] = (int)lo;
    recv_n[j] = (int)mine;
    recv_at[j] = (int)((size_t)j * mine);
  }
  int rc = MPI_Alltoallv(local, send_n, send_at, MPI_UINT64_T, d->strips, recv_n, recv_at, MPI_UINT64_T,
                         MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Alltoallv (translucent compositing)");
  ir_dist_over_words(d->strips, mine, order, P, mine, d->blended);
  /* Rank 0 gathers the blended strips where they lie in the image (send_n/at are the strips). */
  rc = MPI_Gatherv(d->blended, (int)mine, MPI_UINT64_T, result, send_n, send_at, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? IR_OK : mpi_fail(err, rc, "MPI_Gatherv (translucent compositing)");
}
