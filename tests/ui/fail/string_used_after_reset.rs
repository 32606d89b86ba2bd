// A `String<&Arena>` borrows the arena: no `reset()` while it is alive.
use arena_pool::Arena;
use arena_pool::collections::String;

fn main() {
    let mut arena = Arena::new();
    let mut s = String::from_str_in("still here?", &arena);
    arena.reset();
    s.push('!');
}
