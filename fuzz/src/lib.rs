//! What the allocator fuzz targets share: [`Backing`], a backing allocator that checks how it is
//! used and fails, panics (in `allocate` or in `deallocate`) or calls back into the allocator it
//! backs on request, [`Model`], the live blocks with their byte patterns, the `Allocator`
//! operations checked against it ([`alloc_op`], [`grow_op`], [`shrink_op`], [`dealloc_op`]), the
//! sizes the fuzzer picks ([`Size`]), [`nested`], the action a re-entrant `Backing` runs,
//! [`fills`], the typed-API fills whose callbacks place blocks in the arena they fill, and
//! [`pool_checker`], the slot-pool operations and checks of `pool_ops` and `sync_ops`, and
//! [`bundle`], several inputs joined in one corpus file.

// `cfg(sanitize = "address")`: the blocks whose `deallocate` unwound are poisoned for
// AddressSanitizer (which `cargo fuzz` builds with by default). The targets build on nightly only.
#![feature(cfg_sanitize)]

pub mod bundle;
pub mod fills;
pub mod nested;
pub mod pool_checker;

mod backing;
mod checked_ops;
mod injected;
mod model;
mod resets;
mod sizes;
mod unwound;

pub use backing::{BACKING_CAP, Backing, NestedAction};
pub use checked_ops::{alloc_op, dealloc_op, grow_op, shrink_op};
pub use injected::{Injected, InjectedPanic, catch_injected, ignore_injected_panics, run_catching};
pub use model::{Block, Model, assert_zero};
pub use resets::assert_reset_chunks;
pub use sizes::{GROW_MAX, HUGE, LARGE_BASE, Size, align_from, layout};
pub use unwound::{
    assert_unwound_shared_fill, assert_unwound_unchanged, assert_unwound_within_chunk,
    kept_given_back,
};
