/* Parallel for over contiguous ranges, one pthread per core. */
#include "data/parallel.h"

#include <pthread.h>
#include <unistd.h>

typedef struct range_job {
  ir_range_fn fn;
  void *ctx;
  size_t begin, end;
  int worker;
} range_job;

static void *run_range(void *arg) {
  range_job *job = arg;
  job->fn(job->ctx, job->begin, job->end, job->worker);
  return NULL;
}

int ir_parallel_workers(size_t n, size_t grain) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1) cores = 1;
  if (cores > IR_MAX_THREADS) cores = IR_MAX_THREADS;
  if (grain == 0) grain = 1;
  size_t by_size = n / grain;
  if (by_size < 1) by_size = 1;
  return (int)(by_size < (size_t)cores ? by_size : (size_t)cores);
}

int ir_parallel_for(size_t n, size_t grain, ir_range_fn fn, void *ctx) {
  int workers = ir_parallel_workers(n, grain);
  if (workers <= 1) {
    fn(ctx, 0, n, 0);
    return 1;
  }
  range_job jobs[IR_MAX_THREADS];
  pthread_t threads[IR_MAX_THREADS];
  int started[IR_MAX_THREADS] = {0};
  for (int w = 0; w < workers; w++) {
    jobs[w] = (range_job){fn, ctx, n * (size_t)w / (size_t)workers,
                          n * (size_t)(w + 1) / (size_t)workers, w};
    /* Worker 0 runs on the calling thread; the others are started here. */
    if (w > 0) started[w] = pthread_create(&threads[w], NULL, run_range, &jobs[w]) == 0;
  }
  run_range(&jobs[0]);
  for (int w = 1; w < workers; w++) {
    if (started[w])
      pthread_join(threads[w], NULL);
    else
      run_range(&jobs[w]); /* no thread to be had: do its share here */
  }
  return workers;
}
