#include <stdlib.h>
#include <string.h>

#include "demo/table.h"
#include "demo/hash.h"

static size_t table_allocs;

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static size_t slot(const table *t, const char *key)
{
    return t->hash(key) % t->nbuckets;
}

static int grow(table *t)
{
    size_t n = t->nbuckets * 2;
    struct entry **b = calloc(n, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < t->nbuckets; i++) {
        struct entry *e = t->buckets[i];
        while (e) {
            struct entry *next = e->next;
            size_t j = t->hash(e->key) % n;
            e->next = b[j];
            b[j] = e;
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
    return 0;
}

table *table_new(hash_fn hash)
{
    table *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    t->nbuckets = TABLE_MIN_BUCKETS;
    t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
    t->count = 0;
    t->hash = hash ? hash : hash_fnv1a;
    table_allocs++;
    return t;
}

void table_free(table *t)
{
    for (size_t i = 0; i < t->nbuckets; i++) {
        struct entry *e = t->buckets[i];
        while (e) {
            struct entry *next = e->next;
            free(e->key);
            free(e->value);
            free(e);
            e = next;
        }
    }
    free(t->buckets);
    free(t);
    table_allocs--;
}

int table_put(table *t, const char *key, const char *value)
{
    if (!TABLE_LOAD_OK(t) && grow(t) != 0)
        return -1;
    size_t i = slot(t, key);
    for (struct entry *e = t->buckets[i]; e; e = e->next) {
        if (strcmp(e->key, key) == 0) {
            free(e->value);
            e->value = dup_string(value);
            return 0;
        }
    }
    struct entry *e = malloc(sizeof *e);
    if (!e)
        return -1;
    e->key = dup_string(key);
    e->value = dup_string(value);
    e->next = t->buckets[i];
    t->buckets[i] = e;
    t->count++;
    return 1;
}

const char *table_get(const table *t, const char *key)
{
    for (struct entry *e = t->buckets[slot(t, key)]; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e->value;
    return NULL;
}

int table_remove(table *t, const char *key)
{
    struct entry **p = &t->buckets[slot(t, key)];
    while (*p) {
        struct entry *e = *p;
        if (strcmp(e->key, key) == 0) {
            *p = e->next;
            free(e->key);
            free(e->value);
            free(e);
            t->count--;
            return 1;
        }
        p = &e->next;
    }
    return 0;
}

size_t table_count(const table *t)
{
    return t->count;
}
