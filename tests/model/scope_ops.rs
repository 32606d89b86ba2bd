//! `scope_model`: random trees of nested `with_scope` calls, some of them unwinding, with
//! allocations, grows, shrinks and frees inside, of the scope's own blocks and its parents'.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::{Arena, ArenaRef};
use proptest::collection::vec;
use proptest::prelude::*;

use crate::blocks::{Block, bytes_of, check_blocks, fill, layout};
use crate::{MAX_BLOCK, Pick, dice};

#[derive(Clone, Debug)]
pub(crate) enum ScopeOp {
    /// Allocate in the current scope.
    Alloc { size: usize, align_log: u32 },
    /// Grow a block of the current scope.
    Grow { pick: Pick, extra: usize },
    /// Shrink a block of the current scope (same alignment: never moves).
    Shrink { pick: Pick, keep: usize },
    /// Free a block of the current scope.
    Free { pick: Pick },
    /// Free a block of the parent scope from the child: the position must not move.
    FreeOuter { pick: Pick },
    /// Grow a block of the parent scope from the child: never in place; the copy belongs to the
    /// child.
    GrowOuter { pick: Pick, extra: usize },
    /// Shrink a block of the parent scope from the child: the position must not move.
    ShrinkOuter { pick: Pick, keep: usize },
    /// A child scope; `unwind` leaves it by unwinding instead of returning.
    Scope { ops: Vec<ScopeOp>, unwind: bool },
}

/// Leaf weights: allocate 6, grow 2, shrink 1, free 3, free-outer 2, grow-outer 1,
/// shrink-outer 1; a quarter of the child scopes unwind.
pub(crate) fn scope_op() -> impl Strategy<Value = ScopeOp> {
    let leaf = dice(16).prop_map(|d| match d.kind {
        0..=5 => ScopeOp::Alloc {
            size: d.size,
            align_log: d.align_log,
        },
        6..=7 => ScopeOp::Grow {
            pick: d.pick(),
            extra: d.size,
        },
        8 => ScopeOp::Shrink {
            pick: d.pick(),
            keep: d.keep,
        },
        9..=11 => ScopeOp::Free { pick: d.pick() },
        12..=13 => ScopeOp::FreeOuter { pick: d.pick() },
        14 => ScopeOp::GrowOuter {
            pick: d.pick(),
            extra: d.size,
        },
        _ => ScopeOp::ShrinkOuter {
            pick: d.pick(),
            keep: d.keep,
        },
    });
    let (depth, nodes, branch) = if cfg!(miri) { (3, 24, 5) } else { (4, 96, 10) };
    leaf.prop_recursive(depth, nodes, branch, move |inner| {
        (
            vec(inner, 0..branch as usize),
            proptest::bool::weighted(0.25),
        )
            .prop_map(|(ops, unwind)| ScopeOp::Scope { ops, unwind })
    })
}

/// The payload of a deliberate unwind out of a scope.
struct LeaveScope;

/// The blocks of every open scope, outermost first, and the next block id.
struct Levels {
    levels: Vec<Vec<Block>>,
    next_id: u64,
}

impl Levels {
    fn check(&self, what: &dyn Fn() -> String) {
        check_blocks(self.levels.iter().flatten(), what);
    }

    fn current(&mut self) -> &mut Vec<Block> {
        self.levels.last_mut().unwrap()
    }

    /// The parent scope's blocks, if there is a parent.
    fn parent(&mut self) -> Option<&mut Vec<Block>> {
        let n = self.levels.len();
        if n < 2 {
            None
        } else {
            Some(&mut self.levels[n - 2])
        }
    }
}

fn run_scope(scope: &mut ArenaRef<'_>, ops: &[ScopeOp], lv: &mut Levels, path: &str) {
    for (step, op) in ops.iter().enumerate() {
        let at = format!("{path}/{step}");
        let before = scope.used_bytes();
        match op {
            ScopeOp::Alloc { size, align_log } => {
                let layout = layout(*size, *align_log);
                let p = scope
                    .allocate(layout)
                    .unwrap_or_else(|_| panic!("{at}: allocation of {layout:?} failed"))
                    .cast::<u8>();
                let id = lv.next_id;
                lv.next_id += 1;
                let mut b = Block {
                    ptr: p,
                    layout,
                    id,
                    content: Vec::new(),
                };
                fill(&mut b, 0, *size);
                lv.current().push(b);
            }
            ScopeOp::Grow { pick, extra } => {
                let blocks = lv.current();
                if blocks.is_empty() {
                    continue;
                }
                let idx = pick.index(blocks.len());
                let b = &mut blocks[idx];
                let old = b.layout.size();
                let new_layout = Layout::from_size_align(
                    old.max((old + extra).min(MAX_BLOCK)),
                    b.layout.align(),
                )
                .unwrap();
                // SAFETY: a live block of this scope with `b.layout`, grown to a larger size.
                let q = unsafe { scope.grow(b.ptr, b.layout, new_layout) }
                    .unwrap_or_else(|_| panic!("{at}: grow failed"))
                    .cast::<u8>();
                b.ptr = q;
                b.layout = new_layout;
                assert_eq!(bytes_of(q, 0, old), b.content, "{at}: grow lost contents");
                fill(b, old, new_layout.size());
                let b = blocks.remove(idx);
                blocks.push(b);
            }
            ScopeOp::Shrink { pick, keep } => {
                let blocks = lv.current();
                if blocks.is_empty() {
                    continue;
                }
                let idx = pick.index(blocks.len());
                let b = &mut blocks[idx];
                let new = keep % (b.layout.size() + 1);
                let new_layout = Layout::from_size_align(new, b.layout.align()).unwrap();
                // SAFETY: a live block of this scope with `b.layout`, shrunk to a smaller size
                // with the same alignment.
                let q = unsafe { scope.shrink(b.ptr, b.layout, new_layout) }
                    .unwrap_or_else(|_| panic!("{at}: shrink failed"))
                    .cast::<u8>();
                assert_eq!(
                    q, b.ptr,
                    "{at}: a shrink at the same alignment moved the block"
                );
                b.layout = new_layout;
                b.content.truncate(new);
            }
            ScopeOp::Free { pick } => {
                let blocks = lv.current();
                if blocks.is_empty() {
                    continue;
                }
                let b = blocks.remove(pick.index(blocks.len()));
                // SAFETY: a live block of this scope with this layout, forgotten by the model.
                unsafe { scope.deallocate(b.ptr, b.layout) };
                assert!(scope.used_bytes() <= before);
            }
            ScopeOp::FreeOuter { pick } => {
                let Some(blocks) = lv.parent() else { continue };
                if blocks.is_empty() {
                    continue;
                }
                let b = blocks.remove(pick.index(blocks.len()));
                // SAFETY: a live block of the parent scope, allocated from the same arena with
                // this layout, forgotten by the model.
                unsafe { scope.deallocate(b.ptr, b.layout) };
                assert_eq!(
                    scope.used_bytes(),
                    before,
                    "{at}: freeing the parent's block {} moved the child's position",
                    b.id
                );
            }
            ScopeOp::GrowOuter { pick, extra } => {
                let Some(blocks) = lv.parent() else { continue };
                if blocks.is_empty() {
                    continue;
                }
                let mut b = blocks.remove(pick.index(blocks.len()));
                let old = b.layout.size();
                let new_layout = Layout::from_size_align(
                    old.max((old + extra).min(MAX_BLOCK)),
                    b.layout.align(),
                )
                .unwrap();
                // SAFETY: a live block of the parent scope with `b.layout`, grown; from now on
                // the model owns the copy in the child scope.
                let q = unsafe { scope.grow(b.ptr, b.layout, new_layout) }
                    .unwrap_or_else(|_| panic!("{at}: grow of a parent's block failed"))
                    .cast::<u8>();
                if old > 0 {
                    assert_ne!(q, b.ptr, "{at}: the parent's block {} grew in place", b.id);
                }
                assert!(scope.used_bytes() >= before, "{at}: used_bytes went down");
                b.ptr = q;
                b.layout = new_layout;
                assert_eq!(bytes_of(q, 0, old), b.content, "{at}: grow lost contents");
                fill(&mut b, old, new_layout.size());
                lv.current().push(b);
            }
            ScopeOp::ShrinkOuter { pick, keep } => {
                let Some(blocks) = lv.parent() else { continue };
                if blocks.is_empty() {
                    continue;
                }
                let idx = pick.index(blocks.len());
                let b = &mut blocks[idx];
                let new = keep % (b.layout.size() + 1);
                let new_layout = Layout::from_size_align(new, b.layout.align()).unwrap();
                // SAFETY: a live block of the parent scope with `b.layout`, shrunk at the same
                // alignment (so it stays where it is and stays the parent's).
                let q = unsafe { scope.shrink(b.ptr, b.layout, new_layout) }
                    .unwrap_or_else(|_| panic!("{at}: shrink of a parent's block failed"))
                    .cast::<u8>();
                assert_eq!(q, b.ptr, "{at}: shrinking a parent's block moved it");
                assert_eq!(
                    scope.used_bytes(),
                    before,
                    "{at}: shrinking the parent's block {} moved the child's position",
                    b.id
                );
                b.layout = new_layout;
                b.content.truncate(new);
            }
            ScopeOp::Scope { ops, unwind } => {
                let unwind = *unwind;
                lv.levels.push(Vec::new());
                let entry = scope.used_bytes();
                let r = catch_unwind(AssertUnwindSafe(|| {
                    scope.with_scope(|child| {
                        // At most the one byte stepped over at entry (none when the chunk
                        // is full or there is none).
                        assert!(
                            child.used_bytes() - entry <= 1,
                            "{at}: entering moved the position"
                        );
                        run_scope(child, ops, lv, &at);
                        if unwind {
                            resume_unwind(Box::new(LeaveScope));
                        }
                    })
                }));
                match r {
                    Ok(()) => assert!(!unwind),
                    Err(payload) => {
                        if !(unwind && payload.is::<LeaveScope>()) {
                            resume_unwind(payload);
                        }
                    }
                }
                lv.levels.pop();
                assert_eq!(
                    scope.used_bytes(),
                    entry,
                    "{at}: leaving the scope (unwind: {unwind}) did not restore used_bytes"
                );
            }
        }
        lv.check(&|| format!("{at}: {op:?}"));
    }
}

pub(crate) fn run_scope_model(ops: &[ScopeOp], prefill: bool) {
    let mut arena = Arena::new();
    let root = arena.as_arena_ref_mut();
    let mut lv = Levels {
        levels: vec![Vec::new()],
        next_id: 0,
    };
    if prefill {
        // Start with a chunk in use (otherwise the first scope takes the first chunk).
        run_scope(
            root,
            &[ScopeOp::Alloc {
                size: 24,
                align_log: 3,
            }],
            &mut lv,
            "prefill",
        );
    }
    let entry = root.used_bytes();
    lv.levels.push(Vec::new());
    root.with_scope(|child| run_scope(child, ops, &mut lv, "top"));
    lv.levels.pop();
    assert_eq!(
        root.used_bytes(),
        entry,
        "top-level scope did not restore used_bytes"
    );
    lv.check(&|| String::from("the top-level scope"));
    run_scope(root, ops, &mut lv, "root");
}
