//! Object churn on the pools. First a `Pool` of connections: `Box<Connection, &Pool>` handles are
//! opened and closed in a deterministic pseudo-random order for many rounds; once the number of
//! live connections stabilises, `pool.capacity()` stops growing, because every freed slot is
//! handed out again (the objects only ever occupy as many addresses as were live at once). Then a `SizeClassPool`
//! under `hashbrown::HashMap` + `Vec` churn: when the load drops, the pages it holds
//! (`stats().pages`) follow the live set down, while a `Pool` keeps its slabs until `trim`.
//!
//! Run with `cargo run --release --example object_pool`.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use std::collections::HashSet;

use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{Pool, SizeClassPool, SizeClassStats};
use hashbrown::{DefaultHashBuilder, HashMap};

/// A tiny deterministic generator (xorshift64), so every run churns in the same order.
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

    /// A value in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[allow(dead_code)] // the fields stand for a real connection's state
struct Connection {
    id: u64,
    peer: [u8; 16],
    port: u16,
    bytes_in: u64,
    bytes_out: u64,
    buffer: [u8; 128],
}

const ROUNDS: usize = 400;
/// Rounds during which the number of live connections ramps up to its plateau.
const RAMP: usize = 40;
const PLATEAU: usize = 2_000;

/// How many connections should be live in `round`: a ramp, then a noisy plateau.
fn target_live(round: usize, rng: &mut XorShift) -> usize {
    if round < RAMP {
        PLATEAU * (round + 1) / RAMP
    } else {
        PLATEAU - rng.below(PLATEAU / 10)
    }
}

fn pool_churn() {
    println!("== Pool: Box<Connection, &Pool> churn ==");
    let mut pool = Pool::for_type::<Connection>();
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut live: std::vec::Vec<Box<Connection, &Pool>> = std::vec::Vec::new();
    let mut addresses = HashSet::new();
    let (mut opened, mut closed) = (0u64, 0u64);
    let mut capacity_at_ramp_end = 0;
    let (mut prev_capacity, mut last_growth) = (0, 0);
    let (mut reopened, mut reused_at_once) = (0, 0);
    let mut peak_live = 0;

    for round in 0..ROUNDS {
        let target = target_live(round, &mut rng);
        // Every round closes some random connections and opens new ones, so the slots are
        // freed and reused in a scrambled order even when the live count barely moves.
        let to_close = rng.below(live.len() / 4 + 1);
        for _ in 0..to_close {
            let i = rng.below(live.len());
            let gone = live.swap_remove(i);
            let freed = &*gone as *const Connection;
            drop(gone);
            closed += 1;
            if rng.below(8) == 0 && live.len() < target {
                // A freed slot is the very next one handed out.
                let c = open(&pool, &mut opened, &mut rng);
                reopened += 1;
                if core::ptr::eq(&*c, freed) {
                    reused_at_once += 1;
                }
                addresses.insert(&*c as *const Connection as usize);
                live.push(c);
            }
        }
        while live.len() < target {
            let c = open(&pool, &mut opened, &mut rng);
            addresses.insert(&*c as *const Connection as usize);
            live.push(c);
        }
        while live.len() > target {
            live.swap_remove(rng.below(live.len()));
            closed += 1;
        }
        assert_eq!(pool.in_use(), live.len());
        peak_live = peak_live.max(live.len());

        let capacity = pool.capacity();
        if round + 1 == RAMP {
            capacity_at_ramp_end = capacity;
        }
        if capacity != prev_capacity {
            last_growth = round;
            prev_capacity = capacity;
        }
        if [
            0,
            RAMP / 4,
            RAMP / 2,
            RAMP - 1,
            RAMP,
            ROUNDS / 2,
            ROUNDS - 1,
        ]
        .contains(&round)
        {
            println!(
                "  round {round:>3}: live {:>4}, capacity {:>4}, slabs {}, {:>6} B held",
                live.len(),
                capacity,
                pool.stats().slabs,
                pool.stats().bytes_held
            );
        }
    }

    let stats = pool.stats();
    println!(
        "  {opened} opened, {closed} closed over {ROUNDS} rounds; {} distinct addresses \
         (peak live {peak_live}) for {} slots; {reused_at_once} of {reopened} opens right after a close got the slot just \
         freed",
        addresses.len(),
        stats.capacity
    );
    println!(
        "  capacity last grew in round {last_growth}: {capacity_at_ramp_end} slots at the end \
         of the ramp, {} at the end",
        stats.capacity
    );
    // Capacity stops growing once the live set is stable ...
    assert!(last_growth < RAMP, "capacity grew in round {last_growth}");
    assert_eq!(stats.capacity, capacity_at_ramp_end);
    assert!(stats.capacity < 2 * PLATEAU);
    // ... because freed slots are reused: many more objects than slots, all at known addresses.
    assert!(opened > 10 * stats.capacity as u64);
    assert_eq!(addresses.len(), peak_live); // a new slot only when none was free
    assert!(reopened > 0);
    assert_eq!(reused_at_once, reopened);

    // When the load drops, a `Pool` keeps its slabs (ready for the next peak) ...
    live.truncate(100);
    println!(
        "  load dropped to {} live: capacity {}, {} B held (kept)",
        pool.in_use(),
        pool.capacity(),
        pool.stats().bytes_held
    );
    assert_eq!(pool.capacity(), capacity_at_ramp_end);
    // ... until `trim` (which needs `&mut`, so every Box has ended) gives back the empty ones.
    drop(live);
    pool.trim();
    println!(
        "  all closed and trimmed: capacity {}, {} B held",
        pool.capacity(),
        pool.stats().bytes_held
    );
    assert_eq!(pool.stats().bytes_held, 0);
}

fn open<'p>(pool: &'p Pool, opened: &mut u64, rng: &mut XorShift) -> Box<Connection, &'p Pool> {
    *opened += 1;
    Box::new_in(
        Connection {
            id: *opened,
            peer: [rng.next() as u8; 16],
            port: rng.next() as u16,
            bytes_in: 0,
            bytes_out: 0,
            buffer: [0; 128],
        },
        pool,
    )
}

/// A session on the size-class pool: a growing log and a name, both in the pool.
struct Session<'p> {
    log: Vec<u32, &'p SizeClassPool>,
    name: Vec<u8, &'p SizeClassPool>,
}

type Sessions<'p> = HashMap<u64, Session<'p>, DefaultHashBuilder, &'p SizeClassPool>;

/// Bytes of the blocks in use (class sizes).
fn live_bytes(s: &SizeClassStats) -> usize {
    s.classes().map(|c| c.live * c.block_size).sum()
}

fn print_stats(what: &str, live: usize, s: &SizeClassStats) {
    println!(
        "  {what:<18} {live:>5} sessions, {:>5} blocks, {:>7} B live | {:>2} pages \
         ({} cached empty), {:>7} B held, {} fallback",
        s.live_blocks(),
        live_bytes(s),
        s.pages,
        s.empty_pages,
        s.bytes_held,
        s.fallback_blocks
    );
}

/// Live sessions: the map (in the pool) and their ids, for picking one at random.
struct Server<'p> {
    sessions: Sessions<'p>,
    ids: std::vec::Vec<u64>,
    next_id: u64,
    pool: &'p SizeClassPool,
}

impl<'p> Server<'p> {
    /// Runs `steps` requests with `target` sessions wanted: below it, every request opens a
    /// session; above it, requests close three. Either way each request appends a few events to
    /// a random session's log (which grows through the size classes) and closes a random
    /// session one time in three.
    fn churn(&mut self, target: usize, steps: usize, rng: &mut XorShift) {
        for _ in 0..steps {
            if self.ids.len() < target {
                let id = self.next_id;
                self.next_id += 1;
                let mut name = Vec::new_in(self.pool);
                name.extend_from_slice(format!("session-{id}").as_bytes());
                let log = Vec::new_in(self.pool);
                self.sessions.insert(id, Session { log, name });
                self.ids.push(id);
            }
            if !self.ids.is_empty() {
                let id = self.ids[rng.below(self.ids.len())];
                let log = &mut self.sessions.get_mut(&id).expect("live session").log;
                for _ in 0..rng.below(24) {
                    log.push(rng.next() as u32);
                }
            }
            let close = if self.ids.len() > target {
                3
            } else {
                usize::from(rng.below(3) == 0)
            };
            for _ in 0..close.min(self.ids.len()) {
                let id = self.ids.swap_remove(rng.below(self.ids.len()));
                let closed = self.sessions.remove(&id).expect("live session");
                assert_eq!(closed.name, format!("session-{id}").as_bytes());
            }
        }
    }
}

fn size_class_churn() {
    println!("\n== SizeClassPool: HashMap<u64, Session> + Vec churn ==");
    let mut pool = SizeClassPool::new();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut server = Server {
        sessions: HashMap::new_in(&pool),
        ids: std::vec::Vec::new(),
        next_id: 0,
        pool: &pool,
    };

    server.churn(10_000, 40_000, &mut rng);
    let ramp = pool.stats();
    print_stats("ramp up:", server.ids.len(), &ramp);

    server.churn(10_000, 40_000, &mut rng);
    let high = pool.stats();
    print_stats("high load:", server.ids.len(), &high);

    // The load drops: most sessions close, the table shrinks.
    server.churn(300, 10_000, &mut rng);
    server.sessions.shrink_to_fit();
    let low = pool.stats();
    print_stats("load dropped:", server.ids.len(), &low);
    let classes_in_use = low.classes().filter(|c| c.live > 0).count();
    println!(
        "    pages: {} at high load -> {} ({} in use by {classes_in_use} classes, {} cached empty)",
        high.pages,
        low.pages,
        low.pages - low.empty_pages,
        low.empty_pages
    );
    let per_class: std::vec::Vec<String> = high
        .classes()
        .zip(low.classes())
        .filter(|(h, _)| h.pages > 0)
        .map(|(h, l)| format!("{}: {}->{}", h.block_size, h.pages, l.pages))
        .collect();
    println!(
        "    pages per class (block size: high->low): {}",
        per_class.join(", ")
    );

    server.churn(10_000, 40_000, &mut rng);
    let again = pool.stats();
    print_stats("load returns:", server.ids.len(), &again);

    drop(server);
    let end = pool.stats();
    print_stats("all closed:", 0, &end);
    pool.trim();
    let trimmed = pool.stats();
    print_stats("trimmed:", 0, &trimmed);

    // The pages follow the live set down: each class keeps about a page's worth in use, plus
    // the cache of empty pages (at most `max_empty_pages` largest pages' worth of bytes) ...
    let o = pool.options();
    let cache = o.max_empty_pages * o.page_size;
    assert!(
        low.bytes_held < high.bytes_held / 2,
        "{} -> {} bytes held",
        high.bytes_held,
        low.bytes_held
    );
    assert!(low.empty_bytes <= cache);
    assert!(low.bytes_held - low.empty_bytes <= classes_in_use * o.page_size);
    // ... and up again with the load; when everything is closed only the cache is left, and
    // the one small page (at most 4 KiB) a class may keep formatted for its next block.
    assert!(again.bytes_held > 2 * low.bytes_held);
    assert_eq!(end.live_blocks(), 0);
    assert_eq!(end.fallback_blocks, 0);
    assert!(end.empty_bytes <= cache);
    assert!(end.bytes_held - end.empty_bytes <= end.classes().count() * 4096);
    assert_eq!(trimmed.pages, 0);
}

fn main() {
    pool_churn();
    size_class_churn();
}
