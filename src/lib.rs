// README links to the guide chapters by reference; rustdoc takes the first definition of a
// reference, so these, before README, send the links to the `guide` module.
#![cfg_attr(
    feature = "std",
    doc = "\
[guide/collections]: crate::guide::collections
[guide/memory-and-reset]: crate::guide::memory_and_reset
[guide/limits-and-statistics]: crate::guide::limits_and_statistics
[guide/scopes]: crate::guide::scopes
[guide/threads]: crate::guide::threads
[guide/pools]: crate::guide::pools
[guide/performance]: crate::guide::performance
[guide/memory-and-reset#minimum-alignment]: crate::guide::memory_and_reset#minimum-alignment
"
)]
#![doc = include_str!("../README.md")]
// The `nightly` feature turns allocator-api2's trait into `core::alloc::Allocator`; the crate,
// and every crate using it with the std collections, then needs the feature gate. Nightlies from
// 1.100 on stabilised part of `allocator_api`: moving to them means changing only these two gates.
#![cfg_attr(feature = "nightly", feature(allocator_api))]
#![cfg_attr(feature = "nightly", doc(test(attr(feature(allocator_api)))))]
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod allocator_impls;
mod arena;
#[cfg(any(feature = "allocator-api2-03", feature = "allocator-api2-04"))]
mod bridges;
pub mod collections;
mod error;
#[cfg(feature = "std")]
pub mod guide;
mod pool;
pub mod prelude;
mod reentry;
#[cfg(feature = "serde")]
pub mod serde;
mod sharing;
#[cfg(feature = "std")]
mod sync;
// Fuzz builds only (`--cfg fuzzing`): the pure size arithmetic, for the `layout_math` target.
#[cfg(fuzzing)]
#[doc(hidden)]
#[path = "fuzzing.rs"]
pub mod __fuzzing;

pub use allocator_api2;
pub use allocator_api2::alloc::AllocError;
pub use arena::{
    Arena, ArenaRef, ArenaStats, BumpAlloc, Checkpoint, ChunkIter, ChunkRawIter, ScopeGuard,
};
pub use error::AllocOrInitError;
pub use pool::{
    ClassStats, Pool, PoolStats, SizeClassOptions, SizeClassPool, SizeClassStats, TypedPool,
};
#[cfg(feature = "std")]
pub use sync::{LocalArena, SyncArena, SyncPool, SyncScopeGuard};
