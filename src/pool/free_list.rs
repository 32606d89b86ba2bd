//! An intrusive LIFO free list: the link to the next free slot is stored in the free slot itself.

use core::cell::Cell;
use core::ptr::NonNull;

/// The head of a list of free slots. Each free slot's first word holds the next slot's address
/// (with its provenance), or null at the end.
pub(crate) struct FreeList {
    head: Cell<Option<NonNull<u8>>>,
}

impl FreeList {
    pub(crate) const fn new() -> FreeList {
        FreeList {
            head: Cell::new(None),
        }
    }

    /// Takes the most recently freed slot.
    #[inline(always)]
    pub(crate) fn pop(&self) -> Option<NonNull<u8>> {
        let slot = self.head.get()?;
        // SAFETY: every slot on the list was pushed by `push`, which wrote its link; the slot is
        // free, aligned for a pointer and at least a pointer long (the pool's slot invariant).
        let next = unsafe { slot.cast::<Option<NonNull<u8>>>().read() };
        self.head.set(next);
        Some(slot)
    }

    /// Puts a slot back.
    ///
    /// # Safety
    /// `slot` is a slot of the pool, not in use and not already on the list, aligned for a pointer
    /// and at least a pointer long.
    #[inline(always)]
    pub(crate) unsafe fn push(&self, slot: NonNull<u8>) {
        // The head is stored before the link: in a free-then-allocate loop the next pop reads
        // the head without waiting for the link's store.
        let next = self.head.replace(Some(slot));
        // SAFETY: the caller gives up the slot, which is big and aligned enough for the link.
        unsafe { slot.cast::<Option<NonNull<u8>>>().write(next) };
    }

    /// Whether the list holds a slot.
    #[inline]
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn has_any(&self) -> bool {
        self.head.get().is_some()
    }

    /// Forgets every slot (they are about to be reused or freed wholesale).
    pub(crate) fn clear(&self) {
        self.head.set(None);
    }

    /// The number of free slots on the list, counted by walking it (one read per slot): the
    /// list keeps no length, so that `push` and `pop` store nothing but the links and the head.
    pub(crate) fn len(&self) -> usize {
        let mut n = 0;
        let mut next = self.head.get();
        while let Some(slot) = next {
            n += 1;
            // SAFETY: as in `pop`: a slot on the list is free and holds the link `push` wrote.
            next = unsafe { slot.cast::<Option<NonNull<u8>>>().read() };
        }
        n
    }

    /// Calls `f` with every slot on the list, most recently freed first.
    pub(crate) fn for_each(&self, mut f: impl FnMut(NonNull<u8>)) {
        let mut next = self.head.get();
        while let Some(slot) = next {
            // SAFETY: as in `pop`: a slot on the list is free and holds the link `push` wrote.
            next = unsafe { slot.cast::<Option<NonNull<u8>>>().read() };
            f(slot);
        }
    }

    /// Removes the slots for which `keep` is false, keeping the others in their order. Each
    /// removal relinks the list at once, so it is a valid list at every step.
    pub(crate) fn retain(&self, mut keep: impl FnMut(NonNull<u8>) -> bool) {
        let mut prev: Option<NonNull<u8>> = None;
        let mut next = self.head.get();
        while let Some(slot) = next {
            // SAFETY: as in `pop`.
            next = unsafe { slot.cast::<Option<NonNull<u8>>>().read() };
            if keep(slot) {
                prev = Some(slot);
            } else {
                match prev {
                    // SAFETY: `p` is a free slot on the list (kept above), which holds its link.
                    Some(p) => unsafe { p.cast::<Option<NonNull<u8>>>().write(next) },
                    None => self.head.set(next),
                }
            }
        }
    }
}
