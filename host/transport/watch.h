/* Watching a server directory for changes to its *.lua files, and the
 * reload that follows. inotify watches each folder of the tree (libuv has no
 * recursive watch on Linux); a poll every second backs it up for file
 * systems without events. Events only arm a short debounce timer; when it
 * fires, a fingerprint of every *.lua file (path, size, mtime) says whether
 * anything changed, so an editor's save burst gives one reload and a touch
 * that changes nothing gives none. One loop, one thread. */
#ifndef SN_TRANSPORT_WATCH_H
#define SN_TRANSPORT_WATCH_H

#include <uv.h>

#include "proto/engine.h"

typedef struct sn_watch sn_watch; /* opaque */

typedef void sn_watch_cb(void *ud);

/* Starts watching `dir` (borrows) on `loop`; `cb(ud)` runs after a change
 * has settled. debounce_ms 0 = the default (20 ms). Returns 0 or a
 * negative libuv error. */
int sn_watch_start(uv_loop_t *loop, const char *dir, unsigned debounce_ms, sn_watch_cb *cb,
                   void *ud, sn_watch **out);

/* Stops and frees (after its handles close on the loop). NULL is fine. */
void sn_watch_stop(sn_watch *w);

/* Reloads the engine's directory, timed and logged as one line: what
 * changed and how long it took, or why the reload failed and that the
 * previous catalog keeps serving. 0 when the new catalog is live. */
int sn_watch_reload(sn_engine *e, sn_reload_report *report);

#endif
