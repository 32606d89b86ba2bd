//! What `reset` keeps: enough chunk capacity for what recent cycles needed, in one chunk, and no
//! more.
//!
//! A cycle is what happens between two resets. Its *need* is the most bytes it had in use in the
//! chunks: what `used_bytes` counts at the reset, or more when the arena saw more at one of its
//! slow points (moving to another chunk, a large block taken, resized or freed, a roll-back of a
//! block of at least the large-block threshold, a scope's exit). Large blocks are not part of
//! it: they live outside the chunks, and the large blocks a reset keeps for the next cycles are
//! sized by their own rule (see `large_spares`).
//! The rule, applied at every reset to the largest chunk held (every other chunk goes back to
//! the backing allocator):
//!
//! - it is **kept** unless it is oversized: more than 1.5x the largest need of the last
//!   [`WINDOW`] cycles, and more than that need plus twice the large-block threshold (the slack
//!   covers blocks below the threshold freed by a roll-back before the reset, which no slow point
//!   sees), and more than a `with_capacity` reservation;
//! - an **oversized** chunk is **renewed**: every chunk goes back, then the reset takes one of
//!   that need and a sixteenth, rounded up to whole pages (the reset makes the call, so the
//!   cycles after it make none; should the backing allocator or the limit refuse it, the arena
//!   holds no chunk until the next allocation);
//! - the first time a fresh arena's cycle needed more than its largest chunk holds but at most
//!   three times that (nothing hidden, no probe), every chunk is **reused**: kept as it is, in
//!   the order the cycle took them, for the next cycle to run in. That reset neither gives back
//!   nor takes anything, and the next cycle, which makes about the same requests, fills the
//!   chunks as this one did and makes no backing call;
//! - when the cycle needed more than the largest chunk holds but at most three times that (after
//!   that first time), the chunks are renewed the same way into one: for the need and a
//!   sixteenth in a fresh arena's first cycles (its chunks together grow by half with each one, so they hold up to about three
//!   times the largest), for the need and a quarter once a reset has renewed the chunks before
//!   (the chunk outgrown was sized for the cycles before: they vary, and the quarter lets the next
//!   ones vary without a backing call);
//! - when it needed more than three times that, the largest is kept and the next chunk the arena
//!   takes is **planned** for the need, so that a cycle that needs it again fits in one chunk,
//!   and a single spike costs nothing.
//!
//! A cycle whose blocks were all given back before its reset (a list freed from its newest node,
//! each free rolling the position back) has nothing in use there, and when it never left its
//! chunk no slow point saw it either: its need is not known. So a reset does not renew an
//! oversized chunk at once: it first keeps it and **probes** the next cycle. The probe holds the
//! chunk's end at the size the renewal would take; a cycle that reaches it takes the slow path,
//! which moves the probe up by a step (a quarter, at least [`PROBE_STEP`], or what the request
//! needs) up to the chunk's own end, and bumps on. The probe's last position is then a bound on
//! what the cycle reached, rolled back or not, and counts as its need at the next reset. That
//! need is *measured* (to within a step), so the reset after it is tighter: it renews a chunk of
//! more than the need (the largest of its window, the measured one among them) and a quarter
//! ([`measured`]), where it otherwise allows 1.5x and the slack.
//! A probe costs the fast paths nothing: only the cycle after such a reset runs with one, and it
//! meets it on paths that are already slow.
//!
//! A cycle that moved on to further chunks and then gave back everything it had bumped in its
//! last one has the same blind spot there: it needed at least what the reset sees and at most
//! that and the whole last chunk. The reset renews for that bound, so that the next cycle, which
//! has the same shape, fits one chunk (sized for the part it sees, it would outgrow it and take a
//! chunk again, two or three times over), and sets a probe on the renewed chunk where the part it
//! saw ends, which measures the next cycle.
//!
//! So a steady loop settles in one chunk within three cycles and makes no backing call after
//! that (a loop whose cycles vary by more than a sixteenth takes one more renewal, then one each
//! time a cycle needs more than a quarter above the largest need before it), holding at most 1.5x a cycle's bytes plus
//! a chunk header (or the slack above, for cycles of less than about 256 KiB), whether or not its
//! blocks are given back before the reset; after a cycle many times larger than the others, the
//! arena is back to that within [`WINDOW`] resets and one probed cycle.

use super::large::LARGE_THRESHOLD;

/// Cycles whose need a reset remembers.
pub(crate) const WINDOW: usize = 4;

/// The needs of the last [`WINDOW`] cycles, newest first, and whether a reset has renewed the
/// chunks for them before.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Recent {
    needs: [usize; WINDOW],
    /// A reset has renewed the chunks (a [`Decision::Renew`]): the chunk a cycle outgrows is
    /// then one sized for the cycles before, not one of a fresh arena's first.
    pub(crate) renewed: bool,
    /// A reset has kept every chunk for the next cycle ([`Plan::Reuse`]): it does so once.
    reused: bool,
}

impl Recent {
    pub(crate) const fn new() -> Recent {
        Recent {
            needs: [0; WINDOW],
            renewed: false,
            reused: false,
        }
    }

    /// Records a finished cycle's need; returns the largest need of the window.
    #[inline]
    pub(crate) fn record(&mut self, need: usize) -> usize {
        let [a, b, c, _] = self.needs;
        self.needs = [need, a, b, c];
        need.max(a).max(b.max(c))
    }
}

/// What a reset does with the largest chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Keep it; the next new chunk gets this many usable bytes (0: sized as usual).
    Keep { plan: usize },
    /// Give every chunk back, then take one of this many usable bytes.
    Renew { capacity: usize },
}

/// The rule of the module documentation, for a largest chunk of `capacity` usable bytes
/// (`renewed`: a reset has renewed the chunks before), a cycle that needed `now`, the window's
/// largest need `need`, and a `with_capacity` reservation.
#[inline(always)]
pub(crate) fn decide(
    capacity: usize,
    renewed: bool,
    now: usize,
    need: usize,
    reserved: usize,
) -> Decision {
    let keep_at_most = need
        .saturating_add(need / 2)
        .max(need.saturating_add(2 * LARGE_THRESHOLD))
        .max(reserved);
    if capacity > keep_at_most {
        Decision::Renew {
            capacity: planned(need).max(reserved),
        }
    } else if now > capacity && now / 3 <= capacity {
        // A fresh arena's first cycles, whose chunks grow by half: all of them hold up to about
        // three times the largest, so one chunk for the whole cycle, taken now, holds no more
        // than they did. Or a loop whose cycles vary, when a chunk a reset took for them was
        // outgrown: the quarter is their room to vary. (It stays below the 1.5x above with the
        // page rounding, so the next reset keeps it.)
        Decision::Renew {
            capacity: if renewed {
                need.saturating_add(need / 4)
            } else {
                planned(need)
            },
        }
    } else if now > capacity {
        // Far more than the largest chunk: taken only if a cycle needs it again.
        Decision::Keep {
            plan: planned(need),
        }
    } else {
        Decision::Keep { plan: 0 }
    }
}

/// What a reset saw of the cycle that ends: its input to [`plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cycle {
    /// The most bytes the cycle was seen to have in use (bump bytes and large blocks'), or, when
    /// it met a probe, at least how far the probe moved.
    pub(crate) now: usize,
    /// 0 when that is all the cycle may have reached; otherwise a bound on it: the cycle moved
    /// on to further chunks and gave back all it had bumped in its last one, which it may have
    /// filled.
    pub(crate) bound: usize,
    /// `Some` when the cycle ran under a probe, `Some(true)` when it met it (`now` is measured).
    pub(crate) probed: Option<bool>,
    /// Usable bytes of the largest chunk held: the one a reset keeps or renews.
    pub(crate) largest: usize,
    /// Usable bytes of every chunk held.
    pub(crate) held: usize,
    /// Usable bytes reserved by `with_capacity`.
    pub(crate) reserved: usize,
}

/// What a reset does, from [`plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Keep the largest chunk and give every other back; the next new chunk gets `plan` usable
    /// bytes (0: sized as usual). With `probe`, the kept chunk's end is held that many bytes
    /// from its start for the next cycle, which that measures.
    Keep { plan: usize, probe: Option<usize> },
    /// Give every chunk back, then take one of `capacity` usable bytes. With `probe`, its end is
    /// held that many bytes from its start when it has more (the next cycle is measured).
    Renew {
        capacity: usize,
        probe: Option<usize>,
    },
    /// Keep every chunk, in the order the cycle took them: the first current, the others as
    /// spares, which the next cycle takes as it outgrows the one before.
    Reuse,
}

/// The reset's whole decision (the rule of the module documentation), for the cycle that ends;
/// records its need in `recent`.
#[inline(always)]
#[cfg_attr(not(feature = "std"), allow(dead_code))] // used by `SyncArena`
pub(crate) fn plan(recent: &mut Recent, cycle: Cycle) -> Plan {
    let need = recent.record(cycle.now);
    plan_for(recent, cycle, need)
}

/// [`plan`] for a cycle whose need `recent` has recorded already, `need` being the window's
/// largest. When the arena holds one chunk, the cycle hid nothing and did not meet a probe, the
/// plan is to keep the chunk as it is exactly when [`decide`] says `Keep { plan: 0 }`: a reset's
/// fast path asks that alone.
#[inline(always)]
pub(crate) fn plan_for(recent: &mut Recent, cycle: Cycle, need: usize) -> Plan {
    // A cycle of unknown need is sized for its bound: the next one fits (a renewed chunk gets a
    // probe at what is known, which measures it).
    let mut decision = decide(
        cycle.largest,
        recent.renewed,
        cycle.now.max(cycle.bound),
        need.max(cycle.bound),
        cycle.reserved,
    );
    if cycle.probed == Some(true) {
        decision = measured(decision, cycle.largest, need, cycle.reserved);
    }
    if let Decision::Renew { capacity } = decision {
        if reuse(recent, cycle, capacity) {
            recent.reused = true;
            return Plan::Reuse;
        }
    }
    match decision {
        // An oversized chunk is renewed only after a probed cycle: until then it is kept, with a
        // probe where the renewed chunk would end.
        Decision::Renew { capacity }
            if cycle.probed.is_none() && cycle.bound == 0 && capacity < cycle.largest =>
        {
            Plan::Keep {
                plan: 0,
                probe: Some(capacity),
            }
        }
        Decision::Renew { capacity } => {
            recent.renewed = true;
            Plan::Renew {
                capacity,
                probe: (cycle.bound != 0).then_some(cycle.now),
            }
        }
        Decision::Keep { plan } => Plan::Keep { plan, probe: None },
    }
}

/// Whether a renewal into `capacity` bytes is instead a [`Plan::Reuse`]: at the first reset of a
/// fresh arena that outgrew its largest chunk but not its chunks together (the need was not in
/// large blocks, which a reset gives back), nothing hidden and no probe. That reset then
/// neither gives back nor takes anything (as cheap as a reset can be), and the next cycle, which
/// needs about the same, runs in the same chunks with no backing call; the reset after it renews
/// them into one as usual.
fn reuse(recent: &Recent, cycle: Cycle, capacity: usize) -> bool {
    !recent.renewed
        && !recent.reused
        && cycle.bound == 0
        && cycle.probed.is_none()
        && cycle.now > cycle.largest
        && cycle.held >= cycle.now
        && capacity > cycle.largest
}

/// Room for a need, with a sixteenth to spare (a chunk is rounded up to whole pages on top).
fn planned(need: usize) -> usize {
    need.saturating_add(need / 16)
}

/// The decision after a cycle that met a probe, whose need is then measured (to within a step
/// of the probe): a chunk kept with more than `need`, the window's largest need (the measured
/// one among them), and a quarter is renewed for it. (The 1.5x and the slack of [`decide`] are
/// for needs that roll-backs may hide.)
pub(crate) fn measured(
    decision: Decision,
    capacity: usize,
    need: usize,
    reserved: usize,
) -> Decision {
    match decision {
        Decision::Keep { plan: 0 } if capacity > need.saturating_add(need / 4).max(reserved) => {
            Decision::Renew {
                capacity: planned(need).max(reserved),
            }
        }
        d => d,
    }
}

/// The least a probe moves up by when a cycle reaches it.
pub(crate) const PROBE_STEP: usize = 4096;

/// Where a probe at `reached` bytes from its chunk's start moves when a request that needs the
/// chunk up to `wanted` meets it: up by a quarter (at least [`PROBE_STEP`]), or to `wanted` if
/// that is further, and never past the chunk's `capacity`.
pub(crate) fn next_probe(reached: usize, wanted: usize, capacity: usize) -> usize {
    reached
        .saturating_add((reached / 4).max(PROBE_STEP))
        .max(wanted)
        .min(capacity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn the_window_forgets_after_four_cycles() {
        let mut r = Recent::new();
        assert_eq!(r.record(100), 100);
        assert_eq!(r.record(5), 100);
        assert_eq!(r.record(5), 100);
        assert_eq!(r.record(5), 100);
        assert_eq!(r.record(5), 5);
    }

    #[test]
    fn a_probe_moves_up_by_a_step_or_to_the_request_within_the_chunk() {
        assert_eq!(next_probe(0, 100, 100_000), PROBE_STEP);
        assert_eq!(next_probe(40_000, 40_100, 100_000), 50_000);
        assert_eq!(next_probe(40_000, 70_000, 100_000), 70_000);
        assert_eq!(next_probe(90_000, 90_010, 100_000), 100_000);
        assert_eq!(next_probe(90_000, usize::MAX, 100_000), 100_000);
    }

    #[test]
    fn a_measured_need_keeps_at_most_a_quarter_more() {
        let kept = Decision::Keep { plan: 0 };
        // 1.5x the need and the slack would keep 400 KB for 256 KB; measured, it is renewed.
        assert_eq!(
            measured(kept, 400_000, 256_000, 0),
            Decision::Renew {
                capacity: planned(256_000)
            }
        );
        assert_eq!(measured(kept, 320_000, 256_000, 0), kept);
        // A reservation is never given back, and other decisions stand.
        assert_eq!(measured(kept, 400_000, 256_000, 400_000), kept);
        let planned_keep = Decision::Keep { plan: 9 };
        assert_eq!(measured(planned_keep, 400_000, 1, 0), planned_keep);
    }

    /// A cycle of `now` bytes, nothing hidden, on a largest chunk of `largest` bytes.
    fn cycle(now: usize, largest: usize) -> Cycle {
        Cycle {
            now,
            bound: 0,
            probed: None,
            largest,
            held: largest.saturating_mul(3),
            reserved: 0,
        }
    }

    /// Cycles of `need` bytes that fit the largest chunk, one after another from `largest`: a
    /// renewal takes a chunk of its capacity rounded up as chunks are (at most an eighth and a
    /// page more), and a probe is met when the cycle reaches it. Returns the plans.
    fn steady(recent: &mut Recent, mut largest: usize, need: usize, cycles: usize) -> Vec<Plan> {
        let mut probe: Option<usize> = None;
        let mut plans = Vec::new();
        for _ in 0..cycles {
            let p = plan(
                recent,
                Cycle {
                    probed: probe.map(|at| need > at),
                    ..cycle(need, largest)
                },
            );
            probe = match p {
                Plan::Keep { probe, .. } => probe,
                Plan::Renew { capacity, .. } => {
                    largest = capacity + capacity / 8;
                    None
                }
                Plan::Reuse => None,
            };
            plans.push(p);
        }
        plans
    }

    /// `plans` renew a chunk for `need`, then keep it as it is.
    #[track_caller]
    fn renewed_then_kept(plans: &[Plan], need: usize) {
        assert_eq!(
            plans[0],
            Plan::Renew {
                capacity: planned(need),
                probe: None
            }
        );
        let kept = Plan::Keep {
            plan: 0,
            probe: None,
        };
        assert!(plans[1..].iter().all(|&p| p == kept), "{plans:?}");
    }

    #[test]
    fn a_fresh_arena_reuses_its_chunks_once_then_renews_them_into_one() {
        let mut r = Recent::new();
        // The first cycle outgrew its largest chunk (a fresh arena's chunks grow by half): the
        // reset keeps them all, and the next cycle, which needs the same, runs in them.
        let plans = steady(&mut r, 40_000, 100_000, 4);
        assert_eq!(plans[0], Plan::Reuse);
        renewed_then_kept(&plans[1..], 100_000);
        // Once only, and never after a renewal: a later cycle that outgrows the chunk renews.
        assert_eq!(
            plan(&mut r, cycle(400_000, 200_000)),
            Plan::Renew {
                capacity: 400_000 + 400_000 / 4,
                probe: None
            }
        );
        let mut fresh = Recent::new();
        let hid = Cycle {
            bound: 110_000,
            ..cycle(100_000, 40_000)
        };
        assert!(matches!(plan(&mut fresh, hid), Plan::Renew { .. }));
        // Nor for a need the chunks together do not hold (large blocks, which a reset frees).
        let in_large_blocks = Cycle {
            held: 60_000,
            ..cycle(100_000, 40_000)
        };
        assert!(matches!(
            plan(&mut Recent::new(), in_large_blocks),
            Plan::Renew { .. }
        ));
    }

    #[test]
    fn a_steady_loop_keeps_its_chunk() {
        let mut r = Recent::new();
        let plans = steady(&mut r, 150_000, 100_000, 6);
        assert!(plans.iter().all(|&p| p
            == Plan::Keep {
                plan: 0,
                probe: None
            }));
    }

    #[test]
    fn an_oversized_chunk_is_probed_then_renewed_then_kept() {
        let mut r = Recent::new();
        let plans = steady(&mut r, 16 << 20, 100_000, 4);
        // The window remembers nothing larger: the first reset probes where a renewal would end,
        // the probed cycle renews, and the renewed chunk is kept from then on.
        assert_eq!(
            plans[0],
            Plan::Keep {
                plan: 0,
                probe: Some(planned(100_000))
            }
        );
        renewed_then_kept(&plans[1..], 100_000);
    }

    #[test]
    fn after_a_spike_the_chunk_comes_back_within_the_window_and_a_probe() {
        let mut r = Recent::new();
        // A spike of 10 MB on a chunk that held it, then cycles of 100 KB.
        assert_eq!(
            plan(&mut r, cycle(10 << 20, 11 << 20)),
            Plan::Keep {
                plan: 0,
                probe: None
            }
        );
        let plans = steady(&mut r, 11 << 20, 100_000, WINDOW + 3);
        let renewed = plans
            .iter()
            .position(|p| matches!(p, Plan::Renew { .. }))
            .expect("renewed");
        assert!(renewed <= WINDOW, "{plans:?}");
        assert!(plans[renewed + 1..].iter().all(|&p| p
            == Plan::Keep {
                plan: 0,
                probe: None
            }));
    }

    #[test]
    fn a_hidden_need_is_renewed_for_its_bound_with_a_probe_at_what_is_known() {
        let mut r = Recent::new();
        let p = plan(
            &mut r,
            Cycle {
                bound: 300_000,
                ..cycle(100_000, 150_000)
            },
        );
        assert_eq!(
            p,
            Plan::Renew {
                capacity: planned(300_000),
                probe: Some(100_000)
            }
        );
    }

    #[test]
    fn a_reservation_is_never_given_back() {
        let mut r = Recent::new();
        let p = plan(
            &mut r,
            Cycle {
                reserved: 1 << 20,
                ..cycle(1_000, 1 << 20)
            },
        );
        assert_eq!(
            p,
            Plan::Keep {
                plan: 0,
                probe: None
            }
        );
    }

    #[test]
    fn decisions() {
        let slack = 2 * LARGE_THRESHOLD;
        // A chunk that holds the need, within the slack: kept.
        assert_eq!(
            decide(70_000, false, 64_000, 64_000, 0),
            Decision::Keep { plan: 0 }
        );
        assert_eq!(
            decide(64_000 + slack, false, 64_000, 64_000, 0),
            Decision::Keep { plan: 0 }
        );
        // A big need keeps a chunk up to 1.5x.
        assert_eq!(
            decide(1_500_000, false, 1_000_000, 1_000_000, 0),
            Decision::Keep { plan: 0 }
        );
        // Oversized: renewed for the window's need and a sixteenth, or the reservation.
        assert_eq!(
            decide(16 << 20, false, 64_000, 64_000, 0),
            Decision::Renew { capacity: 68_000 }
        );
        assert_eq!(
            decide(16 << 20, false, 64_000, 64_000, 1 << 20),
            Decision::Renew { capacity: 1 << 20 }
        );
        assert_eq!(
            decide(16 << 20, false, 64_000, 64_000, 16 << 20),
            Decision::Keep { plan: 0 }
        );
        // The cycle outgrew the chunk, by at most three times: renewed now.
        assert_eq!(
            decide(32_000, false, 40_000, 48_000, 0),
            Decision::Renew { capacity: 51_000 }
        );
        // ... a quarter more when the chunk outgrown was one a reset took.
        assert_eq!(
            decide(32_000, true, 40_000, 48_000, 0),
            Decision::Renew { capacity: 60_000 }
        );
        // By more: the next chunk is planned.
        assert_eq!(
            decide(32_000, false, 160_000, 160_000, 0),
            Decision::Keep { plan: 170_000 }
        );
    }
}
