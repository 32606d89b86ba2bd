// Leaked text lives as long as the arena's borrow: it can be returned from a function that
// takes `&'a Arena`, kept in a structure, and used until the arena is reset.
use arena_pool::Arena;
use arena_pool::collections::String;

fn greeting<'a>(arena: &'a Arena, name: &str) -> &'a str {
    let mut s = String::new_in(arena);
    s.push_str("hello, ");
    s.push_str(name);
    s.leak()
}

struct Names<'a> {
    all: Vec<&'a str>,
}

fn main() {
    let mut arena = Arena::new();
    {
        let names = Names {
            all: vec![greeting(&arena, "ada"), arena_pool::format_in!(&arena, "{}", 7).leak()],
        };
        assert_eq!(names.all, ["hello, ada", "7"]);
    }
    arena.reset();
    assert_eq!(greeting(&arena, "grace"), "hello, grace");
}
