#![doc = include_str!("../README.md")]
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod allocator_impls;
mod arena;
mod error;
mod pool;

pub use allocator_api2;
pub use allocator_api2::alloc::AllocError;
pub use arena::{Arena, ArenaRef, ArenaStats, Checkpoint, ScopeGuard};
pub use error::AllocOrInitError;
pub use pool::{ClassStats, Pool, PoolStats, SizeClassOptions, SizeClassPool, SizeClassStats};
