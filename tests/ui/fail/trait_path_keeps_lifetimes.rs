// Called through the trait (`BumpAlloc::alloc(&x, ..)`, the path generic code takes), each
// type's references live no longer than through its inherent methods: none survives a reset, the
// end of its scope guard, or the `SyncArena`'s reset.
use arena_pool::{Arena, BumpAlloc, SyncArena};

fn arena_reset() {
    let mut arena = Arena::new();
    let x = BumpAlloc::alloc(&arena, 1u32);
    arena.reset();
    println!("{x}");
}

fn view_after_reset() {
    let mut arena = Arena::new();
    let x = BumpAlloc::alloc_str(arena.as_arena_ref(), "view");
    arena.reset();
    println!("{x}");
}

fn guard_end() {
    let mut arena = Arena::new();
    let x;
    {
        let guard = arena.scope_guard();
        x = BumpAlloc::alloc(&guard, 2u32);
    }
    println!("{x}");
}

fn shared_reset() {
    let mut shared = SyncArena::new();
    let x = BumpAlloc::alloc(&shared, 3u32);
    shared.reset();
    println!("{x}");
}

fn local_after_reset() {
    let mut shared = SyncArena::new();
    let x = BumpAlloc::alloc(&shared.local(), 4u32);
    shared.reset();
    println!("{x}");
}

fn main() {
    arena_reset();
    view_after_reset();
    guard_end();
    shared_reset();
    local_after_reset();
}
