//! Pools: [`Pool`] (one slot size) and [`SizeClassPool`] (mixed sizes), allocators that free and
//! reuse every block.

mod address_map;
mod free_list;
mod size_class;
mod slab;
mod slot_pool;

pub use size_class::{ClassStats, SizeClassOptions, SizeClassPool, SizeClassStats};
pub use slot_pool::{Pool, PoolStats};
