// One helper generic over the typed API takes every arena kind, a scope, a scope guard and the
// views; its references live as long as its borrow.
use arena_pool::{Arena, ArenaRef, BumpAlloc, SyncArena};

fn pair<X: BumpAlloc + ?Sized>(arena: &X) -> (&u32, &str) {
    (arena.alloc(1), arena.alloc_fmt(format_args!("{}", 2)))
}

fn name<'a>(arena: &ArenaRef<'a>) -> &'a str {
    arena.alloc_str("name")
}

fn main() {
    let mut arena = Arena::new();
    let (a, b) = pair(&arena);
    let c = name((&arena).into());
    assert_eq!((*a, b, c), (1, "2", "name"));
    arena.with_scope(|scope| {
        pair(scope);
    });
    {
        let mut guard = arena.scope_guard();
        let x = guard.alloc(1u8);
        let y = guard.alloc(2u8); // both alive: they borrow the guard shared
        assert_eq!(*x + *y, 3);
        pair(&guard);
        pair(guard.scope());
    }
    let shared = SyncArena::new();
    pair(&shared);
    let local = shared.local();
    pair(&local);
    pair(local.as_arena_ref());
}
