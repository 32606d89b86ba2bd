//! The crate's pure size arithmetic and the reset's retention plan, public only in fuzz builds
//! (`--cfg fuzzing`, which `cargo fuzz` sets) so that the `layout_math` and `retention` fuzz
//! targets can check them. Hidden and absent from every other build: not part of the API.

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

/// Requests of at least this many bytes that do not fit the current chunk get a large block.
pub const LARGE_THRESHOLD: usize = crate::arena::fuzzing::LARGE_THRESHOLD;

/// Cycles whose need a reset remembers.
pub const WINDOW: usize = crate::arena::fuzzing::WINDOW;

/// What a reset saw of the cycle that ends (see the arena's `retention` module).
#[derive(Clone, Copy, Debug)]
pub struct Cycle {
    /// The most bytes the cycle was seen to have in use.
    pub now: usize,
    /// 0, or a bound on what the cycle may have reached (it rolled back its last chunk).
    pub bound: usize,
    /// `Some` when it ran under a probe, `Some(true)` when it met it.
    pub probed: Option<bool>,
    /// Usable bytes of the largest chunk held.
    pub largest: usize,
    /// Usable bytes of every chunk held.
    pub held: usize,
    /// Usable bytes reserved by `with_capacity`.
    pub reserved: usize,
}

/// What a reset does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Keep the largest chunk; the next new chunk gets `plan` usable bytes (0: as usual); hold its
    /// end at `probe` bytes for the next cycle.
    Keep { plan: usize, probe: Option<usize> },
    /// Take one chunk of `capacity` usable bytes instead; hold its end at `probe` when it has
    /// more.
    Renew {
        capacity: usize,
        probe: Option<usize>,
    },
    /// Keep every chunk, in the order the cycle took them, for the next cycle to take.
    Reuse,
}

/// The reset's memory of recent cycles, and its decision for each.
#[derive(Clone, Copy, Debug, Default)]
pub struct Retention(crate::arena::fuzzing::Recent);

impl Retention {
    /// The decision for `cycle`, which the retention then remembers.
    pub fn plan(&mut self, cycle: Cycle) -> Plan {
        use crate::arena::fuzzing as a;
        let c = a::Cycle {
            now: cycle.now,
            bound: cycle.bound,
            probed: cycle.probed,
            largest: cycle.largest,
            held: cycle.held,
            reserved: cycle.reserved,
        };
        match a::plan(&mut self.0, c) {
            a::Plan::Keep { plan, probe } => Plan::Keep { plan, probe },
            a::Plan::Renew { capacity, probe } => Plan::Renew { capacity, probe },
            a::Plan::Reuse => Plan::Reuse,
        }
    }
}
