/* The transcripts in tests/wire/, replayed over stdio (tests/wire/test_wire.c)
 * and through the engine in-process (tests/proto/test_engine.c). */
#ifndef SN_TESTS_WIRE_TRANSCRIPTS_H
#define SN_TESTS_WIRE_TRANSCRIPTS_H

#include <criterion/parameterized.h>
#include <stdio.h>

static const char *const sn_transcripts[] = {
    "initialize_2025_06_18.txt",
    "initialize_2025_11_25.txt",
    "initialize_counter_offer.txt",
    "stateless_discover.txt",
    "stateless_tools.txt",
    "legacy_tools.txt",
    "jsonrpc_errors.txt",
    "handler_failures.txt",
    "stdio_framing.txt",
    "resources_routes.txt",
    "resources_prompts.txt",
    "budgets.txt",
    "budgets_session.txt",
    "subscriptions.txt",
    "waits.txt",
    "listen.txt",
    "arguments.txt",
};

/* Parameters are copied into the test's process by value (Criterion may
 * re-execute the binary), so each carries its name, not a pointer. */
struct transcript_name {
    char name[64];
};

static inline struct criterion_test_params transcript_params(void)
{
    static struct transcript_name names[sizeof sn_transcripts / sizeof sn_transcripts[0]];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        snprintf(names[i].name, sizeof names[i].name, "%s", sn_transcripts[i]);
    return cr_make_param_array(struct transcript_name, names, sizeof names / sizeof names[0]);
}

#endif
