//! AddressSanitizer poisoning of an arena's free bytes.
//!
//! Built with `--cfg arena_pool_asan` (together with `-Zsanitizer=address`), the bytes of a chunk
//! that no live block covers are poisoned, so that a read or write past the end of a block, or
//! through a block after it was rolled back, reset or left by a scope, is reported by ASan as a
//! `use-after-poison`, although the memory still belongs to the arena. Without the cfg every
//! function here is an empty inline function and the fast paths are unchanged.
//!
//! The rule: a chunk's usable bytes are poisoned when it is taken, when a scope or `reset` hands
//! them back, and when a block is rolled back or shrunk in place; a bump unpoisons exactly the
//! block it hands out (its padding stays poisoned). Bytes go back unpoisoned to whoever owns them
//! next: a chunk's block to the backing allocator, a `LocalArena`'s unused tail to its
//! `SyncArena`, and every chunk of a `SyncArena` when it is reset.

#[cfg(arena_pool_asan)]
unsafe extern "C" {
    fn __asan_poison_memory_region(addr: *const u8, size: usize);
    fn __asan_unpoison_memory_region(addr: *const u8, size: usize);
}

/// Marks `[start, end)` as not to be touched.
#[inline(always)]
pub(crate) fn poison(start: *const u8, end: *const u8) {
    #[cfg(arena_pool_asan)]
    if start < end {
        // SAFETY: the ASan runtime only records the range in its shadow memory; the caller's
        // range lies inside one chunk the arena owns.
        unsafe { __asan_poison_memory_region(start, end.addr() - start.addr()) };
    }
    #[cfg(not(arena_pool_asan))]
    let _ = (start, end);
}

/// Marks `[start, end)` as usable again.
#[inline(always)]
pub(crate) fn unpoison(start: *const u8, end: *const u8) {
    #[cfg(arena_pool_asan)]
    if start < end {
        // SAFETY: as for `poison`.
        unsafe { __asan_unpoison_memory_region(start, end.addr() - start.addr()) };
    }
    #[cfg(not(arena_pool_asan))]
    let _ = (start, end);
}
