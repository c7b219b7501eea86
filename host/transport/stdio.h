/* The stdio transport: newline-delimited JSON-RPC on a pair of file
 * descriptors, on a libuv loop. One engine session for the process. */
#ifndef SN_TRANSPORT_STDIO_H
#define SN_TRANSPORT_STDIO_H

#include <stddef.h>

#include "proto/engine.h"

typedef struct sn_stdio_options {
    size_t max_line; /* bytes per message; 0 = default (4 MiB) */
    int watch;       /* reload when the directory's *.lua files change */
} sn_stdio_options;

/* Serves `e` (borrows) reading in_fd and writing out_fd until end of input
 * or SIGTERM/SIGINT. SIGHUP reloads the directory (and so does a change to
 * it with opts->watch); the session hears list_changed. Returns 0 on a clean end, non-zero on an I/O failure. */
int sn_stdio_serve(sn_engine *e, int in_fd, int out_fd, const sn_stdio_options *opts);

#endif
