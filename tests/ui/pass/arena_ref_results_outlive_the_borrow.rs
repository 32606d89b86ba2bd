// An `ArenaRef<'a>` hands out `&'a mut T`: the `ArenaRef` can be borrowed mutably for a nested
// scope while they are alive, and a `Vec` built on it becomes a slice of the scope's lifetime.
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{Arena, ArenaRef};

fn main() {
    let mut arena = Arena::new();
    arena.with_scope(|scope| {
        let a = scope.alloc(1u32);
        let mut v = Vec::new_in(&*scope);
        v.push(2u32);
        let s = ArenaRef::into_slice(v);
        scope.with_scope(|inner| {
            inner.alloc(3u32);
        });
        assert_eq!(*a + s[0], 3);
    });
}
