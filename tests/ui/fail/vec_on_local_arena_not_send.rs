// A `Vec` on `&LocalArena` would let two threads bump the same handle.
use arena_pool::SyncArena;
use arena_pool::allocator_api2::vec::Vec;

fn main() {
    let arena = SyncArena::new();
    let local = arena.local();
    let mut v = Vec::new_in(&local);
    v.push(1u8);
    std::thread::scope(|s| {
        s.spawn(move || v.push(2));
    });
}
