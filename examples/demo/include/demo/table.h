#ifndef DEMO_TABLE_H
#define DEMO_TABLE_H

#include <stddef.h>

#define TABLE_MIN_BUCKETS 8
#define TABLE_LOAD_OK(t) ((t)->count * 4 < (t)->nbuckets * 3)

typedef unsigned long (*hash_fn)(const char *key);

struct entry {
    char *key;
    char *value;
    struct entry *next;
};

typedef struct table {
    struct entry **buckets;
    size_t nbuckets;
    size_t count;
    hash_fn hash;
} table;

table *table_new(hash_fn hash);
void table_free(table *t);
int table_put(table *t, const char *key, const char *value);
const char *table_get(const table *t, const char *key);
int table_remove(table *t, const char *key);
size_t table_count(const table *t);

#endif
