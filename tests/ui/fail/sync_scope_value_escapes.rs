// A block allocated in a `SyncArena` scope cannot leave it: the closure's arena borrow is
// higher-ranked, so the reference cannot be returned.
use arena_pool::SyncArena;

fn main() {
    let mut arena = SyncArena::new();
    let escaped: &u32 = arena.with_scope(|scope| scope.alloc(1u32));
    println!("{escaped}");
}
