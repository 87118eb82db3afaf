#define NAME(mode, n) find_##mode##_##n
#define GEN(mode, n) static int NAME(mode, n)(int x) { return run_##mode(x, n); }
#define FOR_EACH(X, mode) X(mode, 4) X(mode, 5)
int run_fast(int x, int n) { return x + n; }
int run_slow(int x, int n) { return x - n; }
FOR_EACH(GEN, fast)
GEN(slow, 1)
int after(void) { return find_fast_4(1) + find_slow_1(2); }
#if WIDE
#define DGEN(fn) static int fn##_wide(void) { return 2; } static int fn(void) { return fn##_wide(); }
#else
#define DGEN(fn) static int fn(void) { return 1; }
#endif
DGEN(pick)
#define ONCE(fn) int fn(void) { return 0; }
#undef ONCE
#define ONCE(fn) int fn##_again(void);
ONCE(gone);
GEN(written, 9)
static int find_written_9(int x) { return x; }
#define NAME(mode, n) find_##mode##_##n
#define CALL_FN(mode, n) case n: return NAME(mode, n)(x);
#define FOR_EACH(X, mode) X(mode, 4) X(mode, 5)
#define SWITCH(mode) switch (x) { FOR_EACH(CALL_FN, mode) }
#define APPLY(f, v) f(v)
#define QUIET(f, v) 0
int find_fast_4(int x) { return x; }
int find_fast_5(int x) { return x; }
int helper(int v) { return v; }
int dropped(int v) { return v; }
int search(int x) {
    if (x) {
        SWITCH(fast)
    }
    return APPLY(helper, x) + QUIET(dropped, x);
}
int twice(int x) {
    return helper(x) +
        APPLY(helper, x);
}
#define STR(x) #x
#define CAT(a, ...) a ## __VA_ARGS__
const char *s = STR(CAT(x, y, z));
