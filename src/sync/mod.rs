//! The thread-safe types: [`SyncArena`] (with its per-thread [`LocalArena`] handles) and
//! [`SyncPool`]. They need the `std` feature (locks and thread-locals).
//!
//! # Which one
//! | need | use |
//! |---|---|
//! | one result built by many threads (parallel parsing, jobs), freed at once | [`SyncArena`], each thread through [`SyncArena::local`] |
//! | allocations from any thread, with no handle to keep (`par_iter().map(\|x\| arena.alloc(x))`) | `&SyncArena` directly (each thread bumps a piece of its own) |
//! | each thread's own scratch, never shared | one [`Arena`](crate::Arena) per thread (no atomics, scopes, reset per thread) |
//! | many objects of one type, freed one by one on any thread | [`SyncPool`] |
//!
//! # Memory orderings
//! - `SyncArena::current` (the chunk being bumped) is stored with `Release` after the chunk's
//!   header is written, under the lock, and loaded with `Acquire`, so a thread that sees a chunk
//!   sees its header.
//! - A chunk's cursor moves forward by compare-and-swap with `Acquire` on success, and back (a
//!   block or a `LocalArena`'s unused tail given back) with `Release`: a thread that receives
//!   bytes another thread gave back sees that thread's last writes to them as done. A failed
//!   compare-and-swap is `Relaxed`: it only retries.
//! - A thread's piece of the shared path (`thread_piece`) is bumped with plain loads and stores:
//!   its bytes were taken from a chunk by the thread's own compare-and-swap (`Acquire`), and no
//!   other thread bumps them. A piece is used only while the arena's key is the one it was taken
//!   under, which only `&mut SyncArena` renews.
//! - Chunks are freed only through `&mut SyncArena` (`reset`, `trim`) or drop, so a thread never
//!   bumps a chunk that is being freed.
//! - A thread without the lock reaches a chunk's header only through its atomics and its size
//!   (written before the chunk is published, fixed after); the chunk lists (each chunk's `next`)
//!   are read and written only under the lock or `&mut SyncArena`.
//! - A large block's header is read without the lock only while no list holds it: threads relink
//!   the list under the lock, which writes the headers of the blocks next to theirs, so what a
//!   caller needs of a block is read before it is linked.
//! - `SyncPool` has no lock-free structure: each shard's `Mutex` orders every use of its slots,
//!   and the registry's lock every use of a thread's cache by another thread (the statistics,
//!   `trim`, `reset`, drop, a thread's exit). A cache's owner updates its count with `Relaxed`
//!   stores: another thread reads it exactly only when something else orders the owner's last use
//!   before the read (a join, the `&mut` of `trim`); the registry's `alive` flag is cleared with
//!   `Release` after the pool's last use of the caches and read with `Acquire` by a thread that
//!   frees its cache of a dead pool.

mod local;
mod shim;
mod sync_arena;
mod sync_pool;

pub use local::LocalArena;
pub(crate) use sync_arena::SharedCheckpoint;
pub use sync_arena::{SyncArena, SyncScopeGuard};
pub use sync_pool::SyncPool;
