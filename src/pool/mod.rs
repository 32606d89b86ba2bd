//! Pools: [`Pool`] (one slot size) and [`SizeClassPool`] (mixed sizes), allocators that free and
//! reuse every block.

mod free_list;
mod slab;
mod slot_pool;

pub use slot_pool::{Pool, PoolStats};
