//! Returning freed heap memory to the operating system.
//!
//! The facts of every file are allocated by the parser threads, so glibc keeps them in
//! those threads' arenas after resolution frees them, where the graph and the segments
//! (allocated by the main thread) cannot reuse them: on a kernel-size tree that is about a
//! gigabyte of peak RSS unless it is handed back as it is freed.

/// Hands memory freed so far back to the operating system (all allocator arenas).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn release_freed_memory() {
    unsafe extern "C" {
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: `malloc_trim` only returns free pages of the allocator's own arenas to the
    // kernel; it touches no live allocation and is safe to call from any thread at any time.
    unsafe {
        malloc_trim(0);
    }
}

/// Other allocators return memory on their own: nothing to do.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn release_freed_memory() {}
