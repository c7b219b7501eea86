/* The lua/ sources compiled into the binary (see embed.cmake). Read-only data. */
#ifndef SN_LUA_EMBEDDED_H
#define SN_LUA_EMBEDDED_H

#include <stddef.h>

typedef struct sn_embedded_lua {
    const char *module; /* "snodo.testing" for lua/snodo/testing.lua */
    const char *source;
    size_t len;
} sn_embedded_lua;

/* Terminated by an entry whose module is NULL. */
extern const sn_embedded_lua sn_embedded_lua_files[];

#endif
