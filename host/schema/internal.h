/* Shared between the files of host/schema/ only; nothing outside the module
 * includes this. The compiled form: a graph of nodes, each an array of ops in
 * the fixed evaluation order documented in README.md. Everything a compiled
 * schema owns lives in one arena, plus PCRE2 codes and Jansson copies of
 * enum/const values, which are listed for sn_schema_free. */
#ifndef SN_SCHEMA_INTERNAL_H
#define SN_SCHEMA_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8

#include <jansson.h>
#include <pcre2.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/jval.h"
#include "schema/schema.h"

/* ---- instance type bits (an integer instance carries T_NUMBER too) ---- */
enum {
    SN__T_NULL = 1,
    SN__T_BOOL = 2,
    SN__T_OBJECT = 4,
    SN__T_ARRAY = 8,
    SN__T_NUMBER = 16,
    SN__T_STRING = 32,
    SN__T_INTEGER = 64,
    SN__T_ANY = 127
};

/* Hard bounds that are not options (README.md, "Bounds"). */
#define SN__DEFAULT_DEPTH      64
#define SN__DEFAULT_SUBSCHEMAS 10000
#define SN__DEFAULT_STEPS      1000000
#define SN__MAX_DEPTH_CAP      1000 /* max_depth is clamped to this (C stack of the scan) */
#define SN__MAX_DOCUMENTS      64   /* documents fetched through the resolve callback */
#define SN__EVAL_DEPTH         1000 /* nested evaluations in one validation */
#define SN__MATCH_LIMIT        1000000
#define SN__DEPTH_LIMIT        10000
#define SN__MD_POOL            4 /* PCRE2 match blocks kept for concurrent validations */

/* ---- arena: every block of a compiled schema, freed in one call ---- */
typedef struct sn__chunk sn__chunk;
typedef struct sn__arena {
    sn__chunk *head;
} sn__arena;

void *sn__arena_alloc(sn__arena *a, size_t size); /* zeroed, 16-aligned; NULL on OOM */
char *sn__arena_strndup(sn__arena *a, const char *s, size_t len);
void sn__arena_free(sn__arena *a);

/* ---- compiled form ---- */
typedef struct sn__node sn__node;

typedef struct sn__num {
    double d;
    json_int_t i;
    bool is_int;
    const char *text; /* sn__num_format() of the bound, for messages */
    size_t text_len;
} sn__num;

typedef struct sn__regex {
    pcre2_code *code;
    const char *src; /* the schema's pattern, for messages */
} sn__regex;

/* How the shaped paths check a property's or an item's value (validate.c,
 * check()): the common children decided where they are found, without a
 * call; anything else, and every failure, goes to the child node. */
enum {
    SN__CHECK_NODE,   /* evaluate `child` */
    SN__CHECK_ANY,    /* no child, or `true`: anything passes */
    SN__CHECK_TYPES,  /* a child without ops: `types` */
    SN__CHECK_INT,    /* only integer bounds: an integer in [min, max] passes */
    SN__CHECK_OBJECT, /* an object node: an object goes to `shaped.object` */
    SN__CHECK_ARRAY   /* an array node: an array goes to `shaped.array` */
};

typedef struct sn__array sn__array;

typedef struct sn__prop { /* one slot of the property hash table; hot fields first */
    uint64_t head;        /* sn_jval_key_head(name, len) */
    uint32_t len;
    uint8_t check; /* SN__CHECK_*, set once shapes are known */
    uint8_t types; /* the child's types (SN__CHECK_TYPES, SN__CHECK_INT) */
    bool required;
    json_int_t min, max; /* SN__CHECK_INT: the child's integer minimum and maximum */
    union {
        const struct sn__props *object; /* SN__CHECK_OBJECT */
        const sn__array *array;         /* SN__CHECK_ARRAY */
    } shaped;
    const sn__node *child; /* properties/<name>, or NULL when only required */
    uint32_t hash;         /* sn_jval_hash_key(name, len), truncated as in sn_jmember */
    uint32_t index;        /* position in sn__props.list (schema order) */
    const char *name;      /* NULL: empty slot */
} sn__prop;

/* An array node's ops as the shaped path runs them: [minItems] [maxItems]
 * items, the items checked as a property's value is. */
struct sn__array {
    size_t min, max; /* 0 and SIZE_MAX when absent */
    sn__prop item;   /* unnamed: check, types, bounds, child */
};

typedef struct sn__patprop {
    const sn__regex *re;
    const sn__node *child;
} sn__patprop;

typedef struct sn__props { /* properties + patternProperties + additionalProperties + required */
    sn__prop *slots;
    size_t mask;          /* slots - 1: a table of 4 or more, all empty without names */
    const sn__prop *list; /* copies of the entries in schema order */
    size_t nlist;
    const char **req;
    size_t *req_len;
    size_t nreq; /* required names, schema order */
    const sn__patprop *pats;
    size_t npats;
    const sn__node *additional; /* NULL when absent */
    bool additional_false;
} sn__props;

typedef struct sn__dep { /* one entry of dependentRequired or dependentSchemas */
    const char *name;
    size_t len;
    const char **req;
    size_t *req_len;
    size_t nreq;
    const sn__node *child;
} sn__dep;

enum sn__opkind {
    SN__OP_FALSE,
    SN__OP_TYPE,
    SN__OP_CONST,
    SN__OP_ENUM,
    SN__OP_MINIMUM,
    SN__OP_MAXIMUM,
    SN__OP_EXMIN,
    SN__OP_EXMAX,
    SN__OP_MULTIPLE,
    SN__OP_MINLEN,
    SN__OP_MAXLEN,
    SN__OP_PATTERN,
    SN__OP_FORMAT,
    SN__OP_MINPROPS,
    SN__OP_MAXPROPS,
    SN__OP_DEPREQ,
    SN__OP_REQUIRED, /* only when there is no SN__OP_PROPS, which folds it in */
    SN__OP_PROPS,
    SN__OP_PROPNAMES,
    SN__OP_DEPSCHEMAS,
    SN__OP_MINITEMS,
    SN__OP_MAXITEMS,
    SN__OP_ITEMS,
    SN__OP_CONTAINS,
    SN__OP_UNIQUE,
    SN__OP_REF,
    SN__OP_DYNREF,
    SN__OP_ALLOF,
    SN__OP_ANYOF,
    SN__OP_ONEOF,
    SN__OP_NOT,
    SN__OP_IF,
    SN__OP_UNEVAL_PROPS,
    SN__OP_UNEVAL_ITEMS,
    SN__OP_COUNT
};

typedef struct sn__op {
    uint8_t kind;
    uint8_t on; /* instance type bits the op applies to */
    union {
        uint8_t types;
        sn__num num;
        size_t count;
        const sn__regex *re;
        int format;
        const sn_jval *value;
        struct {
            const sn_jval *v; /* the enum's items */
            size_t n;
        } values;
        const sn__node *child;
        struct {
            const sn__node *const *v;
            size_t n;
        } nodes;
        const sn__props *props;
        struct {
            const sn__dep *v;
            size_t n;
        } deps;
        struct {
            const sn__node *const *prefix;
            size_t nprefix;
            const sn__node *items; /* NULL when absent */
            bool items_false;
        } items;
        struct {
            const sn__node *child;
            size_t min, max;
            bool min_given;
        } contains;
        struct {
            const sn__node *cond, *then, *els; /* then/els may be NULL */
        } cond;
        struct {
            const sn__node *target; /* the static resolution */
            uint32_t name;          /* interned anchor name; UINT32_MAX: plain $ref */
        } dyn;
        struct {
            const sn__node *child;
            bool is_false;
        } uneval;
    } u;
} sn__op;

enum {
    SN__NODE_TRUE = 1,         /* no ops: everything is valid */
    SN__NODE_UNEVAL_PROPS = 2, /* has unevaluatedProperties: collects annotations */
    SN__NODE_UNEVAL_ITEMS = 4,
    SN__NODE_SCALAR = 8 /* every op looks at the value alone (no applicator): no recursion */
};

/* Node shapes the evaluator runs without walking the ops (validate.c,
 * eval_child), set after compilation when no $dynamicRef reads the scope. */
enum {
    SN__SHAPE_GENERIC,
    SN__SHAPE_OBJECT, /* ops: one SN__OP_PROPS without patternProperties */
    SN__SHAPE_ARRAY   /* ops: [minItems] [maxItems] items (no prefixItems, not false) */
};

struct sn__node {
    const sn__op *ops;      /* `type` is not an op: it is `types`, checked first */
    const sn__props *props; /* SN__SHAPE_OBJECT: ops[0].u.props, one load nearer */
    const sn__array *array; /* SN__SHAPE_ARRAY: the ops laid out */
    uint32_t nops;
    uint32_t res;  /* schema resource, for the dynamic scope */
    uint8_t types; /* SN__T_ANY when there is no `type` */
    uint8_t flags;
    uint8_t shape;
};

typedef struct sn__dynanchor {
    uint32_t name;
    const sn__node *node;
} sn__dynanchor;

typedef struct sn__res {
    const sn__dynanchor *dyn;
    size_t ndyn;
} sn__res;

typedef struct sn__mdslot {
    pcre2_match_data *md;
    atomic_flag busy;
} sn__mdslot;

struct sn_schema {
    const sn__node *root;
    sn__arena arena;
    pcre2_code **codes; /* arena array; each freed with pcre2_code_free */
    size_t ncodes;
    json_t **values; /* deep copies for const/enum; each json_decref'd */
    size_t nvalues;
    sn_jarena views; /* the views of `values` that validation compares with */
    const sn__res *res;
    size_t nres;
    pcre2_general_context *gctx;
    pcre2_match_context *mctx;
    sn__mdslot pool[SN__MD_POOL];
    size_t max_steps;
    bool dynamic; /* some $dynamicRef reads the dynamic scope: validation tracks it */
};

/* ---- shared helpers ---- */

/* Compares an integer with a double exactly: <0, 0, >0. */
int sn__cmp_int_double(json_int_t i, double d);

/* Value equality with 1 == 1.0; -1 when `depth` nesting is exceeded or
 * the comparisons run out of *work (each costs one; objects whose keys are
 * in another order cost a scan per key). */
int sn__jval_equal(const sn_jval *a, const sn_jval *b, int depth, size_t *work);
uint64_t sn__jval_hash(const sn_jval *v, int depth);

/* Writes `n` as JSON would print it (shortest round-trip for reals). */
void sn__num_format(const sn__num *n, char *buf, size_t size);

/* ECMA-262 pattern -> PCRE2 pattern. Returns owned (sn_free) NUL-terminated
 * text, or NULL with *bad set to a message (static) on a syntax PCRE2 can't
 * express, or NULL with *bad NULL on OOM. */
char *sn__regex_translate(const char *src, size_t len, size_t *out_len, const char **bad);

/* Compiles an ECMA-262 pattern with `gctx`: SN_OK, SN_ESCHEMA (message in
 * diag), or SN_ENOMEM. */
sn_err sn__regex_compile(pcre2_general_context *gctx, const char *src, size_t len, bool jit,
                         pcre2_code **out, sn_diag *diag);

/* ---- formats ---- */
enum {
    SN__FMT_UNKNOWN = -1,
    SN__FMT_DATE_TIME,
    SN__FMT_DATE,
    SN__FMT_TIME,
    SN__FMT_DURATION,
    SN__FMT_EMAIL,
    SN__FMT_IDN_EMAIL,
    SN__FMT_HOSTNAME,
    SN__FMT_IDN_HOSTNAME,
    SN__FMT_IPV4,
    SN__FMT_IPV6,
    SN__FMT_URI,
    SN__FMT_URI_REFERENCE,
    SN__FMT_IRI,
    SN__FMT_IRI_REFERENCE,
    SN__FMT_URI_TEMPLATE,
    SN__FMT_UUID,
    SN__FMT_JSON_POINTER,
    SN__FMT_RELATIVE_JSON_POINTER,
    SN__FMT_REGEX,
    SN__FMT_COUNT
};

int sn__format_lookup(const char *name, size_t len);
const char *sn__format_name(int fmt);

/* 1 valid, 0 invalid, -1 out of memory (only "regex" allocates). */
int sn__format_check(pcre2_general_context *gctx, int fmt, const char *s, size_t len);

/* ---- URIs (RFC 3986 section 5.2) ---- */

/* Resolves `ref` against the absolute `base`; returns owned (sn_free) text or
 * NULL on OOM. */
char *sn__uri_resolve(const char *base, const char *ref, size_t ref_len);

#endif
