/* core/jval: the read-only views the validator walks. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/jval.h"
#include "support.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
    cr_assert_not_null(j, "bad test JSON %s: %s", text, e.text);
    return j;
}

Test(jval, views_every_type, .init = mem_begin, .fini = mem_end)
{
    json_t *doc = parse("{\"s\":\"h\\u00e9llo\",\"i\":-3,\"r\":2.5,\"t\":true,\"f\":false,"
                        "\"n\":null,\"a\":[1,[2]],\"a longer key\":{},\"w\":-2.0}");
    sn_jarena arena;
    sn_jarena_init(&arena, NULL, 0);
    const sn_jval *v;
    cr_assert_eq(sn_jval_build(&arena, doc, &v), SN_OK);
    cr_assert_eq(v->type, SN_JV_OBJECT);
    cr_assert_eq(v->n, 9);
    static const char *const keys[] = {"s", "i", "r", "t", "f", "n", "a", "a longer key", "w"};
    for (uint32_t i = 0; i < v->n; i++) {
        const sn_jmember *m = &v->u.m[i];
        size_t len = strlen(keys[i]);
        cr_assert_eq(m->len, len);
        cr_assert_eq(memcmp(m->key, keys[i], len), 0);
        cr_assert_eq(m->hash, (uint32_t)sn_jval_hash_key(keys[i], len));
        cr_assert_eq(m->head, sn_jval_key_head(keys[i], len));
    }
    const sn_jval *s = sn_jval_get(v, "s", 1);
    cr_assert_eq(s->type, SN_JV_STRING);
    cr_assert_eq(s->n, 6);
    cr_assert_eq(s->u.s, json_string_value(json_object_get(doc, "s"))); /* borrowed */
    cr_assert_eq(sn_jval_get(v, "i", 1)->type, SN_JV_INTEGER);
    cr_assert_eq(sn_jval_get(v, "i", 1)->u.i, -3);
    cr_assert_eq(sn_jval_get(v, "r", 1)->type, SN_JV_NUMBER);
    cr_assert(sn_jval_get(v, "r", 1)->real);
    cr_assert_eq(sn_jval_get(v, "r", 1)->u.d, 2.5);
    cr_assert_not(sn_jval_get(v, "i", 1)->real);
    const sn_jval *w = sn_jval_get(v, "w", 1); /* an integer to `type`, a double in store */
    cr_assert_eq(w->type, SN_JV_INTEGER);
    cr_assert(w->real);
    cr_assert_eq(w->u.d, -2.0);
    cr_assert(sn_jval_get(v, "t", 1)->truth);
    cr_assert_eq(sn_jval_get(v, "f", 1)->type, SN_JV_BOOL);
    cr_assert_not(sn_jval_get(v, "f", 1)->truth);
    cr_assert_eq(sn_jval_get(v, "n", 1)->type, SN_JV_NULL);
    const sn_jval *a = sn_jval_get(v, "a", 1);
    cr_assert_eq(a->type, SN_JV_ARRAY);
    cr_assert_eq(a->n, 2);
    cr_assert_eq(a->u.a[1].u.a[0].u.i, 2);
    cr_assert_eq(sn_jval_get(v, "a longer key", 12)->n, 0);
    cr_assert_null(sn_jval_get(v, "x", 1));
    cr_assert_null(sn_jval_get(v, "a longer kex", 12));
    sn_jarena_free(&arena);
    json_decref(doc);
}

Test(jval, reuses_its_memory_after_a_reset, .init = mem_begin, .fini = mem_end)
{
    json_t *doc = json_array();
    for (int i = 0; i < 2000; i++) /* past the first chunk */
        json_array_append_new(doc, json_pack("{s:i, s:[i]}", "k", i, "l", i));
    sn_jarena arena;
    sn_jarena_init(&arena, NULL, 0);
    const sn_jval *v;
    cr_assert_eq(sn_jval_build(&arena, doc, &v), SN_OK);
    size_t live = mem_live();
    for (int round = 0; round < 3; round++) {
        sn_jarena_reset(&arena);
        mem_fail_at(1);
        cr_assert_eq(sn_jval_build(&arena, doc, &v), SN_OK, "round %d", round);
        mem_fail_at(0);
        cr_assert_eq(mem_live(), live);
        cr_assert_eq(v->n, 2000);
        cr_assert_eq(v->u.a[1999].u.m[1].v.u.a[0].u.i, 1999);
    }
    sn_jarena_free(&arena);
    json_decref(doc);
}

Test(jval, starts_in_the_callers_buffer, .init = mem_begin, .fini = mem_end)
{
    json_t *doc = parse("{\"a\":[1,2,3],\"b\":{\"c\":null}}");
    _Alignas(16) char buf[1024];
    sn_jarena arena;
    sn_jarena_init(&arena, buf, sizeof buf);
    const sn_jval *v;
    mem_fail_at(1);
    cr_assert_eq(sn_jval_build(&arena, doc, &v), SN_OK);
    mem_fail_at(0);
    cr_assert((const char *)v >= buf && (const char *)v < buf + sizeof buf);
    sn_jarena_free(&arena);
    json_decref(doc);
}

Test(jval, fails_cleanly_out_of_memory, .init = mem_begin, .fini = mem_end)
{
    json_t *doc = parse("[[1],[2]]");
    sn_jarena arena;
    sn_jarena_init(&arena, NULL, 0);
    const sn_jval *v = NULL;
    size_t live = mem_live();
    mem_fail_at(1);
    cr_assert_eq(sn_jval_build(&arena, doc, &v), SN_ENOMEM);
    mem_fail_at(0);
    cr_assert_null(v);
    sn_jarena_free(&arena);
    cr_assert_eq(mem_live(), live);
    json_decref(doc);
}

Test(jval, stops_at_the_nesting_bound, .init = mem_begin, .fini = mem_end)
{
    json_t *deep = json_array();
    for (int i = 0; i < SN_JVAL_MAX_DEPTH + 10; i++) {
        json_t *outer = json_array();
        json_array_append_new(outer, deep);
        deep = outer;
    }
    sn_jarena arena;
    sn_jarena_init(&arena, NULL, 0);
    const sn_jval *v;
    cr_assert_eq(sn_jval_build(&arena, deep, &v), SN_ELIMIT);
    sn_jarena_free(&arena);
    json_decref(deep);
}
