// The `&str` that `String::leak` returns lives as long as the arena's borrow: not past the arena.
use arena_pool::Arena;
use arena_pool::collections::String;

fn main() {
    let text: &str = {
        let arena = Arena::new();
        let mut s = String::new_in(&arena);
        s.push_str("gone with the arena");
        s.leak()
    };
    println!("{text}");
}
