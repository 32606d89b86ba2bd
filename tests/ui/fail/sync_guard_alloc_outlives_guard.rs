// What a `SyncArena` scope guard hands out borrows the guard: the guard (whose drop frees the
// scope) cannot be dropped while a reference is alive, and the arena stays borrowed meanwhile.
use arena_pool::SyncArena;

fn main() {
    let mut arena = SyncArena::new();
    let guard = arena.scope_guard();
    let x = guard.arena().alloc(1u32);
    drop(guard);
    println!("{x}");
}
