//! The reset's retention plan (`plan` in the arena's `retention` module), a pure function from
//! what a cycle reported to what the reset keeps, over arbitrary sequences of cycles: every plan
//! keeps the promises of the module documentation, a renewed chunk is kept by the next cycle that
//! needs the same, and after any history a steady loop settles, within the window and a probed
//! cycle, in one chunk of at most 1.5x its need (or the slack, or the reservation).
//!
//! The largest chunk is simulated as the arena leaves it: a renewal takes a chunk of its capacity
//! rounded up as the arena rounds it, a reservation is such a chunk's capacity, a planned chunk is
//! taken by a cycle that outgrows the largest, a probe is met by a cycle that needs more than it,
//! and chunks kept for reuse hold the cycle that follows (a fresh arena's first reset keeps them
//! all once; the largest stays the largest). Inputs may also set the largest chunk to anything,
//! as the chunks of a fresh arena's first cycles are.

#![no_main]

use arbitrary::Arbitrary;
use arena_pool::__fuzzing::{self as f, Cycle, LARGE_THRESHOLD, Plan, Retention, WINDOW};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Step {
    /// The cycle's need: `need` shifted left by `shift % 24` (up to about 2^56).
    need: u32,
    shift: u8,
    /// Bit 0: the cycle hid a part (a bound of up to three times the need); bit 1: the largest
    /// chunk is set to `largest` first (scaled as `need`).
    flags: u8,
    bound: u8,
    largest: u32,
    /// With bit 1 of `flags`: the other chunks held beside the largest (scaled as `need`).
    others: u32,
}

#[derive(Arbitrary, Debug)]
struct Input {
    reserved: u32,
    reserved_shift: u8,
    start: u32,
    steps: Vec<Step>,
    /// The steady loop after the history.
    tail_need: u32,
    tail_shift: u8,
}

fn scaled(x: u32, shift: u8) -> usize {
    (x as usize) << (shift % 24)
}

/// Usable bytes of the chunk the arena takes for `capacity` (a `with_capacity`, a renewal, a
/// plan): rounded up a little, as `chunk_size_for_capacity` does.
fn rounded(capacity: usize) -> usize {
    f::chunk_size_for_capacity(capacity).map_or(capacity, |(size, _)| size - f::HEADER_SIZE)
}

/// The most a reset may keep for a window whose largest need is `need`.
fn keep_at_most(need: usize, reserved: usize) -> usize {
    need.saturating_add(need / 2)
        .max(need.saturating_add(2 * LARGE_THRESHOLD))
        .max(reserved)
}

struct Sim {
    retention: Retention,
    largest: usize,
    /// Usable bytes of every chunk held (the largest among them).
    held: usize,
    plan: usize,
    probe: Option<usize>,
    reserved: usize,
    window: [usize; WINDOW],
    /// A reset has renewed the chunks, or kept them all for reuse.
    renewed: bool,
    reused: bool,
}

impl Sim {
    /// One cycle of `now` bytes (and a hidden part up to `bound`), then the reset: checks the
    /// plan and applies it to the simulated largest chunk.
    fn cycle(&mut self, now: usize, bound: usize) -> Plan {
        // A cycle that outgrows the largest chunk takes the planned one when it holds the cycle.
        if now.max(bound) > self.largest && self.plan >= now {
            self.largest = self.largest.max(rounded(self.plan));
            self.held = self.held.saturating_add(rounded(self.plan));
        }
        let largest = self.largest;
        let probed = self.probe.map(|at| now > at);
        let cycle = Cycle {
            now,
            bound,
            probed,
            largest,
            held: self.held,
            reserved: self.reserved,
        };
        let before = self.retention;
        let plan = self.retention.plan(cycle);
        self.window.rotate_right(1);
        self.window[0] = now;
        let need = self.window.iter().copied().max().unwrap().max(bound);
        match plan {
            Plan::Renew { capacity, probe } => {
                assert!(
                    capacity >= now && capacity >= self.reserved,
                    "{cycle:?} -> {plan:?}"
                );
                assert_eq!(probe, (bound != 0).then_some(now), "{cycle:?} -> {plan:?}");
                let window_after = self.window[..WINDOW - 1].iter().copied().max().unwrap_or(0);
                if bound == 0 && window_after.max(now) == need {
                    // The next cycle that needs the same (with the window's largest need still
                    // in it) keeps the renewed chunk.
                    let took = rounded(capacity);
                    let mut again = self.retention;
                    let next = again.plan(Cycle {
                        probed: None,
                        largest: took,
                        ..cycle
                    });
                    assert_eq!(
                        next,
                        Plan::Keep {
                            plan: 0,
                            probe: None
                        },
                        "{cycle:?} -> {plan:?}, then {took} bytes"
                    );
                }
                self.largest = rounded(capacity);
                self.held = self.largest;
                self.plan = 0;
                self.probe = None;
                self.renewed = true;
            }
            Plan::Keep { plan: p, probe } => {
                if p != 0 {
                    assert!(p >= now.max(bound), "{cycle:?} -> {plan:?}");
                }
                match probe {
                    Some(at) => {
                        assert!(
                            at < largest && at >= now && probed.is_none() && bound == 0,
                            "{cycle:?} -> {plan:?}"
                        );
                    }
                    None if p == 0 && now.max(bound) <= largest => {
                        // Kept as it is: not oversized for the window.
                        assert!(
                            largest <= keep_at_most(need, self.reserved),
                            "{cycle:?} -> {plan:?} (window {:?}, from {before:?})",
                            self.window
                        );
                    }
                    None => {}
                }
                self.held = largest;
                self.plan = p;
                self.probe = probe;
            }
            Plan::Reuse => {
                // Once, before any renewal, for a cycle that outgrew its largest chunk and hid
                // nothing; the chunks stay as they are.
                assert!(
                    !self.reused
                        && !self.renewed
                        && now > largest
                        && self.held >= now
                        && bound == 0
                        && probed.is_none(),
                    "{cycle:?} -> {plan:?}"
                );
                self.reused = true;
                self.plan = 0;
                self.probe = None;
            }
        }
        plan
    }
}

fuzz_target!(|input: Input| {
    let reserved = match scaled(input.reserved, input.reserved_shift) % (1 << 40) {
        0 => 0,
        r => rounded(r),
    };
    let mut sim = Sim {
        retention: Retention::default(),
        largest: (input.start as usize).max(reserved),
        held: (input.start as usize).max(reserved),
        plan: 0,
        probe: None,
        reserved,
        window: [0; WINDOW],
        renewed: false,
        reused: false,
    };
    for step in input.steps.iter().take(64) {
        if step.flags & 2 != 0 {
            // As after a fresh arena's first cycles, or a reservation: any chunk (a probe or a
            // plan belongs to the chunk it was set for).
            sim.largest = scaled(step.largest, step.shift).max(reserved);
            sim.held = sim.largest.saturating_add(scaled(step.others, step.shift));
            sim.probe = None;
        }
        let now = scaled(step.need, step.shift);
        let bound = if step.flags & 1 != 0 {
            now.saturating_add(now / 64 * (step.bound as usize % 192))
        } else {
            0
        };
        sim.cycle(now, bound);
    }
    // A steady loop after any history: within the window and two more resets (a probed cycle
    // and its renewal), it keeps its one chunk as it is, which `Sim::cycle` checks is at most
    // 1.5x its need, the slack, or the reservation.
    let n = scaled(input.tail_need, input.tail_shift);
    let mut last = None;
    for _ in 0..WINDOW + 3 {
        last = Some(sim.cycle(n, 0));
    }
    assert_eq!(
        last,
        Some(Plan::Keep {
            plan: 0,
            probe: None
        }),
        "a steady loop of {n} bytes did not settle (largest {})",
        sim.largest
    );
});
