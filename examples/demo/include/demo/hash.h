#ifndef DEMO_HASH_H
#define DEMO_HASH_H

unsigned long hash_fnv1a(const char *key);
unsigned long hash_djb2(const char *key);

#endif
