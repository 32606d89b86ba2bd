// The references of a `LocalArena` (its typed helpers, its `ArenaRef` view, a `Vec` turned into
// a slice) outlive the handle: the blocks belong to the `SyncArena`.
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{LocalArena, SyncArena};

fn main() {
    let mut shared = SyncArena::new();
    let (a, b, c) = {
        let local = shared.local();
        let mut v = Vec::new_in(&local);
        v.extend([1u32, 2, 3]);
        let c: &mut [u32] = LocalArena::into_slice(v);
        (local.alloc(1u8), local.as_arena_ref().alloc_str("b"), c)
    };
    assert_eq!((*a, &*b, &*c), (1, "b", &[1, 2, 3][..]));
    shared.reset();
}
