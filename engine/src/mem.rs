//! Heap memory: the parsers' allocator, and returning freed memory to the system.
//!
//! Tree-sitter allocates and frees a node for every token it shifts. Under glibc's malloc
//! those small blocks end up interleaved with the facts a build keeps, and on a
//! kernel-size tree the allocator's free-list upkeep (`malloc_consolidate`,
//! `unlink_chunk`) costs a tenth of the build; mimalloc keeps per-thread pages of one
//! size class and does not. Rust allocations stay on the system allocator: mimalloc as
//! the global allocator kept freed pages and raised a kernel build's peak RSS.
//!
//! The facts of every file are allocated by the parser threads, so glibc keeps them in
//! those threads' arenas after resolution frees them, where the graph and the segments
//! (allocated by the main thread) cannot reuse them: on a kernel-size tree that is about a
//! gigabyte of peak RSS unless it is handed back as it is freed.
//!
//! glibc also raises its mmap threshold each time a large block is freed (up to 32 MB),
//! after which the per-node arrays of a kernel-size graph (7 M × 4 bytes is 29 MB) come
//! from the arenas and stay resident when freed, until a trim. The threshold is therefore
//! fixed: large blocks are always mapped, and unmapped as soon as they are freed (a kernel
//! build's peak RSS fell by 186 MB).

/// Blocks from this size up are always mapped on their own (see the module docs).
const MMAP_THRESHOLD: std::ffi::c_int = 4 << 20;

/// Sets up the process's allocators, once, before the first parser exists: tree-sitter
/// allocates with mimalloc, and glibc's mmap threshold is fixed (see the module docs).
/// [`crate::extract::Extractor::new`] calls it, and so must any code that makes its own
/// tree-sitter parser (the parse-floor benchmark).
pub fn install_allocators() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            unsafe extern "C" {
                fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
            }
            const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
            // SAFETY: `mallopt` only changes a tuning parameter of glibc's allocator and
            // is safe to call at any time; blocks already allocated are unaffected.
            unsafe {
                mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            }
        }
        let mi = tree_sitter::Allocator {
            malloc: libmimalloc_sys::mi_malloc,
            calloc: libmimalloc_sys::mi_calloc,
            realloc: libmimalloc_sys::mi_realloc,
            free: libmimalloc_sys::mi_free,
        };
        // SAFETY: the four functions are one allocator family, never return null for a
        // non-zero size (mimalloc aborts on out-of-memory like the rest of the process)
        // and align like malloc. `Once` makes the call single-threaded, and it runs before
        // any tree-sitter object exists: every parser of the process is made after it (the
        // engine's own in `Extractor::new`), so no block is ever freed by the wrong family.
        unsafe { tree_sitter::set_allocator(Some(mi)) };
    });
}

/// Hands memory freed so far back to the operating system (all allocator arenas).
pub(crate) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: `malloc_trim` only returns free pages of the allocator's own arenas to
        // the kernel; it touches no live allocation and is safe from any thread at any time.
        unsafe {
            malloc_trim(0);
        }
    }
    // SAFETY: `mi_collect` only releases the free pages of mimalloc (the parsers'
    // allocator); it is safe at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}
