//! The crate's pure size arithmetic, public only in fuzz builds (`--cfg fuzzing`, which
//! `cargo fuzz` sets) so that the `layout_math` fuzz target can check it against a model. Hidden
//! and absent from every other build: not part of the API.

use core::alloc::Layout;

/// Alignment of every arena chunk and of its first usable byte.
pub const CHUNK_ALIGN: usize = crate::arena::fuzzing::CHUNK_ALIGN;
/// Bytes of an arena chunk taken by its header.
pub const HEADER_SIZE: usize = crate::arena::fuzzing::HEADER_SIZE;
/// Block size of the first regular arena chunk.
pub const FIRST_CHUNK_SIZE: usize = crate::arena::fuzzing::FIRST_CHUNK_SIZE;
/// Later regular arena chunks, and chunks sized for a capacity, are multiples of this (up to a
/// page, and up to 32 KiB, respectively).
pub const SIZE_UNIT: usize = crate::arena::fuzzing::SIZE_UNIT;
/// Regular arena chunks stop growing at this size.
pub const MAX_CHUNK_SIZE: usize = crate::arena::fuzzing::MAX_CHUNK_SIZE;

/// The block size (and nominal size) of the next arena chunk that must hold `layout`.
pub fn chunk_size_for(layout: Layout, growth: usize, slack: bool) -> Option<(usize, usize)> {
    crate::arena::fuzzing::chunk_size_for(layout, growth, slack)
}

/// The smallest arena chunk block that holds `layout` wherever it lands.
pub fn min_chunk_size(layout: Layout) -> Option<usize> {
    crate::arena::fuzzing::min_chunk_size(layout)
}

/// The nominal size of the next regular arena chunk for a growth state.
pub fn regular_nominal(growth: usize) -> usize {
    crate::arena::fuzzing::regular_nominal(growth)
}

/// The block size (and nominal size) of a first arena chunk with `capacity` usable bytes.
pub fn chunk_size_for_capacity(capacity: usize) -> Option<(usize, usize)> {
    crate::arena::fuzzing::chunk_size_for_capacity(capacity)
}

/// The size class of a pooled size (`size > 0`).
pub fn class_of(size: usize) -> usize {
    crate::pool::fuzzing::class_of(size)
}

/// The block size of a size class.
pub fn class_size(class: usize) -> usize {
    crate::pool::fuzzing::class_size(class)
}

/// The block layout of a `Pool` slab of `slots` slots of `slot` bytes aligned to `align`, for an
/// address map of `granule`-byte granules.
pub fn slab_layout_for(slots: usize, slot: usize, align: usize, granule: usize) -> Option<Layout> {
    crate::pool::fuzzing::Slab::layout_for(slots, slot, align, granule)
}
