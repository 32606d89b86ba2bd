//! A game-style frame loop on one `Arena`: every frame allocates a varying (but deterministic)
//! mix of entities, a `Vec` of draw commands and formatted debug labels, then calls
//! `arena.reset()`. A counting backing allocator shows that after the first frames the arena
//! serves every frame from the chunks it kept, without calling the backing allocator again.
//!
//! The warm-up lasts until the kept chunk covers the largest frame. At each reset the arena
//! keeps one chunk sized for the recent frames (once a frame has outgrown a chunk sized so, the
//! reset takes one with a quarter of room to spare), so the warm-up ends soon after a frame near
//! the largest has been seen. Here the load varies by about ±25% and frames 0-2 suffice; a loop
//! whose frames vary much more needs a longer warm-up (or a first chunk sized for the peak, with
//! `Arena::with_capacity_in`).
//!
//! Run with `cargo run --release --example frame_loop`.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::NonNull;

use arena_pool::Arena;
use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Global};
use arena_pool::allocator_api2::vec::Vec;

const FRAMES: usize = 300;
/// Frames printed one by one; from the next frame on the arena must not call its backing
/// allocator any more.
const WARM_UP_FRAMES: usize = 3;

/// A backing allocator that forwards to `Global` and counts the calls it sees.
#[derive(Default)]
struct Counting {
    allocs: Cell<usize>,
    frees: Cell<usize>,
    live_bytes: Cell<usize>,
}

impl Counting {
    /// Allocation plus deallocation calls so far.
    fn calls(&self) -> usize {
        self.allocs.get() + self.frees.get()
    }
}

// SAFETY: every block comes from `Global` and is returned to `Global` with the layout it was
// allocated with (the caller's `deallocate` contract guarantees that), so `Counting` inherits
// `Global`'s guarantees; the counters are bookkeeping only. `grow`/`shrink` use the trait's
// default implementations, which go through `allocate` and `deallocate` below.
unsafe impl Allocator for Counting {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let block = Global.allocate(layout)?;
        self.allocs.set(self.allocs.get() + 1);
        // `Global` returns exactly `layout.size()` bytes, so `deallocate` sees this size again.
        self.live_bytes.set(self.live_bytes.get() + block.len());
        Ok(block)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        self.frees.set(self.frees.get() + 1);
        self.live_bytes.set(self.live_bytes.get() - layout.size());
        // SAFETY: the caller guarantees `ptr` is a block currently allocated by this allocator
        // with `layout`; every such block came from `Global.allocate(layout)`.
        unsafe { Global.deallocate(ptr, layout) }
    }
}

/// A tiny deterministic generator (xorshift64), so every run builds the same frames.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `lo..hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

#[derive(Clone, Copy, Debug)]
struct Entity {
    id: u32,
    pos: [f32; 2],
    vel: [f32; 2],
    hp: i16,
    kind: u8,
}

#[derive(Clone, Copy, Debug)]
struct DrawCmd {
    sprite: u16,
    layer: i16,
    x: f32,
    y: f32,
    tint: u32,
}

/// What one frame did, measured just before the reset.
struct FrameReport {
    entities: usize,
    draw_cmds: usize,
    labels: usize,
    checksum: u64,
    used_bytes: usize,
}

/// Builds one frame in the arena: entities, draw commands and debug labels, all dead at reset.
fn run_frame(arena: &Arena<&Counting>, frame: usize, rng: &mut XorShift) -> FrameReport {
    // The load varies from frame to frame: 300..450 entities in one slice, plus up to 40
    // "projectiles" allocated one by one.
    let n = rng.range(300, 450) as usize;
    let entities: &mut [Entity] = arena.alloc_slice_fill_with(n, |i| Entity {
        id: (frame * 1000 + i) as u32,
        pos: [(i % 32) as f32 * 8.0, (i / 32) as f32 * 8.0],
        vel: [1.0, -0.5],
        hp: 100,
        kind: (i % 4) as u8,
    });
    let projectiles = rng.range(0, 40) as usize;
    let mut extra: Vec<&Entity, &Arena<&Counting>> = Vec::new_in(arena);
    for i in 0..projectiles {
        let e = arena.alloc(Entity {
            id: u32::MAX - i as u32,
            pos: [rng.range(0, 256) as f32, rng.range(0, 256) as f32],
            vel: [0.0, 4.0],
            hp: 1,
            kind: 9,
        });
        extra.push(&*e);
    }

    // Simulate, then record draw commands (one per entity, so reserved up front) and debug
    // labels (a few, in a vector that grows as they come).
    let mut draw: Vec<DrawCmd, &Arena<&Counting>> = Vec::with_capacity_in(n + projectiles, arena);
    let mut labels: Vec<&str, &Arena<&Counting>> = Vec::new_in(arena);
    for e in entities.iter_mut() {
        e.pos[0] += e.vel[0];
        e.pos[1] += e.vel[1];
        e.hp -= (rng.next() % 3) as i16;
        draw.push(DrawCmd {
            sprite: u16::from(e.kind),
            layer: (e.pos[1] as i16) / 16,
            x: e.pos[0],
            y: e.pos[1],
            tint: 0xff_ff_ff_ff,
        });
        if rng.next() % 8 == 0 {
            labels.push(arena.alloc_fmt(format_args!(
                "#{} kind={} hp={} at ({:.1}, {:.1})",
                e.id, e.kind, e.hp, e.pos[0], e.pos[1]
            )));
        }
    }
    for p in &extra {
        draw.push(DrawCmd {
            sprite: 900,
            layer: 100,
            x: p.pos[0],
            y: p.pos[1],
            tint: 0xff_00_00_ff,
        });
    }
    draw.sort_unstable_by_key(|c| c.layer);

    let checksum = draw
        .iter()
        .map(|c| u64::from(c.sprite) + u64::from(c.tint >> 24) + c.x as u64 + c.y as u64)
        .chain(labels.iter().map(|l| l.len() as u64))
        .sum();
    FrameReport {
        entities: n + projectiles,
        draw_cmds: draw.len(),
        labels: labels.len(),
        checksum,
        used_bytes: arena.used_bytes(),
    }
}

fn main() {
    let backing = Counting::default();
    let mut arena = Arena::new_in(&backing);
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);

    let (mut min_used, mut max_used) = (usize::MAX, 0);
    let (mut min_entities, mut max_entities) = (usize::MAX, 0);
    let mut calls_after_warm_up = 0;
    let mut held_after_warm_up = 0;
    let mut checksum = 0u64;

    for frame in 0..FRAMES {
        let calls_before = backing.calls();
        let (allocs_before, frees_before) = (backing.allocs.get(), backing.frees.get());

        let report = run_frame(&arena, frame, &mut rng);
        let stats = arena.stats();
        arena.reset();

        let calls = backing.calls() - calls_before;
        assert!(report.used_bytes > 0, "frame {frame} allocated nothing");
        assert_eq!(arena.used_bytes(), 0, "reset forgets every block");
        checksum = checksum.wrapping_add(report.checksum);

        if frame < WARM_UP_FRAMES {
            println!(
                "frame {frame:>3}: {:>3} entities, {:>3} draw cmds, {:>2} labels | used {:>6} B, \
                 held {:>6} B in {} chunks | backing: {} allocs, {} frees",
                report.entities,
                report.draw_cmds,
                report.labels,
                report.used_bytes,
                stats.allocated_bytes,
                stats.chunks,
                backing.allocs.get() - allocs_before,
                backing.frees.get() - frees_before,
            );
            held_after_warm_up = arena.allocated_bytes();
        } else {
            calls_after_warm_up += calls;
            min_used = min_used.min(report.used_bytes);
            max_used = max_used.max(report.used_bytes);
            min_entities = min_entities.min(report.entities);
            max_entities = max_entities.max(report.entities);
            assert_eq!(
                arena.allocated_bytes(),
                held_after_warm_up,
                "frame {frame}: the arena's chunks changed"
            );
        }
    }

    println!(
        "frames {WARM_UP_FRAMES}-{}: {min_entities}..={max_entities} entities, used \
         {min_used}..={max_used} B per frame, held {held_after_warm_up} B throughout | backing: \
         {calls_after_warm_up} calls",
        FRAMES - 1,
    );
    println!("checksum of all frames: {checksum:#x}");
    println!("arena after the last reset: {:?}", arena.stats());

    // The property this example demonstrates: once warmed up, frames cost no backing calls.
    assert_eq!(
        calls_after_warm_up,
        0,
        "the arena called its backing allocator after frame {}",
        WARM_UP_FRAMES - 1
    );
    assert!(max_used <= held_after_warm_up);

    let total_allocs = backing.allocs.get();
    drop(arena);
    println!(
        "arena dropped: {total_allocs} chunks allocated in {FRAMES} frames, all {} given back \
         ({} bytes still live)",
        backing.frees.get(),
        backing.live_bytes.get()
    );
    assert_eq!(backing.allocs.get(), backing.frees.get());
    assert_eq!(backing.live_bytes.get(), 0);
}
