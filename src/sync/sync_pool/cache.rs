//! The per-thread caches of a [`SyncPool`](super::SyncPool): each thread keeps, for each pool it
//! uses, a small stack of free slots (a *cache*), so that an allocation and a same-thread free
//! take no lock and no atomic read-modify-write; slots move between a cache and the shards in
//! batches.
//!
//! # Who touches a cache
//! - Its **owner thread** pushes and pops slots with plain loads and stores (the count is an
//!   atomic only so that [`Registry::cached`] may read it from another thread).
//! - The **pool**, through its [`Registry`] and under the registry's lock: `stats` reads the
//!   counts; `trim`, `reset` and drop (which hold the pool exclusively, so that no thread is
//!   inside it) take every slot back; a thread refilling its own cache takes the slots of an
//!   orphan (below).
//! - At **thread exit** the owner's thread-local destructor gives each of its caches to the
//!   pool, under the registry's lock: an empty cache is unlinked and freed, a cache that holds
//!   slots stays in the pool's list as an *orphan* whose slots the pool owns from then on
//!   (refills take them; `trim` and drop take them back). The destructor never touches the
//!   shards, so the registry's lock is never held while a shard's is waited for, except by the
//!   exclusive operations, which no other thread can be inside.
//! - Once the pool is dropped its registry is marked dead: a thread frees its caches of a dead
//!   pool (at exit, or when it next makes a cache), and the registry itself goes when its last
//!   cache does. A cache never holds a slot of a dropped pool: drop empties every cache first.
//!
//! # Which cache is whose
//! A thread finds its cache of a pool by the address of the pool's registry. That address is not
//! reused while the thread holds a cache of it: every cache counts as a reference to its
//! registry, which is freed only when the pool and all its caches are gone.

use core::alloc::Layout;
use core::cell::{Cell, UnsafeCell};
use core::ptr::{self, NonNull};

use allocator_api2::alloc::{Allocator, Global};

use super::super::shim::{AtomicBool, AtomicUsize, Mutex, Ordering};

/// Slots a cache holds at most (a power of two; small under loom, so that the models reach a
/// flush and a refill in a few steps).
pub(super) const CAP: usize = if cfg!(loom) { 4 } else { 64 };
/// Slots moved between a cache and the shards at a time: a refill takes up to this many, a
/// full cache gives this many back (its oldest) and keeps the rest.
pub(super) const BATCH: usize = CAP / 2;

/// A pool's list of the caches of the threads that used it, and its reference count.
pub(super) struct Registry {
    /// The caches (through their `next` and `prev` links), under the lock.
    list: Mutex<List>,
    /// Orphans in the list (changed under the lock; read without it as a hint by refills).
    orphans: AtomicUsize,
    /// Cleared (under the lock, with `Release`) when the pool is dropped, after its last use
    /// of any cache; a thread that reads it cleared (`Acquire`) may free its caches.
    alive: AtomicBool,
    /// The pool and every cache of the pool hold one reference each.
    refs: AtomicUsize,
}

struct List {
    head: *mut Cache,
}

// SAFETY: the list's caches are reached only under the registry's lock (or by their owner
// thread, for the fields the lock does not cover), whichever thread holds it.
unsafe impl Send for List {}

/// A counted reference to a [`Registry`] (the pool's, or a cache's).
pub(super) struct RegistryRef(NonNull<Registry>);

// SAFETY: a registry is shared by threads only through its lock and atomics.
unsafe impl Send for RegistryRef {}
// SAFETY: as above.
unsafe impl Sync for RegistryRef {}

impl RegistryRef {
    /// A new registry with no cache; `None` when it cannot be allocated.
    pub(super) fn new() -> Option<RegistryRef> {
        let block = Global.allocate(Layout::new::<Registry>()).ok()?;
        let registry = block.cast::<Registry>();
        // SAFETY: a fresh block for one `Registry`.
        unsafe {
            registry.as_ptr().write(Registry {
                list: Mutex::new(List {
                    head: ptr::null_mut(),
                }),
                orphans: AtomicUsize::new(0),
                alive: AtomicBool::new(true),
                refs: AtomicUsize::new(1),
            });
        }
        Some(RegistryRef(registry))
    }

    /// The key a thread finds its cache of this pool by (see the module documentation).
    #[inline(always)]
    pub(super) fn key(&self) -> usize {
        self.0.addr().get()
    }

    fn share(&self) -> RegistryRef {
        // Relaxed: a new reference is made from one that is held.
        self.refs.fetch_add(1, Ordering::Relaxed);
        RegistryRef(self.0)
    }

    /// Every slot cached for this pool (by live threads and orphans), under the lock: exact when
    /// no thread is inside the pool.
    pub(super) fn cached(&self) -> usize {
        let list = self.list.lock();
        let mut n = 0;
        // SAFETY: the list's caches are alive while they are linked, and their links and counts
        // are read under the lock.
        unsafe { for_each(&list, |c| n += (*c).len.load(Ordering::Relaxed)) };
        n
    }

    /// Moves the slots of an orphan (as many as fit) into `cache`, the calling thread's own;
    /// returns how many. An orphan left empty is unlinked and freed.
    pub(super) fn adopt(&self, cache: &Cache) -> usize {
        // Relaxed: a hint; an orphan missed here is taken by a later refill, `trim` or drop.
        if self.orphans.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        let mut emptied: *mut Cache = ptr::null_mut();
        let moved = {
            let mut list = self.list.lock();
            let mut orphan: *mut Cache = ptr::null_mut();
            // SAFETY: as in `cached`.
            unsafe {
                for_each(&list, |c| {
                    if orphan.is_null() && (*c).orphan.get() {
                        orphan = c;
                    }
                })
            };
            if orphan.is_null() {
                0
            } else {
                // SAFETY: a linked orphan: its slots are the pool's, reached under the lock;
                // `cache` is this thread's own.
                unsafe {
                    let have = cache.len();
                    let theirs = (*orphan).len.load(Ordering::Relaxed);
                    let n = theirs.min(CAP - have);
                    ptr::copy_nonoverlapping(
                        (*orphan).slot_ptr(theirs - n),
                        cache.slot_ptr(have),
                        n,
                    );
                    (*orphan).len.store(theirs - n, Ordering::Relaxed);
                    cache.len.store(have + n, Ordering::Relaxed);
                    if theirs == n {
                        unlink(&mut list, orphan);
                        self.orphans.fetch_sub(1, Ordering::Relaxed);
                        emptied = orphan;
                    }
                    n
                }
            }
        };
        if !emptied.is_null() {
            // SAFETY: unlinked above, so no one else reaches it; its owner thread has exited.
            unsafe { free_cache(emptied) };
        }
        moved
    }

    /// Takes every cached slot back (handing each to `give`), and frees the orphans. For the
    /// pool's exclusive operations: no thread is inside the pool, so no owner touches its cache
    /// meanwhile; a thread that exits meanwhile waits for the lock. With `dead`, the registry is
    /// marked dead and emptied too: the owners of the caches still linked free them.
    pub(super) fn take_back(&self, dead: bool, mut give: impl FnMut(NonNull<u8>)) {
        let mut orphans: *mut Cache = ptr::null_mut();
        {
            let mut list = self.list.lock();
            let mut c = list.head;
            while !c.is_null() {
                // SAFETY: a linked cache (see `cached`); its owner is not inside the pool, or
                // has exited (an orphan), and its slots are live slots of the pool.
                unsafe {
                    let next = (*c).next.get();
                    let n = (*c).len.load(Ordering::Relaxed);
                    for i in 0..n {
                        give((*c).slot_ptr(i).read());
                    }
                    (*c).len.store(0, Ordering::Relaxed);
                    if (*c).orphan.get() || dead {
                        unlink(&mut list, c);
                    }
                    if (*c).orphan.get() {
                        // Kept on a list of its own (through `next`), freed below.
                        (*c).next.set(orphans);
                        orphans = c;
                    }
                    c = next;
                }
            }
            self.orphans.store(0, Ordering::Relaxed);
            if dead {
                self.alive.store(false, Ordering::Release);
            }
        }
        while !orphans.is_null() {
            // SAFETY: unlinked above; their owner threads have exited.
            unsafe {
                let next = (*orphans).next.get();
                free_cache(orphans);
                orphans = next;
            }
        }
    }
}

impl core::ops::Deref for RegistryRef {
    type Target = Registry;

    #[inline(always)]
    fn deref(&self) -> &Registry {
        // SAFETY: alive while a reference is held.
        unsafe { self.0.as_ref() }
    }
}

impl Drop for RegistryRef {
    fn drop(&mut self) {
        // AcqRel: the last holder sees every other holder's uses as done before it frees.
        if self.refs.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: the last reference: no one else reaches the registry.
            unsafe {
                ptr::drop_in_place(self.0.as_ptr());
                Global.deallocate(self.0.cast(), Layout::new::<Registry>());
            }
        }
    }
}

/// Runs `f` on every cache of the list.
///
/// # Safety
/// The caller holds the registry's lock (`list` is its guarded data).
unsafe fn for_each(list: &List, mut f: impl FnMut(*mut Cache)) {
    let mut c = list.head;
    while !c.is_null() {
        f(c);
        // SAFETY: linked caches are alive; links are read under the lock.
        c = unsafe { (*c).next.get() };
    }
}

/// Unlinks `c` from the list.
///
/// # Safety
/// The caller holds the registry's lock; `c` is linked in `list`.
unsafe fn unlink(list: &mut List, c: *mut Cache) {
    // SAFETY: `c` and its neighbours are linked, alive, and reached under the lock.
    unsafe {
        let (prev, next) = ((*c).prev.get(), (*c).next.get());
        if prev.is_null() {
            list.head = next;
        } else {
            (*prev).next.set(next);
        }
        if !next.is_null() {
            (*next).prev.set(prev);
        }
        (*c).prev.set(ptr::null_mut());
        (*c).next.set(ptr::null_mut());
    }
}

/// One thread's cache of one pool's free slots.
pub(super) struct Cache {
    /// Slots held: `slots[..len]`. Written by the owner (a plain load and store, no
    /// read-modify-write), or under the registry's lock while the owner cannot use it.
    len: AtomicUsize,
    slots: UnsafeCell<[NonNull<u8>; CAP]>,
    /// Owner only: the shard that took the last slot given back (tried first next time).
    pub(super) hint: Cell<usize>,
    /// Owner only: the next cache of the owner thread's list.
    thread_next: Cell<*mut Cache>,
    /// Under the registry's lock: the pool's list, and whether the owner has exited.
    next: Cell<*mut Cache>,
    prev: Cell<*mut Cache>,
    orphan: Cell<bool>,
    registry: RegistryRef,
}

impl Cache {
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        // Relaxed: the count is the owner's, or read under the lock.
        self.len.load(Ordering::Relaxed)
    }

    /// Owner: the count, with a plain load: only the owner writes it while the owner can use
    /// the cache (the pool's exclusive operations write it when no thread is inside the pool,
    /// and the owner's next use of the pool comes after them), so the load races no write;
    /// the statistics' concurrent loads are reads too. (Loom sees the atomic load.)
    #[inline(always)]
    fn owner_len(&self) -> usize {
        #[cfg(not(loom))]
        // SAFETY: a read of the owner's count that races no write (see above).
        return unsafe { *self.len.as_ptr() };
        #[cfg(loom)]
        return self.len();
    }

    /// Owner: sets the count, as a relaxed atomic store (the statistics read it from other
    /// threads).
    ///
    /// On x86-64 it is the store instruction itself, in an `asm!` block: the compiler treats
    /// an atomic access of Rust's as touching all memory, so one on the fast path would keep the
    /// caller's value for a new block on the stack until after the allocation, then copy it into
    /// the slot, where an `asm!` block is treated as a call, which cannot touch the caller's
    /// stack values whose address it is not given. An aligned word store is atomic on x86-64.
    /// (Loom, miri and ThreadSanitizer see the atomic itself.)
    #[inline(always)]
    fn set_owner_len(&self, n: usize) {
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri), not(arena_pool_tsan)))]
        // SAFETY: an aligned store of a word to the `AtomicUsize` (`len` of this `Cache`),
        // atomic on x86-64 as a relaxed store is; the asm touches nothing else.
        unsafe {
            core::arch::asm!(
                "mov qword ptr [{c} + {off}], {n}",
                c = in(reg) ptr::from_ref(self),
                off = const core::mem::offset_of!(Cache, len),
                n = in(reg) n,
                options(nostack, preserves_flags)
            );
        }
        #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri), not(arena_pool_tsan))))]
        self.len.store(n, Ordering::Relaxed);
    }

    /// A pointer to slot entry `i` (`i <= CAP`).
    #[inline(always)]
    fn slot_ptr(&self, i: usize) -> *mut NonNull<u8> {
        debug_assert!(i <= CAP);
        // SAFETY: within the array or one past its end.
        unsafe { self.slots.get().cast::<NonNull<u8>>().add(i) }
    }

    /// Owner: the most recently cached slot, if any.
    #[inline(always)]
    pub(super) fn pop(&self) -> Option<NonNull<u8>> {
        let n = self.owner_len().checked_sub(1)?;
        // SAFETY: entries below `len` hold slots (`n < len`); only the owner changes them now.
        let p = unsafe { self.slot_ptr(n).read() };
        self.set_owner_len(n);
        Some(p)
    }

    /// Owner: caches `p`; `false` (and nothing done) when the cache is full.
    #[inline(always)]
    fn push(&self, p: NonNull<u8>) -> bool {
        let n = self.owner_len();
        if n == CAP {
            return false;
        }
        // SAFETY: `n < CAP`; only the owner changes the entries now.
        unsafe { self.slot_ptr(n).write(p) };
        self.set_owner_len(n + 1);
        true
    }

    /// Owner: caches `p` (the caller made room).
    pub(super) fn push_slow(&self, p: NonNull<u8>) {
        let pushed = self.push(p);
        debug_assert!(pushed, "the cache was not emptied");
    }

    /// Owner: fills `out` with the slots to give back when the cache is full (the oldest
    /// [`BATCH`], the most recent are kept); returns how many.
    pub(super) fn take_oldest(&self, out: &mut [NonNull<u8>; BATCH]) -> usize {
        let n = self.len();
        let k = n.min(BATCH);
        // SAFETY: entries below `n` hold slots; the `n - k` kept move down over the `k` taken.
        unsafe {
            ptr::copy_nonoverlapping(self.slot_ptr(0), out.as_mut_ptr(), k);
            ptr::copy(self.slot_ptr(k), self.slot_ptr(0), n - k);
        }
        self.len.store(n - k, Ordering::Relaxed);
        k
    }

    /// Debug builds: whether `p` is cached here already (a double free on this thread).
    #[cfg(debug_assertions)]
    pub(super) fn holds(&self, p: NonNull<u8>) -> bool {
        // SAFETY: entries below `len` hold slots; read by the owner.
        (0..self.len()).any(|i| unsafe { self.slot_ptr(i).read() } == p)
    }
}

/// Frees a cache that no list reaches any more (dropping its registry reference).
///
/// # Safety
/// `c` came from [`make_cache`] and is reached by no one else.
unsafe fn free_cache(c: *mut Cache) {
    // SAFETY: forwarded from the caller.
    unsafe {
        ptr::drop_in_place(c);
        Global.deallocate(NonNull::new_unchecked(c).cast(), Layout::new::<Cache>());
    }
}

/// A new cache of the pool of `registry`, linked in its list; `None` when it cannot be
/// allocated.
fn make_cache(registry: &RegistryRef) -> Option<*mut Cache> {
    let block = Global.allocate(Layout::new::<Cache>()).ok()?;
    let c = block.cast::<Cache>().as_ptr();
    // SAFETY: a fresh block for one `Cache`.
    unsafe {
        c.write(Cache {
            len: AtomicUsize::new(0),
            slots: UnsafeCell::new([NonNull::dangling(); CAP]),
            hint: Cell::new(0),
            thread_next: Cell::new(ptr::null_mut()),
            next: Cell::new(ptr::null_mut()),
            prev: Cell::new(ptr::null_mut()),
            orphan: Cell::new(false),
            registry: registry.share(),
        });
    }
    let mut list = registry.list.lock();
    // SAFETY: the new cache and the list's head are linked under the lock.
    unsafe {
        (*c).next.set(list.head);
        if !list.head.is_null() {
            (*list.head).prev.set(c);
        }
    }
    list.head = c;
    Some(c)
}

/// The calling thread's fast-path state: the cache it used last, with its pool's key.
#[derive(Clone, Copy)]
struct Fast {
    /// The registry key of `cache`'s pool; 0 (no pool) while the thread is `busy`.
    key: usize,
    /// One of this thread's caches (held by its list) when `key` is not 0.
    cache: *mut Cache,
    /// Set while the thread moves slots between a cache and the shards (it may call the
    /// backing allocator meanwhile, which may use a pool on this thread: such a nested call
    /// bypasses the caches), and for good once its caches are given up at exit.
    busy: bool,
}

impl Fast {
    const IDLE: Fast = Fast {
        key: 0,
        cache: ptr::null_mut(),
        busy: false,
    };
    const BUSY: Fast = Fast {
        key: 0,
        cache: ptr::null_mut(),
        busy: true,
    };
}

/// The calling thread's caches (through `thread_next`); dropped at thread exit.
struct Local {
    head: Cell<*mut Cache>,
}

impl Drop for Local {
    /// Gives every cache of the exiting thread to its pool (see the module documentation).
    fn drop(&mut self) {
        let _ = FAST.try_with(|f| f.set(Fast::BUSY));
        let mut c = self.head.replace(ptr::null_mut());
        while !c.is_null() {
            // SAFETY: the thread's own caches, alive until freed here or by their pool (which
            // frees only orphans, and these become orphans here, after their last use).
            unsafe {
                let next = (*c).thread_next.get();
                give_up(c);
                c = next;
            }
        }
    }
}

/// The exiting owner's cache `c` goes to its pool: freed when empty or when the pool is gone,
/// left in the pool's list as an orphan otherwise.
///
/// # Safety
/// `c` is the calling thread's cache, not used by it again.
unsafe fn give_up(c: *mut Cache) {
    // SAFETY: alive (see above); its registry is alive while it holds a reference.
    let free = unsafe {
        let registry = &(*c).registry;
        let mut list = registry.list.lock();
        if !registry.alive.load(Ordering::Relaxed) {
            true
        } else if (*c).len() == 0 {
            unlink(&mut list, c);
            true
        } else {
            (*c).orphan.set(true);
            registry.orphans.fetch_add(1, Ordering::Relaxed);
            false
        }
    };
    if free {
        // SAFETY: unlinked, or its pool is gone (and no longer reaches it).
        unsafe { free_cache(c) };
    }
}

#[cfg(not(loom))]
std::thread_local! {
    static FAST: Cell<Fast> = const { Cell::new(Fast::IDLE) };
    static LOCAL: Local = const { Local { head: Cell::new(ptr::null_mut()) } };
}

#[cfg(loom)]
loom::thread_local! {
    static FAST: Cell<Fast> = Cell::new(Fast::IDLE);
    static LOCAL: Local = Local { head: Cell::new(ptr::null_mut()) };
}

/// Fast path: a slot from the calling thread's cache of the pool `key`, if it used that pool
/// last and the cache holds one.
#[inline(always)]
pub(super) fn pop(key: usize) -> Option<NonNull<u8>> {
    FAST.try_with(|f| {
        let fast = f.get();
        if fast.key != key {
            return None;
        }
        // SAFETY: `fast.cache` is this thread's cache of the pool (see `Fast`).
        unsafe { (*fast.cache).pop() }
    })
    .ok()
    .flatten()
}

/// Fast path: caches slot `p` in the calling thread's cache of the pool `key`; `false` when
/// that is not the cache used last or it is full.
#[inline(always)]
pub(super) fn push(key: usize, p: NonNull<u8>) -> bool {
    FAST.try_with(|f| {
        let fast = f.get();
        if fast.key != key {
            return false;
        }
        // SAFETY: as in `pop`.
        let cache = unsafe { &*fast.cache };
        #[cfg(debug_assertions)]
        if cache.holds(p) {
            panic!("arena-pool: SyncPool::deallocate: double free of {p:p}");
        }
        cache.push(p)
    })
    .unwrap_or(false)
}

/// The calling thread's cache of the pool of `registry`, made if needed, with the thread
/// marked busy until the guard is dropped; `None` when the thread is busy already (a nested
/// call), has given up its caches (it is exiting), or a cache cannot be made.
pub(super) fn enter(registry: &RegistryRef) -> Option<Busy> {
    let fast = FAST.try_with(Cell::get).ok()?;
    if fast.busy {
        return None;
    }
    let key = registry.key();
    // Busy from here: finding or making a cache allocates, and the allocator may use a pool.
    let _ = FAST.try_with(|f| f.set(Fast::BUSY));
    let cache = if fast.key == key {
        Some(fast.cache)
    } else {
        LOCAL
            .try_with(|local| find_or_make(local, registry))
            .ok()
            .flatten()
    };
    match cache {
        Some(cache) => Some(Busy { key, cache }),
        None => {
            // Not `fast` itself: its cache may have been freed on the way (its pool was gone).
            let _ = FAST.try_with(|f| f.set(Fast::IDLE));
            None
        }
    }
}

/// The thread's cache of `registry`'s pool, made if it has none. Caches of dropped pools are
/// freed on the way.
fn find_or_make(local: &Local, registry: &RegistryRef) -> Option<*mut Cache> {
    let key = registry.key();
    let mut link: &Cell<*mut Cache> = &local.head;
    loop {
        let c = link.get();
        if c.is_null() {
            break;
        }
        // SAFETY: the thread's own caches are alive while on its list.
        let cache = unsafe { &*c };
        if cache.registry.key() == key {
            return Some(c);
        }
        // Acquire: the pool's last use of the cache happened before it was marked dead.
        if !cache.registry.alive.load(Ordering::Acquire) {
            link.set(cache.thread_next.get());
            // SAFETY: off the thread's list; the dead pool no longer reaches it.
            unsafe { free_cache(c) };
            continue;
        }
        link = &cache.thread_next;
    }
    let c = make_cache(registry)?;
    // SAFETY: new, this thread's.
    unsafe { (*c).thread_next.set(local.head.get()) };
    local.head.set(c);
    Some(c)
}

/// The calling thread's cache, while the thread is busy moving slots (see [`enter`]).
pub(super) struct Busy {
    key: usize,
    cache: *mut Cache,
}

impl Busy {
    pub(super) fn cache(&self) -> &Cache {
        // SAFETY: this thread's cache, alive while on its list (the thread is not exiting: its
        // list is given up only with the thread marked busy for good).
        unsafe { &*self.cache }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = FAST.try_with(|f| {
            f.set(Fast {
                key: self.key,
                cache: self.cache,
                busy: false,
            })
        });
    }
}
