//! Model-based property tests of `Arena` through allocator-api2's `Allocator` trait
//! (docs/DESIGN.md §3 and §8): the configuration and the dice here, the live blocks' model in
//! `blocks`, the operations of each property in `allocator_ops` and `scope_ops`.
//!
//! `allocator_model` runs random sequences of allocate / allocate_zeroed / grow / grow_zeroed /
//! shrink / deallocate / reset (sizes 0..4096, alignments 1..=4096, both biased towards small
//! values; plus requests sized to end exactly at the end of the current chunk) against a model
//! of the live blocks. After every operation it checks that each block is aligned, that no two
//! blocks overlap and that every block still holds the bytes written to it (each block gets its
//! own byte pattern; zeroed memory is checked for zeros first). It also checks `used_bytes`
//! exactly where the design fixes it: zero-sized requests do not bump (not even padding);
//! allocate + deallocate at alignment 1 gives back every byte; freeing the last block rolls the
//! position back to that block's start; the last block grows in place whenever its alignment and
//! the chunk's room allow, and an in-place grow / shrink of the last block changes `used_bytes`
//! by exactly the size difference; freeing or shrinking a block that is not the last one changes
//! nothing; a moved block lands right after the old start (last block) or the old position;
//! reset goes back to 0 and keeps every chunk.
//!
//! `scope_model` runs random trees of nested `with_scope` calls (some of them unwinding) with
//! allocations, grows, shrinks and frees inside, and checks that every scope exit restores
//! `used_bytes` exactly and that the blocks of the enclosing scopes keep their contents, also
//! when a child frees, grows or shrinks a parent's block.
//!
//! Case counts: 256 cases per property natively (sequences of up to 200 operations; scope trees
//! of depth up to 4); 8 cases under Miri (sequences of up to 40 operations, smaller trees).
//! Failures are not persisted to a regressions file (`failure_persistence: None`); proptest
//! prints the minimal failing input.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

#[path = "../common/mod.rs"]
mod common;

mod allocator_ops;
mod blocks;
mod scope_ops;

use proptest::collection::vec;
use proptest::prelude::*;

use allocator_ops::{op, run_allocator_model};
use scope_ops::{run_scope_model, scope_op};

// ----- configuration -----

/// 256 cases natively, 6 under Miri (see `common::proptest_config`).
fn config() -> ProptestConfig {
    common::proptest_config(256, 6)
}

/// Longest operation sequence of `allocator_model`.
const MAX_OPS: usize = if cfg!(miri) { 40 } else { 200 };

/// Largest block a grow may reach in `scope_model` (grows add up to 4095 bytes at a time).
const MAX_BLOCK: usize = 3 * 4096;

/// Largest block a grow may reach in `allocator_model`, and largest request of `AllocRest` /
/// `GrowRest` (which probe the exact end of the current chunk). Below the large-block threshold
/// (64 KiB): this model checks the bump position exactly; large blocks, which live outside the
/// chunks, have tests of their own (tests/memory.rs) and the fuzz targets.
const MAX_REST: usize = if cfg!(miri) { 16 * 1024 } else { 60 * 1024 };

// ----- strategies -----

/// The random numbers one operation is made of. The weighted choices (operation kind, size
/// class, alignment class) are made by arithmetic on plain integer ranges, which cost far less
/// than `prop_oneof!` value trees (the bulk of a Miri run otherwise).
#[derive(Clone, Copy, Debug)]
struct Dice {
    kind: u8,
    /// In 0..4096: exactly 0 with weight 1, below 64 with weight 4, below 512 with weight 3,
    /// anywhere with weight 2.
    size: usize,
    /// log2 of an alignment in 1..=4096: up to 8 with weight 8, 16..=64 with weight 3, 128..=4096
    /// with weight 1.
    align_log: u32,
    newest: bool,
    pick: usize,
    keep: usize,
    zeroed: bool,
}

impl Dice {
    fn pick(&self) -> Pick {
        if self.newest {
            Pick::Newest
        } else {
            Pick::Any(self.pick)
        }
    }
}

/// Dice whose `kind` is in `0..kinds`.
fn dice(kinds: u8) -> impl Strategy<Value = Dice> {
    (
        (0..kinds, 0..10u8, 0..4096usize, 0..12u8, 0..12u8),
        (any::<bool>(), any::<usize>(), any::<usize>(), any::<bool>()),
    )
        .prop_map(
            |((kind, size_class, n, align_class, a), (newest, pick, keep, zeroed))| Dice {
                kind,
                size: match size_class {
                    0 => 0,
                    1..=4 => n % 64,
                    5..=7 => n % 512,
                    _ => n,
                },
                align_log: match align_class {
                    0..=7 => u32::from(a % 4),
                    8..=10 => 4 + u32::from(a % 3),
                    _ => 7 + u32::from(a % 6),
                },
                newest,
                pick,
                keep,
                zeroed,
            },
        )
}

/// Which live block an operation applies to: the newest (to exercise the last-block rules), or
/// one chosen modulo the live count.
#[derive(Clone, Copy, Debug)]
enum Pick {
    Newest,
    Any(usize),
}

impl Pick {
    fn index(self, len: usize) -> usize {
        match self {
            Pick::Newest => len - 1,
            Pick::Any(i) => i % len,
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn allocator_model(ops in vec(op(), 1..=MAX_OPS)) {
        run_allocator_model::<1>(&ops);
    }

    /// The same model on an arena of minimum alignment 8 (`Arena::with_min_align`): every block
    /// at a multiple of 8, `used_bytes` counting sizes rounded up to 8.
    #[test]
    fn allocator_model_min_align_8(ops in vec(op(), 1..=MAX_OPS)) {
        run_allocator_model::<8>(&ops);
    }

    #[test]
    fn scope_model(ops in vec(scope_op(), 0..if cfg!(miri) { 6 } else { 12 }), prefill: bool) {
        run_scope_model(&ops, prefill);
    }
}
