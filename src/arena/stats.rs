//! Statistics: [`ArenaStats`] and the methods that report an arena's memory.

/// A snapshot of an arena's memory, from [`Arena::stats`](crate::Arena::stats).
///
/// ```
/// let arena = arena_pool::Arena::new();
/// arena.alloc_slice_fill_copy(100, 0u8);
/// let s = arena.stats();
/// assert_eq!(s.used_bytes, 100);
/// assert_eq!(s.chunks, 1);
/// assert!(s.allocated_bytes >= s.used_bytes + s.chunk_capacity);
/// assert!(s.allocated_bytes_including_metadata > s.allocated_bytes);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArenaStats {
    /// Chunks held from the backing allocator (in use or kept for reuse).
    pub chunks: usize,
    /// Large blocks in use: each a block of the backing allocator's of its own, for a request of
    /// at least 64 KiB through the `Allocator` methods (or one that did not fit the current
    /// chunk). A `LocalArena`'s piece is a chunk of its `SyncArena`, never a large block.
    pub large_blocks: usize,
    /// Bytes of the large blocks in use, headers included (they count in
    /// `allocated_bytes_including_metadata` and the allocation limit, not in `used_bytes`).
    pub large_bytes: usize,
    /// Large blocks kept for reuse: freed, or in use at a reset, and held for the next cycles'
    /// large requests within what the last cycles needed (see the crate's design document).
    /// `trim` gives them back.
    pub kept_large_blocks: usize,
    /// Bytes of the large blocks kept for reuse, headers included (they count in
    /// `allocated_bytes`, `allocated_bytes_including_metadata` and the allocation limit).
    pub kept_large_bytes: usize,
    /// Bytes handed out from the chunks up to the current position, alignment padding
    /// included. It goes back down exactly when the last block is freed or shrunk, when a scope
    /// ends and on reset; a block freed while it was not the last stays counted until then.
    /// Large blocks are counted apart (`large_bytes`). On a `SyncArena`, the pieces its
    /// `LocalArena` handles took count in full, less the unused end a dropped handle gave back,
    /// and so do the pieces its shared path's threads bump, less the calling thread's unused
    /// rest. A thread whose piece cannot be lengthened (another thread or a handle took the
    /// bytes after it) leaves the old piece's rest behind, counted as used until the reset: less
    /// than the block that did not fit in it, with its alignment padding.
    pub used_bytes: usize,
    /// Usable bytes of every chunk and large block held (in use or kept for reuse), headers
    /// excluded.
    pub allocated_bytes: usize,
    /// Bytes held from the backing allocator, headers included: what the allocation limit
    /// caps.
    pub allocated_bytes_including_metadata: usize,
    /// Bytes left in the current chunk: what can be allocated (at alignment 1) before the arena
    /// moves to another chunk.
    pub chunk_capacity: usize,
    /// The allocation limit, if one is set.
    pub allocation_limit: Option<usize>,
}

/// The statistics methods, for `Arena`, `ArenaRef` and `LocalArena` alike (the type needs
/// private `raw(&self) -> &RawArena` and `src(&self)`, the limit's owner, a `ChunkSource`).
macro_rules! stats_api {
    (impl[$($generics:tt)*] $ty:ty) => {
        impl<$($generics)*> $ty {
            /// [`ArenaStats::used_bytes`]($crate::ArenaStats::used_bytes): bytes handed out
            /// from the chunks up to the current position, large blocks not included.
            #[inline]
            pub fn used_bytes(&self) -> usize {
                self.raw().used_bytes()
            }

            /// [`ArenaStats::allocated_bytes`]($crate::ArenaStats::allocated_bytes): usable
            /// bytes of every chunk and large block held.
            #[inline]
            pub fn allocated_bytes(&self) -> usize {
                self.raw().allocated_bytes(self.src())
            }

            /// [`ArenaStats::allocated_bytes_including_metadata`](
            /// $crate::ArenaStats::allocated_bytes_including_metadata): bytes held from the
            /// backing allocator, what the allocation limit caps.
            #[inline]
            pub fn allocated_bytes_including_metadata(&self) -> usize {
                self.raw().allocated_bytes_including_metadata(self.src())
            }

            /// [`ArenaStats::chunk_capacity`]($crate::ArenaStats::chunk_capacity): bytes left in
            /// the current chunk.
            #[inline]
            pub fn chunk_capacity(&self) -> usize {
                self.raw().chunk_capacity()
            }

            /// The allocation limit, if one is set: the arena's (a scope shares its arena's, a
            /// `LocalArena` its `SyncArena`'s).
            #[inline]
            pub fn allocation_limit(&self) -> Option<usize> {
                $crate::arena::ChunkSource::allocation_limit(self.src())
            }

            /// Whether the `Allocator` methods panic at the allocation limit instead of returning
            /// `Err(AllocError)`: what `set_panic_on_limit` was given on the arena (`Arena`'s or
            /// `SyncArena`'s), which a scope and a `LocalArena` follow.
            #[inline]
            pub fn panics_on_limit(&self) -> bool {
                $crate::arena::ChunkSource::panics_on_limit(self.src())
            }

            /// All the statistics at once.
            pub fn stats(&self) -> $crate::ArenaStats {
                self.raw().stats(self.src())
            }
        }
    };
}
pub(crate) use stats_api;

impl super::bump::RawArena {
    /// The statistics of this bump state over its source `src` (the allocation limit and the
    /// kept large blocks are the source's).
    pub(crate) fn stats<S: super::ChunkSource + ?Sized>(&self, src: &S) -> ArenaStats {
        let (kept_large_blocks, kept_large_bytes) = self.kept_large(src);
        ArenaStats {
            chunks: self.chunk_count(),
            large_blocks: self.large_count(),
            large_bytes: self.large_bytes(),
            kept_large_blocks,
            kept_large_bytes,
            used_bytes: self.used_bytes(),
            allocated_bytes: self.allocated_bytes(src),
            allocated_bytes_including_metadata: self.allocated_bytes_including_metadata(src),
            chunk_capacity: self.chunk_capacity(),
            allocation_limit: src.allocation_limit(),
        }
    }
}
