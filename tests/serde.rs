//! The `serde` feature: `Serialize` of the crate's collections, and `DeserializeIn` building
//! values in an arena or a pool (round trips through JSON, nested values, errors, where the
//! memory goes).
#![cfg(feature = "serde")]
#![cfg_attr(feature = "nightly", feature(allocator_api))]

mod common;

use core::fmt;

use arena_pool::allocator_api2::alloc::{Allocator, Global};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::collections::String;
use arena_pool::serde::{DeserializeIn, DeserializeInSeed, FieldName, Plain};
use arena_pool::{Arena, ArenaRef, SizeClassPool, SyncArena};
use common::Counting;
use hashbrown::{DefaultHashBuilder, HashMap, HashSet};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

type Map<'a, K, V> = HashMap<K, V, DefaultHashBuilder, &'a Arena>;

/// `T` deserialized from `json` in `alloc`, the whole input consumed.
fn from_json<'de, T: DeserializeIn<'de, A>, A>(json: &'de str, alloc: A) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_str(json);
    let value = T::deserialize_in(&mut de, alloc)?;
    de.end()?;
    Ok(value)
}

#[test]
fn string_round_trip_in_an_arena() {
    let arena = Arena::new();
    let original = String::from_str_in("tab\t, quote \", é, 😀", &arena);
    let json = serde_json::to_string(&original).unwrap();
    assert_eq!(json, r#""tab\t, quote \", é, 😀""#);
    let used = arena.used_bytes();
    let back: String<&Arena> = from_json(&json, &arena).unwrap();
    assert_eq!(back, original);
    assert_eq!(arena.used_bytes(), used + original.len());
    // Escapes are decoded before the copy: the arena holds the text, not the JSON.
    let s: &str = from_json(r#""\u00e9\n""#, &arena).unwrap();
    assert_eq!(s, "é\n");
}

#[test]
fn vec_of_strings_round_trip() {
    let arena = Arena::new();
    let json = r#"["alpha","beta","","gamma delta"]"#;
    let v: Vec<String<&Arena>, &Arena> = from_json(json, &arena).unwrap();
    assert_eq!(v, ["alpha", "beta", "", "gamma delta"]);
    for s in &v {
        assert!(core::ptr::eq(*s.allocator(), &arena));
    }
    assert!(core::ptr::eq(*v.allocator(), &arena));
    assert_eq!(serde_json::to_string(v.as_slice()).unwrap(), json);
    // allocator-api2's own `Serialize` (with `nightly` its `Vec` is std's, serialized in `Global`
    // only).
    #[cfg(not(feature = "nightly"))]
    assert_eq!(serde_json::to_string(&v).unwrap(), json);
}

#[test]
fn map_of_str_to_vec_of_u64() {
    let arena = Arena::new();
    let json = r#"{"primes": [2, 3, 5, 7], "empty": [], "big": [18446744073709551615]}"#;
    let map: Map<'_, &str, Vec<u64, &Arena>> = from_json(json, &arena).unwrap();
    assert_eq!(map.len(), 3);
    assert_eq!(map["primes"], [2, 3, 5, 7]);
    assert!(map["empty"].is_empty());
    assert_eq!(map["big"], [u64::MAX]);
    // hashbrown's own `Serialize` (its `serde` feature), allocator-api2's for the `Vec`s (not
    // with `nightly`, where they are std's).
    #[cfg(not(feature = "nightly"))]
    {
        let back: serde_json::Value = serde_json::to_value(&map).unwrap();
        let expected: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(back, expected);
    }
}

#[test]
fn slices_boxes_options_tuples_sets_and_plain() {
    let arena = Arena::new();
    let words: &[&str] = from_json(r#"["a", "bb", "ccc"]"#, &arena).unwrap();
    assert_eq!(words, ["a", "bb", "ccc"]);
    let nested: &[&[u16]] = from_json("[[1], [], [2, 3]]", &arena).unwrap();
    assert_eq!(nested, [&[1][..], &[], &[2, 3]]);

    let boxed: Box<(u32, String<&Arena>), &Arena> = from_json(r#"[7, "seven"]"#, &arena).unwrap();
    assert_eq!(boxed.0, 7);
    assert_eq!(boxed.1, "seven");

    let opts: Vec<Option<&str>, &Arena> = from_json(r#"["x", null]"#, &arena).unwrap();
    assert_eq!(opts, [Some("x"), None]);

    let tuple: (bool, char, f64, i128, (), &str) = from_json(
        r#"[true, "c", 1.5, -170141183460469231731687303715884105728, null, "s"]"#,
        &arena,
    )
    .unwrap();
    assert_eq!(tuple, (true, 'c', 1.5, i128::MIN, (), "s"));

    let set: HashSet<&str, DefaultHashBuilder, &Arena> =
        from_json(r#"["b", "a", "b"]"#, &arena).unwrap();
    assert_eq!(set.len(), 2);
    assert!(set.contains("a") && set.contains("b"));

    let plain: Vec<Plain<serde_json::Value>, &Arena> =
        from_json(r#"[{"k": [1]}, "s"]"#, &arena).unwrap();
    assert_eq!(plain[0]["k"][0], 1);
    assert_eq!(
        serde_json::to_string(&plain[..]).unwrap(),
        r#"[{"k":[1]},"s"]"#
    );
}

#[test]
fn memory_goes_to_the_arena_and_reset_takes_it_back() {
    let backing = Counting::default();
    let mut arena = Arena::new_in(&backing);
    let json = r#"{"one": ["a", "b"], "two": ["c"]}"#;
    for _ in 0..3 {
        {
            let map: HashMap<&str, Vec<String<_>, _>, DefaultHashBuilder, _> =
                from_json(json, &arena).unwrap();
            assert_eq!(map["one"], ["a", "b"]);
            assert!(arena.used_bytes() >= "onetwoabc".len());
        }
        arena.reset();
        assert_eq!(arena.used_bytes(), 0);
    }
    // Plain values: the buffer is the arena's last block and grows in place, taking no more
    // than its capacity.
    let numbers = format!(
        "[{}]",
        (0..1000)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    {
        let v: Vec<u64, _> = from_json(&numbers, &arena).unwrap();
        assert_eq!(v.len(), 1000);
        assert_eq!(arena.used_bytes(), v.capacity() * 8);
    }
    arena.reset();
    // Every byte came through the arena: the chunks it took are all that was taken.
    assert!(backing.allocs.get() >= 1);
    drop(arena);
    assert_eq!(backing.live.get(), 0);
}

#[test]
fn every_arena_kind_and_pools() {
    let json = r#"[["x", "y"], ["z"]]"#;

    let mut arena = Arena::new();
    arena.with_scope(|scope| {
        let scope: &ArenaRef<'_> = scope;
        let v: &[&[&str]] = from_json(json, scope).unwrap();
        assert_eq!(v, [&["x", "y"][..], &["z"]]);
        assert!(scope.used_bytes() > 0);
    });

    let shared = SyncArena::new();
    let local = shared.local();
    let v: Vec<Vec<&str, _>, _> = from_json(json, &local).unwrap();
    assert_eq!(
        (v[0].as_slice(), v[1].as_slice()),
        (&["x", "y"][..], &["z"][..])
    );
    let v: &[Vec<String<_>, _>] = from_json(json, &shared).unwrap();
    assert_eq!(v[1], ["z"]);

    let pool = SizeClassPool::new();
    let v: Vec<Vec<String<_>, _>, _> = from_json(json, &pool).unwrap();
    assert_eq!(v[0], ["x", "y"]);
    assert!(pool.stats().bytes_held > 0);

    let v: Vec<String, Global> = from_json(r#"["g"]"#, Global).unwrap();
    assert_eq!(v, ["g"]);
}

#[test]
fn malformed_input_is_an_error_and_frees_what_was_built() {
    let counting = Counting::default();
    let inputs = [
        r#"{"a": ["x", "y"], "b": ["z""#,     // truncated
        r#"{"a": ["x", 1]}"#,                 // a number where a string goes
        r#"{"a": ["x"], "b": "not a list"}"#, // a string where a list goes
        r#"["unterminated"#,
        r#"{"a": ["\ud800"]}"#, // a lone surrogate
    ];
    for input in inputs {
        type Texts<'c> = Vec<String<&'c Counting>, &'c Counting>;
        let r =
            from_json::<HashMap<String<_>, Texts<'_>, DefaultHashBuilder, _>, _>(input, &counting);
        assert!(r.is_err(), "{input}");
        assert_eq!(
            counting.live.get(),
            0,
            "{input}: a block was not given back"
        );
    }
    let err = from_json::<Vec<u8, &Counting>, _>("[1, 256]", &counting).unwrap_err();
    assert!(err.to_string().contains("u8"), "{err}");
    // Trailing input is the caller's check (`end`), as with serde_json's own `from_str`.
    assert!(from_json::<Vec<u8, &Counting>, _>("[1] x", &counting).is_err());
    assert_eq!(counting.live.get(), 0);
}

#[test]
fn an_allocation_limit_is_an_error_naming_it() {
    let arena = Arena::new();
    arena.set_allocation_limit(Some(4096));
    let big = format!("[{}]", vec![r#""0123456789abcdef""#; 1000].join(","));
    let err = from_json::<Vec<&str, &Arena>, _>(&big, &arena).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("allocation limit"), "{message}");
    assert!(
        message.contains("arena-pool: the allocator refused"),
        "{message}"
    );
    // The same request within the limit succeeds.
    assert!(from_json::<Vec<&str, &Arena>, _>("[\"ok\"]", &arena).is_ok());

    // Through each kind of container and a plain `&str`.
    let full = Arena::new();
    full.set_allocation_limit(Some(0));
    assert!(from_json::<&str, _>(r#""x""#, &full).is_err());
    assert!(from_json::<String<_>, _>(r#""x""#, &full).is_err());
    assert!(from_json::<Box<u64, _>, _>("1", &full).is_err());
    assert!(from_json::<Map<'_, u32, u32>, _>(r#"{"1": 2}"#, &full).is_err());
    assert!(from_json::<HashSet<u32, DefaultHashBuilder, _>, _>("[1]", &full).is_err());
    // Empty collections allocate nothing.
    assert!(from_json::<Vec<u32, _>, _>("[]", &full).unwrap().is_empty());
    assert!(from_json::<&str, _>(r#""""#, &full).unwrap().is_empty());

    // A backing allocator that refuses: the same error, and nothing held.
    let counting = Counting::default();
    let v: Vec<String<&Counting>, _> = from_json(r#"["a"]"#, &counting).unwrap();
    counting.fail.set(true);
    let err = from_json::<Vec<String<&Counting>, _>, _>(r#"["a", "b"]"#, &counting).unwrap_err();
    assert!(err.to_string().contains("allocation limit"), "{err}");
    drop(v);
    assert_eq!(counting.live.get(), 0);
}

/// A sequence that announces `usize::MAX` elements and has none.
struct Liar;

impl<'de> serde::Deserializer<'de> for Liar {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_seq(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

impl<'de> SeqAccess<'de> for Liar {
    type Error = serde::de::value::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        _: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        Ok(None)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(usize::MAX)
    }
}

#[test]
fn an_announced_length_is_not_trusted() {
    let arena = Arena::new();
    let v = Vec::<u64, _>::deserialize_in(Liar, &arena).unwrap();
    assert!(v.is_empty());
    assert!(arena.used_bytes() <= 1 << 20, "{}", arena.used_bytes());
    let v = Vec::<(), _>::deserialize_in(Liar, &arena).unwrap();
    assert!(v.is_empty());
}

/// A struct written out by hand, as the module documentation shows.
#[derive(Debug)]
struct Request<'a> {
    user: &'a str,
    tags: Vec<String<&'a Arena>, &'a Arena>,
    scores: Map<'a, &'a str, Vec<u64, &'a Arena>>,
    limit: Option<u32>,
}

const FIELDS: &[&str] = &["user", "tags", "scores", "limit"];

impl<'de, 'a> DeserializeIn<'de, &'a Arena> for Request<'a> {
    fn deserialize_in<D: serde::Deserializer<'de>>(
        d: D,
        arena: &'a Arena,
    ) -> Result<Self, D::Error> {
        struct RequestVisitor<'a>(&'a Arena);

        impl<'de, 'a> Visitor<'de> for RequestVisitor<'a> {
            type Value = Request<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a request")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Request<'a>, M::Error> {
                let mut request = Request {
                    user: "",
                    tags: Vec::new_in(self.0),
                    scores: Map::with_hasher_in(DefaultHashBuilder::default(), self.0),
                    limit: None,
                };
                while let Some(field) = map.next_key_seed(FieldName::new(FIELDS))? {
                    let arena = DeserializeInSeed::new(self.0);
                    match field {
                        Some("user") => request.user = map.next_value_seed(arena)?,
                        Some("tags") => {
                            request.tags = map.next_value_seed(DeserializeInSeed::new(self.0))?
                        }
                        Some("scores") => {
                            request.scores = map.next_value_seed(DeserializeInSeed::new(self.0))?
                        }
                        Some("limit") => request.limit = map.next_value()?,
                        _ => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                Ok(request)
            }
        }

        d.deserialize_struct("Request", FIELDS, RequestVisitor(arena))
    }
}

#[test]
fn a_hand_written_struct() {
    let mut arena = Arena::new();
    let body = br#"{"user": "ad\u0061", "tags": ["x", "y"], "extra": {"deep": [1, {"a": null}]},
                    "scores": {"math": [90, 85]}, "limit": 10}"#
        .to_vec();
    {
        let request: Request<'_> = from_json(core::str::from_utf8(&body).unwrap(), &arena).unwrap();
        assert_eq!(request.user, "ada");
        assert_eq!(request.tags, ["x", "y"]);
        assert_eq!(request.scores["math"], [90, 85]);
        assert_eq!(request.limit, Some(10));
        drop(body); // the values do not borrow the input
        assert!(arena.used_bytes() > 0);
        let err = from_json::<Request<'_>, _>(r#"{"limit": "ten"}"#, &arena).unwrap_err();
        assert!(err.to_string().contains("u32"), "{err}");
    }
    arena.reset();
    assert_eq!(arena.used_bytes(), 0);
}

#[test]
fn field_names_by_text_bytes_and_index() {
    use serde::de::value::{BytesDeserializer, Error, StrDeserializer, U64Deserializer};
    let seed = FieldName::new(FIELDS);
    assert_eq!(
        seed.deserialize(StrDeserializer::<Error>::new("tags")),
        Ok(Some("tags"))
    );
    assert_eq!(
        seed.deserialize(BytesDeserializer::<Error>::new(b"limit")),
        Ok(Some("limit"))
    );
    assert_eq!(
        seed.deserialize(U64Deserializer::<Error>::new(2)),
        Ok(Some("scores"))
    );
    assert_eq!(seed.deserialize(U64Deserializer::<Error>::new(9)), Ok(None));
    assert_eq!(
        seed.deserialize(StrDeserializer::<Error>::new("Tags")),
        Ok(None)
    );
}

#[test]
fn strings_from_bytes_must_be_utf8() {
    use serde::de::value::{BytesDeserializer, Error};
    let arena = Arena::new();
    let s = String::deserialize_in(BytesDeserializer::<Error>::new("é".as_bytes()), &arena);
    assert_eq!(s.unwrap(), "é");
    assert!(String::deserialize_in(BytesDeserializer::<Error>::new(b"\xff"), &arena).is_err());
    assert!(<&str>::deserialize_in(BytesDeserializer::<Error>::new(b"\xc3"), &arena).is_err());
}

fn _generic_over_allocators<'de, A: Allocator + Clone>(
    d: impl serde::Deserializer<'de>,
    alloc: A,
) -> Vec<Option<Box<String<A>, A>>, A> {
    Vec::deserialize_in(d, alloc).unwrap()
}
