//! Checks of an arena's statistics after an operation that a panic of the backing allocator
//! unwound.

/// Checks that an arena's statistics after an operation that a backing allocator's panic in
/// `allocate` unwound are those before it: all of them, or, for a typed fill (`fill`), all but
/// `used_bytes` (and `chunk_capacity`, which follows it), which may keep less than the largest
/// alignment of a fill's element (64) of padding: the fills that do not rewind their padding keep
/// it, and so does a `SyncArena`'s shared path. A fill's buffer that the current chunk could not
/// hold may also have moved the arena on to a chunk it held already (one a scope's exit, a
/// restore or a reset left for reuse) before the unwind: the arena stays there, with more room
/// than the old chunk's rest, and the chunks and the bytes held are unchanged.
pub fn assert_unwound_unchanged(
    before: &arena_pool::ArenaStats,
    after: &arena_pool::ArenaStats,
    fill: bool,
    what: &dyn std::fmt::Debug,
) {
    let mut after = kept_given_back(before, after);
    if fill && after.used_bytes >= before.used_bytes && after.used_bytes < before.used_bytes + 64 {
        let kept = after.used_bytes - before.used_bytes;
        if after.chunk_capacity + kept == before.chunk_capacity
            || after.chunk_capacity > before.chunk_capacity
        {
            after.chunk_capacity = before.chunk_capacity;
            after.used_bytes = before.used_bytes;
        }
    }
    assert_eq!(
        &after, before,
        "{what:?}, unwound by the backing allocator, changed the arena"
    );
}

/// [`assert_unwound_unchanged`] for a typed fill on a `SyncArena`'s shared path: besides the
/// padding its blocks kept, the fill's first block may have taken a new piece for the thread
/// and left the old piece's rest behind (when the piece could not be lengthened), which stays
/// counted as used. That rest is less than a block that fits a piece (at most half the largest
/// piece, 4 KiB). So `used_bytes` may grow by less than 4 KiB and 64 bytes of padding, the
/// chunk's room may fall by no more than that growth (`used_bytes + chunk_capacity` does not
/// fall: no byte of the chunk is lost but to used bytes), and nothing else may change. The room
/// may also grow: when the chunk could not hold that piece, the shared path moved on to a spare
/// chunk the reset had kept (no backing call: the chunks and the bytes held are unchanged).
pub fn assert_unwound_shared_fill(
    before: &arena_pool::ArenaStats,
    after: &arena_pool::ArenaStats,
    what: &dyn std::fmt::Debug,
) {
    let grew = after.used_bytes.checked_sub(before.used_bytes);
    assert!(
        grew.is_some_and(|g| g < 4096 + 64 && after.chunk_capacity + g >= before.chunk_capacity),
        "{what:?}, unwound by the backing allocator, took more than a piece's rest and padding: \
         {before:?} -> {after:?}"
    );
    assert_unchanged_but_room(before, after, what);
}

/// [`assert_unwound_unchanged`] for a `SyncArena` after a typed fill through one of its
/// `LocalArena` handles: the fill's first block may have taken the rest of the shared chunk as
/// the handle's new piece (no backing call) before a later request of the fill unwound, and the
/// handle keeps that piece. So bytes may move from the chunk's room to `used_bytes`, and nothing
/// else may change: no chunk, no large block, no byte held more. When the shared chunk could not
/// hold the piece, the piece may come from a spare chunk the reset had kept, which becomes the
/// shared chunk: its room then adds to the sum, held all along (the chunks and the bytes held
/// are unchanged).
pub fn assert_unwound_within_chunk(
    before: &arena_pool::ArenaStats,
    after: &arena_pool::ArenaStats,
    what: &dyn std::fmt::Debug,
) {
    assert!(
        after.used_bytes >= before.used_bytes
            && after.used_bytes + after.chunk_capacity >= before.used_bytes + before.chunk_capacity,
        "{what:?}, unwound by the backing allocator, took more than the shared chunk's room: \
         {before:?} -> {after:?}"
    );
    assert_unchanged_but_room(before, after, what);
}

/// `after` with `before`'s figures of the large blocks kept for reuse, when all that differs
/// there is kept blocks given back (a request that failed may have given them back first, to
/// make room for itself or under the limit): fewer kept blocks, the bytes held down by exactly
/// theirs, and the usable bytes by no more. Otherwise `after` unchanged, for the caller's
/// comparison to fail.
pub fn kept_given_back(
    before: &arena_pool::ArenaStats,
    after: &arena_pool::ArenaStats,
) -> arena_pool::ArenaStats {
    let mut a = *after;
    let Some(freed) = before.kept_large_bytes.checked_sub(a.kept_large_bytes) else {
        return a;
    };
    let usable = before.allocated_bytes.checked_sub(a.allocated_bytes);
    if a.kept_large_blocks <= before.kept_large_blocks
        && a.allocated_bytes_including_metadata + freed == before.allocated_bytes_including_metadata
        && usable.is_some_and(|u| u <= freed)
    {
        a.kept_large_blocks = before.kept_large_blocks;
        a.kept_large_bytes = before.kept_large_bytes;
        a.allocated_bytes_including_metadata = before.allocated_bytes_including_metadata;
        a.allocated_bytes = before.allocated_bytes;
    }
    a
}

/// The end of the checks above: every figure but `used_bytes` and `chunk_capacity` (which they
/// checked) is as it was, kept large blocks given back aside.
fn assert_unchanged_but_room(
    before: &arena_pool::ArenaStats,
    after: &arena_pool::ArenaStats,
    what: &dyn std::fmt::Debug,
) {
    let mut after = kept_given_back(before, after);
    after.used_bytes = before.used_bytes;
    after.chunk_capacity = before.chunk_capacity;
    assert_eq!(
        &after, before,
        "{what:?}, unwound by the backing allocator, changed the arena"
    );
}
