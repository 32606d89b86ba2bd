//! What a reset that completed may keep, checked the same way for every arena kind.

use arena_pool::ArenaStats;

/// A reset keeps at most one chunk (the largest, or one renewed for the cycle's need; none when
/// the chunk a renewal takes is refused: an injected failure, or the limit), except once in an
/// arena's life, recorded in `reused`: a fresh arena's reset that keeps every chunk for the next
/// cycle, with the same chunk bytes (it takes nothing).
pub fn assert_reset_chunks(before: ArenaStats, after: ArenaStats, reused: &mut bool) {
    if after.chunks <= 1 {
        return;
    }
    assert!(!*reused, "a second reuse: {before:?} -> {after:?}");
    *reused = true;
    let chunk_bytes =
        |s: ArenaStats| s.allocated_bytes_including_metadata - s.large_bytes - s.kept_large_bytes;
    assert_eq!(
        (after.chunks, chunk_bytes(after)),
        (before.chunks, chunk_bytes(before)),
        "{before:?} -> {after:?}"
    );
}
