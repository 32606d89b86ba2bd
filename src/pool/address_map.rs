//! An address map: from the address of a block a caller gives back to the pool's own pointer to
//! the slab or page holding it.
//!
//! Why: a pointer a caller passes to `deallocate` may carry a narrower provenance than the pool's
//! (a pointer derived from a `&mut u32` covers 4 bytes only), so the pool must not use it to
//! reach its metadata, nor keep it on a free list when its layout is smaller than the block (the
//! next user may need the whole slot). The map gives back the pool's own pointer for the
//! address; `with_addr` then re-derives the block's pointer with the slab's provenance (strict
//! provenance, miri-clean). A `Pool` skips the map when the layout is the whole slot: the
//! caller's pointer is then valid for the whole slot already.
//!
//! It is an open-addressing hash table (linear probing, backward-shift deletion) keyed by
//! `address >> shift` ("granules" of `1 << shift` bytes, each owned by at most one slab or page,
//! which are aligned to the granule), with a one-entry cache of the last hit. Its memory comes
//! from the pool's backing allocator.

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};

#[derive(Clone, Copy)]
struct Entry {
    /// Granule number + 1; 0 marks an empty entry.
    key: usize,
    base: NonNull<u8>,
}

pub(crate) struct AddressMap {
    shift: u32,
    table: Cell<NonNull<Entry>>,
    /// Capacity: 0 or a power of two.
    cap: Cell<usize>,
    len: Cell<usize>,
    last: Cell<Option<Entry>>,
}

impl AddressMap {
    /// An empty map for granules of `1 << shift` bytes.
    pub(crate) const fn new(shift: u32) -> AddressMap {
        AddressMap {
            shift,
            table: Cell::new(NonNull::dangling()),
            cap: Cell::new(0),
            len: Cell::new(0),
            last: Cell::new(None),
        }
    }

    /// Bytes per granule.
    pub(crate) fn granule(&self) -> usize {
        1 << self.shift
    }

    fn key(&self, addr: usize) -> usize {
        (addr >> self.shift) + 1
    }

    fn slot(&self, key: usize) -> usize {
        let cap = self.cap.get();
        // Fibonacci hashing spreads consecutive granules over the table.
        key.wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize) >> (usize::BITS - cap.trailing_zeros())
    }

    fn entry(&self, i: usize) -> Entry {
        // SAFETY: `i < cap`, and the table holds `cap` initialised entries.
        unsafe { self.table.get().add(i).read() }
    }

    fn set_entry(&self, i: usize, e: Entry) {
        // SAFETY: as in `entry`; the pool is `!Sync`, so nothing races this write.
        unsafe { self.table.get().add(i).write(e) }
    }

    /// The base pointer registered for the granule holding `addr`.
    #[inline]
    pub(crate) fn get(&self, addr: usize) -> Option<NonNull<u8>> {
        let key = self.key(addr);
        if let Some(e) = self.last.get() {
            if e.key == key {
                return Some(e.base);
            }
        }
        self.get_slow(key)
    }

    fn get_slow(&self, key: usize) -> Option<NonNull<u8>> {
        let cap = self.cap.get();
        if cap == 0 {
            return None;
        }
        let mut i = self.slot(key);
        loop {
            let e = self.entry(i);
            if e.key == key {
                self.last.set(Some(e));
                return Some(e.base);
            }
            if e.key == 0 {
                return None;
            }
            i = (i + 1) & (cap - 1);
        }
    }

    /// Registers `granules` granules starting at `base` (aligned to the granule size), all
    /// mapping to `base`.
    pub(crate) fn insert<A: Allocator>(
        &self,
        base: NonNull<u8>,
        granules: usize,
        alloc: &A,
    ) -> Result<(), AllocError> {
        self.reserve(granules, alloc)?;
        // No call into `alloc` from here on: the room reserved is still there.
        let first = base.addr().get() >> self.shift;
        for g in 0..granules {
            self.put(Entry {
                key: first + g + 1,
                base,
            });
        }
        self.len.set(self.len.get() + granules);
        Ok(())
    }

    /// Makes room for `granules` more granules (at most half the table in use), so that an
    /// `insert` of that many makes no call into `alloc` until then.
    ///
    /// Re-entrant: `alloc` may use the pool that owns the map while the table grows, so what
    /// is needed is worked out again after each call into it.
    pub(crate) fn reserve<A: Allocator>(
        &self,
        granules: usize,
        alloc: &A,
    ) -> Result<(), AllocError> {
        loop {
            let needed = self
                .len
                .get()
                .checked_add(granules)
                .and_then(|n| n.checked_mul(2))
                .ok_or(AllocError)?;
            if needed <= self.cap.get() {
                return Ok(());
            }
            self.grow(needed, alloc)?;
        }
    }

    fn put(&self, e: Entry) {
        let mask = self.cap.get() - 1;
        let mut i = self.slot(e.key);
        while self.entry(i).key != 0 {
            i = (i + 1) & mask;
        }
        self.set_entry(i, e);
    }

    /// Calls `f` with the base of every region registered, once each (from the entry of its
    /// first granule, which `insert` requires to be aligned to the granule). `f` must not
    /// change the map.
    pub(crate) fn for_each_base(&self, mut f: impl FnMut(NonNull<u8>)) {
        for i in 0..self.cap.get() {
            let e = self.entry(i);
            if e.key != 0 && e.key - 1 == e.base.addr().get() >> self.shift {
                f(e.base);
            }
        }
    }

    /// Removes the granules registered by `insert(base, granules, _)`.
    pub(crate) fn remove(&self, base: NonNull<u8>, granules: usize) {
        self.last.set(None);
        let first = base.addr().get() >> self.shift;
        let mask = self.cap.get() - 1;
        for g in 0..granules {
            let key = first + g + 1;
            let mut i = self.slot(key);
            while self.entry(i).key != key {
                i = (i + 1) & mask;
            }
            // Backward-shift deletion: move later entries of the probe run into the hole when
            // their home slot does not lie strictly between the hole and them.
            let mut hole = i;
            let mut j = (i + 1) & mask;
            loop {
                let e = self.entry(j);
                if e.key == 0 {
                    break;
                }
                let home = self.slot(e.key);
                let between = if hole <= j {
                    hole < home && home <= j
                } else {
                    hole < home || home <= j
                };
                if !between {
                    self.set_entry(hole, e);
                    hole = j;
                }
                j = (j + 1) & mask;
            }
            self.set_entry(
                hole,
                Entry {
                    key: 0,
                    base: NonNull::dangling(),
                },
            );
        }
        self.len.set(self.len.get() - granules);
    }

    fn grow<A: Allocator>(&self, at_least: usize, alloc: &A) -> Result<(), AllocError> {
        // Four entries at the least: a pool with one slab or page holds a 64-byte table.
        let new_cap = at_least
            .max(4)
            .checked_next_power_of_two()
            .ok_or(AllocError)?;
        let layout = Layout::array::<Entry>(new_cap).map_err(|_| AllocError)?;
        let table = alloc.allocate(layout)?.cast::<Entry>();
        // The table is read only now, after the call: a nested call may have changed it.
        let (old, old_cap) = (self.table.get(), self.cap.get());
        if old_cap >= new_cap {
            // A nested call grew the table as far already.
            // SAFETY: the fresh table came from `alloc` with `layout` and was never used.
            unsafe { alloc.deallocate(table.cast(), layout) };
            return Ok(());
        }
        for i in 0..new_cap {
            // SAFETY: `i < new_cap`, inside the fresh table.
            unsafe {
                table.add(i).write(Entry {
                    key: 0,
                    base: NonNull::dangling(),
                })
            };
        }
        self.table.set(table);
        self.cap.set(new_cap);
        for i in 0..old_cap {
            // SAFETY: `i < old_cap`, inside the old table, which is still allocated.
            let e = unsafe { old.add(i).read() };
            if e.key != 0 {
                self.put(e);
            }
        }
        if old_cap != 0 {
            // SAFETY: the old table came from `alloc` with this layout; the map refers to the
            // new one only (the cache of the last hit holds an entry by value), so a
            // `deallocate` that unwinds leaves the map consistent.
            unsafe {
                alloc.deallocate(
                    old.cast(),
                    Layout::array::<Entry>(old_cap).unwrap_unchecked(),
                )
            };
        }
        Ok(())
    }

    /// Frees the table (for `Drop`): the map is empty and unusable afterwards until reinserted.
    ///
    /// # Safety
    /// `alloc` is the allocator the table came from.
    pub(crate) unsafe fn release<A: Allocator>(&self, alloc: &A) {
        // The map is empty before the table goes to `alloc`, whose `deallocate` may unwind.
        let table = self.table.replace(NonNull::dangling());
        let cap = self.cap.replace(0);
        self.len.set(0);
        self.last.set(None);
        if cap != 0 {
            // SAFETY: the table came from `alloc` with this layout, and the map no longer
            // refers to it.
            unsafe {
                alloc.deallocate(table.cast(), Layout::array::<Entry>(cap).unwrap_unchecked())
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;

    #[test]
    fn insert_get_remove_with_collisions() {
        let map = AddressMap::new(12);
        let base = |g: usize| {
            NonNull::<u8>::dangling().with_addr(core::num::NonZeroUsize::new(g << 12).unwrap())
        };
        for g in 1..200 {
            map.insert(base(g * 3), if g % 5 == 0 { 3 } else { 1 }, &Global)
                .unwrap();
        }
        for g in 1..200 {
            assert_eq!(map.get((g * 3) << 12 | 123), Some(base(g * 3)));
            if g % 5 == 0 {
                assert_eq!(map.get(((g * 3 + 2) << 12) + 5), Some(base(g * 3)));
            }
        }
        for g in (1..200).step_by(2) {
            map.remove(base(g * 3), if g % 5 == 0 { 3 } else { 1 });
        }
        for g in 1..200 {
            let expect = (g % 2 == 0).then(|| base(g * 3));
            assert_eq!(map.get((g * 3) << 12), expect, "granule {g}");
        }
        assert_eq!(map.get(1 << 40), None);
        // SAFETY: the table came from `Global`.
        unsafe { map.release(&Global) };
    }

    /// An allocator that, inside its first `allocate` calls, registers granules in the map the
    /// table being grown belongs to (a pool's backing allocator that uses the pool): every
    /// entry, the nested ones too, is found afterwards, and the count stays exact (before the
    /// fix the outer insert overwrote the nested one's count).
    #[test]
    fn nested_inserts_while_the_table_grows_keep_every_entry() {
        use core::cell::Cell;
        struct Nesting<'m> {
            map: &'m AddressMap,
            nested: Cell<usize>,
        }
        // SAFETY: forwards to `Global`; the nested insert touches only the map.
        unsafe impl Allocator for Nesting<'_> {
            fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
                let k = self.nested.get();
                if k < 3 {
                    self.nested.set(k + 1);
                    let base = NonNull::<u8>::dangling()
                        .with_addr(core::num::NonZeroUsize::new((5000 + 16 * k) << 12).unwrap());
                    self.map.insert(base, 8, self).unwrap();
                }
                Global.allocate(layout)
            }
            unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
                // SAFETY: forwarded from the caller.
                unsafe { Global.deallocate(ptr, layout) }
            }
        }
        let map = AddressMap::new(12);
        let alloc = Nesting {
            map: &map,
            nested: Cell::new(0),
        };
        let base = |g: usize| {
            NonNull::<u8>::dangling().with_addr(core::num::NonZeroUsize::new(g << 12).unwrap())
        };
        for g in 0..20 {
            map.insert(base(10 * g + 1), 5, &alloc).unwrap();
        }
        assert_eq!(map.len.get(), 20 * 5 + 3 * 8);
        for g in 0..20 {
            for k in 0..5 {
                assert_eq!(map.get((10 * g + 1 + k) << 12), Some(base(10 * g + 1)));
            }
        }
        for k in 0..3 {
            for j in 0..8 {
                assert_eq!(
                    map.get((5000 + 16 * k + j) << 12),
                    Some(base(5000 + 16 * k))
                );
            }
        }
        assert!(map.len.get() * 2 <= map.cap.get());
        // SAFETY: the table came from `Global` (through `Nesting`).
        unsafe { map.release(&Global) };
    }
}
