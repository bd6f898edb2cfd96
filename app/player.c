/* Playing a time series: a thread reads the steps after the one drawn into the renderer's other
 * slots (render.h), so that a step is on the GPU, with its ranges, before frames need it. The
 * reads stream each step to the GPU as it comes off the disk (ir_series_read with the slot's
 * sink); the copies and range kernels run on the slots' own streams, beside the frames.
 *
 * The caller (the frame loop, on one thread) aims the player at the step it will show next and
 * the direction of play; the thread keeps the slots filled with that step and the ones after it
 * (wrapping around for a looping window, not for a headless run), reusing each slot's host
 * memory. A step that fails to read stays failed in its slot, with its message, until the
 * window of wanted steps moves past it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/app.h"

#define NO_STEP ((size_t)-1)
/* Three slots: one drawn, one being read, one read ahead (two at the least). */
#define PLAYER_SLOTS 3

typedef enum slot_state { SLOT_EMPTY = 0, SLOT_LOADING, SLOT_READY, SLOT_FAILED } slot_state;

typedef struct player_slot {
  size_t step;
  slot_state state;
  ir_volume host; /* the step's voxels on the host (the CPU renderer draws them) */
  app_step_info info;
} player_slot;

struct app_player {
  ir_series *series;
  ir_renderer *renderer;
  ir_volume_desc io; /* reading options: threads, mode */
  int slots;
  player_slot slot[IR_MAX_SLOTS];
  int in_use;          /* the slot frames draw */
  size_t aim;          /* the step wanted next */
  int direction;       /* +1 or -1 */
  bool loop;           /* wrap around the ends (the window) */
  bool quit, started;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t changed;
};

static double ms_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + 1e-6 * (double)t.tv_nsec;
}

int app_player_create(ir_series *series, ir_renderer *r, const ir_volume_desc *io, app_player **out) {
  app_player *p = calloc(1, sizeof *p);
  if (!p) {
    fprintf(stderr, "inkray: out of memory for the time series player\n");
    return 1;
  }
  p->series = series;
  p->renderer = r;
  p->io = *io;
  p->io.on_progress = NULL; /* the first step's load reports; the others play */
  p->io.show_progress = false;
  p->slots = 1;
  p->in_use = -1;
  p->direction = 1;
  for (int k = 0; k < IR_MAX_SLOTS; k++) p->slot[k].step = NO_STEP;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->changed, NULL);
  *out = p;
  return 0;
}

ir_volume *app_player_slot_volume(app_player *p, int slot) { return &p->slot[slot].host; }

void app_player_adopt_step0(app_player *p) {
  player_slot *s = &p->slot[0];
  s->step = 0;
  s->state = SLOT_READY;
  s->info = (app_step_info){.step = 0, .status = IR_OK, .bytes = s->host.bytes};
  p->in_use = 0;
  p->aim = 0;
}

/* The steps wanted: the aimed one and the slots - 1 after it in the direction of play. */
static size_t wanted(const app_player *p, int k) {
  size_t n = ir_series_length(p->series);
  long step = (long)p->aim + (long)k * p->direction;
  if (p->loop) return (size_t)(((step % (long)n) + (long)n) % (long)n);
  return step < 0 || step >= (long)n ? NO_STEP : (size_t)step;
}

static bool is_wanted(const app_player *p, size_t step) {
  for (int k = 0; k < p->slots; k++)
    if (wanted(p, k) == step) return true;
  return false;
}

static int slot_of(const app_player *p, size_t step) {
  for (int k = 0; k < p->slots; k++)
    if (p->slot[k].step == step && p->slot[k].state != SLOT_EMPTY) return k;
  return -1;
}

/* Under the lock: the next step to read and the slot to read it into, or false. */
static bool next_job(const app_player *p, size_t *step, int *slot) {
  for (int k = 0; k < p->slots; k++) {
    size_t want = wanted(p, k);
    if (want == NO_STEP || slot_of(p, want) >= 0) continue;
    for (int j = 0; j < p->slots; j++) {
      const player_slot *s = &p->slot[j];
      if (j == p->in_use || s->state == SLOT_LOADING) continue;
      if (s->state != SLOT_EMPTY && is_wanted(p, s->step)) continue;
      *step = want;
      *slot = j;
      return true;
    }
    return false;
  }
  return false;
}

static void read_step(app_player *p, size_t step, int slot) {
  player_slot *s = &p->slot[slot];
  app_step_info info = {.step = step, .status = IR_OK};
  double t0 = ms_now();
  ir_volume_sink sink;
  ir_status st = ir_renderer_slot_begin(p->renderer, slot, &sink, info.err);
  ir_volume_desc d = p->io;
  d.sink = &sink;
  d.recycle = &s->host; /* the slot's memory, refilled */
  ir_volume v;
  memset(&v, 0, sizeof v);
  if (st == IR_OK) st = ir_series_read(p->series, step, &d, &v, info.err);
  info.load_ms = ms_now() - t0;
  info.bytes = v.bytes;
  info.streamed = v.streamed;
  s->host = v;
  if (st == IR_OK) st = ir_renderer_slot_end(p->renderer, slot, &s->host, info.err);
  info.status = st;
  pthread_mutex_lock(&p->lock);
  s->info = info;
  s->state = st == IR_OK ? SLOT_READY : SLOT_FAILED;
  pthread_cond_broadcast(&p->changed);
  pthread_mutex_unlock(&p->lock);
}

static void *player_thread(void *arg) {
  app_player *p = arg;
  pthread_mutex_lock(&p->lock);
  while (!p->quit) {
    size_t step;
    int slot;
    if (!next_job(p, &step, &slot)) {
      pthread_cond_wait(&p->changed, &p->lock);
      continue;
    }
    p->slot[slot].step = step;
    p->slot[slot].state = SLOT_LOADING;
    pthread_mutex_unlock(&p->lock);
    read_step(p, step, slot);
    pthread_mutex_lock(&p->lock);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

int app_player_start(app_player *p) {
  /* As many slots as the device has room for, up to three; two at least: one drawn while the
   * next is read. */
  char err[IR_ERR_LEN] = "";
  int slots = PLAYER_SLOTS;
  while (slots > 2 && ir_renderer_set_slots(p->renderer, slots, err) != IR_OK) slots--;
  if (slots == 2 && ir_renderer_set_slots(p->renderer, 2, err) != IR_OK) {
    fprintf(stderr, "inkray: a time series needs two of its volumes on the device at once: %s\n", err);
    return 1;
  }
  if (slots < PLAYER_SLOTS)
    fprintf(stderr, "inkray: note: room for %d volumes on the device: steps are read one ahead\n", slots);
  p->slots = slots;
  if (pthread_create(&p->thread, NULL, player_thread, p) != 0) {
    fprintf(stderr, "inkray: cannot start the thread that reads the time series ahead\n");
    return 1;
  }
  p->started = true;
  return 0;
}

void app_player_aim(app_player *p, size_t step, int direction, bool loop) {
  pthread_mutex_lock(&p->lock);
  p->aim = step;
  p->direction = direction < 0 ? -1 : 1;
  p->loop = loop;
  pthread_cond_broadcast(&p->changed);
  pthread_mutex_unlock(&p->lock);
}

int app_player_show(app_player *p, size_t step, bool wait, app_step_info *info) {
  pthread_mutex_lock(&p->lock);
  if (slot_of(p, step) < 0 || !is_wanted(p, step)) {
    /* Not among the steps being read: aim there (same direction). */
    p->aim = step;
    pthread_cond_broadcast(&p->changed);
  }
  int slot;
  for (;;) {
    slot = slot_of(p, step);
    bool done = slot >= 0 && (p->slot[slot].state == SLOT_READY || p->slot[slot].state == SLOT_FAILED);
    if (done || !wait) break;
    pthread_cond_wait(&p->changed, &p->lock);
  }
  if (slot < 0 || p->slot[slot].state == SLOT_LOADING) {
    pthread_mutex_unlock(&p->lock);
    return 1;
  }
  *info = p->slot[slot].info;
  if (p->slot[slot].state == SLOT_FAILED) {
    pthread_mutex_unlock(&p->lock);
    return -1;
  }
  pthread_mutex_unlock(&p->lock);
  /* The renderer's slot switch happens on the frames' thread; the reading thread never touches
   * the slot in use. */
  ir_status st = ir_renderer_use_slot(p->renderer, slot, info->err);
  if (st != IR_OK) {
    info->status = st;
    return -1;
  }
  pthread_mutex_lock(&p->lock);
  p->in_use = slot;
  p->aim = step;
  pthread_cond_broadcast(&p->changed);
  pthread_mutex_unlock(&p->lock);
  info->slot = slot;
  return 0;
}

const ir_volume *app_player_volume(const app_player *p) { return p->in_use >= 0 ? &p->slot[p->in_use].host : NULL; }

void app_player_destroy(app_player *p) {
  if (!p) return;
  if (p->started) {
    pthread_mutex_lock(&p->lock);
    p->quit = true;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
  }
  for (int k = 0; k < IR_MAX_SLOTS; k++) ir_volume_free(&p->slot[k].host);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->changed);
  free(p);
}
