//! `Pool` through allocator-api2's `Allocator` trait, against a model of the live blocks (see
//! README.md).
//!
//! The slot layout comes from the input (size up to 4 KiB, alignment up to 4096), and so does
//! `new_in` or `with_capacity_in`. Operations: allocate / allocate_zeroed / grow / grow_zeroed /
//! shrink / deallocate with layouts that fit the slot and layouts that do not (those go to the
//! backing allocator), blocks described with any size between their requested size and their
//! length, reset, trim, backing-allocator failures, and sizes no allocator can serve. The backing
//! allocator can panic in its next call, or call back into the pool there: free a block and
//! allocate one; or panic in a `deallocate` call of the next operation (of the drop at the end).
//!
//! Checked after every operation, besides what the block model checks (alignment, length, no
//! overlap, contents, zeroing): the slot size; a pooled block is one slot long; `in_use` and
//! `fallback_blocks` match the model; the freed slot is the next one handed out; the backing
//! allocator holds exactly the slabs, the fallback blocks and at most one address-map table; a
//! failure changes nothing and happens only after an injected backing failure or for a huge
//! size; `trim` with no slot in use gives every slab back; an operation unwound by the backing
//! allocator's panic in `allocate` changes no statistic and no block, and the same operation then
//! runs normally; after one unwound from a `deallocate`, every other block is intact, the
//! statistics still match the model (a slot or fallback block the operation took and could not
//! hand out counts as lost, at most one of each) and the pool works on; a nested request is served when a slot is free or when it goes to the backing
//! allocator (unless a failure was injected), and a nested block is checked like any other
//! (alignment, length, no overlap with any block live meanwhile, contents); dropping the pool
//! gives everything back (but the fallback blocks lost, and what a drop that unwound left).

#![no_main]

use arbitrary::Arbitrary;
use arena_pool::Pool;
use arena_pool_fuzz::pool_checker::{PoolChecker, PoolOp};
use arena_pool_fuzz::{Backing, align_from, ignore_injected_panics, layout};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    slot_size: u16,
    slot_align: u8,
    /// `with_capacity_in` with this many slots instead of `new_in` when non-zero.
    capacity: u8,
    ops: Vec<PoolOp>,
}

fuzz_target!(|input: Input| {
    ignore_injected_panics();
    let slot_layout = layout(
        input.slot_size as usize % 4097,
        align_from(input.slot_align),
    );
    let backing = Backing::new();
    let pool = if input.capacity > 0 {
        Pool::with_capacity_in(slot_layout, input.capacity as usize, &backing)
    } else {
        Pool::new_in(slot_layout, &backing)
    };
    assert_eq!(pool.slot_layout(), slot_layout);
    assert!(pool.capacity() >= input.capacity as usize);
    let mut checker = PoolChecker::new(pool, slot_layout, &backing);
    for &op in &input.ops {
        checker.step(op);
    }
    checker.finish();
});
