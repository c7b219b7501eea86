/* Helpers shared by the Criterion tests. */
#ifndef SN_TESTS_SUPPORT_H
#define SN_TESTS_SUPPORT_H

#include <stddef.h>

/* .init/.fini pair: count live blocks through sn_alloc_set (and Jansson);
 * mem_end asserts that every block was freed. */
void mem_begin(void);
void mem_end(void);
size_t mem_live(void);

/* Makes allocation number `n` (1-based, counted from now) fail; 0 disables. */
void mem_fail_at(size_t n);

/* Reads a whole file; returns owned memory (free()) or NULL. */
char *read_file(const char *path, size_t *len);

#endif
