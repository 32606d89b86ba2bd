// A slice from `LocalArena::into_slice` cannot survive a reset of its `SyncArena`.
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{LocalArena, SyncArena};

fn main() {
    let mut shared = SyncArena::new();
    let s = {
        let local = shared.local();
        let mut v = Vec::new_in(&local);
        v.push(1u32);
        LocalArena::into_slice(v)
    };
    shared.reset();
    println!("{s:?}");
}
