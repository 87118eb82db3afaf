#include "demo/hash.h"

static unsigned long mix(unsigned long h)
{
    h ^= h >> 33;
    return h * 0xff51afd7ed558ccdUL;
}

unsigned long hash_fnv1a(const char *key)
{
    unsigned long h = 1469598103934665603UL;
    while (*key) {
        h ^= (unsigned char)*key++;
        h *= 1099511628211UL;
    }
    return mix(h);
}

unsigned long hash_djb2(const char *key)
{
    unsigned long h = 5381;
    int c;
    while ((c = *key++))
        h = h * 33 + c;
    return mix(h);
}
