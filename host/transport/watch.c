#include "transport/watch.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/log.h"

#define POLL_MS 1000
#define MAX_DIRS 256

struct sn_watch {
    uv_loop_t *loop;
    char *dir;
    sn_watch_cb *cb;
    void *ud;
    unsigned debounce_ms;
    uv_timer_t debounce, poll;
    uv_fs_event_t *events[MAX_DIRS];
    size_t nevents;
    uint64_t fingerprint;
    int closing; /* handles still to close before the free */
};

/* ---- the fingerprint of every *.lua file below dir ---- */

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ULL; /* FNV-1a */
    return h;
}

/* Sums per-file hashes, so the order readdir returns does not matter. */
static uint64_t scan(const char *path, int depth, char dirs[][4096], size_t *ndirs)
{
    DIR *d = opendir(path);
    if (d == NULL)
        return 0;
    if (dirs && *ndirs < MAX_DIRS)
        snprintf(dirs[(*ndirs)++], 4096, "%s", path);
    uint64_t sum = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        struct stat st;
        if (stat(full, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth < 16)
                sum += scan(full, depth + 1, dirs, ndirs);
            continue;
        }
        size_t n = strlen(e->d_name);
        if (!S_ISREG(st.st_mode) || n < 5 || strcmp(e->d_name + n - 4, ".lua") != 0)
            continue;
        uint64_t h = mix(1469598103934665603ULL, full, strlen(full));
        h = mix(h, &st.st_size, sizeof st.st_size);
        h = mix(h, &st.st_mtim.tv_sec, sizeof st.st_mtim.tv_sec);
        h = mix(h, &st.st_mtim.tv_nsec, sizeof st.st_mtim.tv_nsec);
        h = mix(h, &st.st_ino, sizeof st.st_ino);
        sum += h;
    }
    closedir(d);
    return sum;
}

/* ---- inotify on every folder ---- */

static void on_event(uv_fs_event_t *h, const char *name, int events, int status);

static void free_event(uv_handle_t *h)
{
    sn_watch *w = h->data;
    sn_free(h);
    if (w && w->closing && --w->closing == 0) {
        sn_free(w->dir);
        sn_free(w);
    }
}

static void close_events(sn_watch *w)
{
    for (size_t i = 0; i < w->nevents; i++) {
        w->events[i]->data = NULL; /* not counted toward the watcher's close */
        uv_close((uv_handle_t *)w->events[i], free_event);
    }
    w->nevents = 0;
}

/* (Re)watches every folder of the tree: folders come and go with edits. */
static uint64_t rewatch(sn_watch *w)
{
    static char dirs[MAX_DIRS][4096]; /* one loop thread: scratch, not state */
    size_t ndirs = 0;
    uint64_t fp = scan(w->dir, 0, dirs, &ndirs);
    close_events(w);
    for (size_t i = 0; i < ndirs; i++) {
        uv_fs_event_t *h = sn_malloc(sizeof *h);
        if (h == NULL || uv_fs_event_init(w->loop, h) != 0) {
            sn_free(h);
            break;
        }
        h->data = w;
        if (uv_fs_event_start(h, on_event, dirs[i], 0) != 0) {
            h->data = NULL;
            uv_close((uv_handle_t *)h, free_event);
            continue;
        }
        w->events[w->nevents++] = h;
    }
    return fp;
}

static void settle(uv_timer_t *t)
{
    sn_watch *w = t->data;
    uint64_t fp = rewatch(w);
    if (fp == w->fingerprint)
        return; /* a touch, a swap file, a save that changed nothing */
    w->fingerprint = fp;
    w->cb(w->ud);
}

static void on_event(uv_fs_event_t *h, const char *name, int events, int status)
{
    (void)name;
    (void)events;
    (void)status;
    sn_watch *w = h->data;
    if (w)
        uv_timer_start(&w->debounce, settle, w->debounce_ms, 0); /* restarts the countdown */
}

static void on_poll(uv_timer_t *t)
{
    sn_watch *w = t->data;
    if (scan(w->dir, 0, NULL, NULL) != w->fingerprint)
        uv_timer_start(&w->debounce, settle, w->debounce_ms, 0);
}

int sn_watch_start(uv_loop_t *loop, const char *dir, unsigned debounce_ms, sn_watch_cb *cb,
                   void *ud, sn_watch **out)
{
    sn_watch *w = sn_calloc(1, sizeof *w);
    if (w == NULL || (w->dir = sn_strndup(dir, strlen(dir))) == NULL) {
        sn_free(w);
        return UV_ENOMEM;
    }
    w->loop = loop;
    w->cb = cb;
    w->ud = ud;
    w->debounce_ms = debounce_ms ? debounce_ms : 20;
    uv_timer_init(loop, &w->debounce);
    uv_timer_init(loop, &w->poll);
    w->debounce.data = w->poll.data = w;
    w->fingerprint = rewatch(w);
    uv_timer_start(&w->poll, on_poll, POLL_MS, POLL_MS);
    *out = w;
    return 0;
}

static void timer_closed(uv_handle_t *h)
{
    sn_watch *w = h->data;
    if (--w->closing == 0) {
        sn_free(w->dir);
        sn_free(w);
    }
}

void sn_watch_stop(sn_watch *w)
{
    if (w == NULL)
        return;
    close_events(w);
    w->closing = 2;
    uv_close((uv_handle_t *)&w->debounce, timer_closed);
    uv_close((uv_handle_t *)&w->poll, timer_closed);
}

int sn_watch_reload(sn_engine *e, sn_reload_report *report)
{
    uint64_t start = uv_hrtime();
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_engine_reload(e, report, &diag);
    double ms = (double)(uv_hrtime() - start) / 1e6;
    if (err) {
        sn_log(SN_LOG_ERROR, "reload failed after %.1f ms; still serving the previous catalog: %s",
               ms, diag.message[0] ? diag.message : sn_err_str(err));
        return -1;
    }
    sn_log(SN_LOG_INFO, "reloaded in %.1f ms: %s", ms, report->summary);
    return 0;
}
