//! serde support (feature `serde`): [`Serialize`](::serde::Serialize) for the crate's
//! collections, and deserialization *into an allocator*, so that a request body is parsed straight
//! into a request's arena.
//!
//! # Deserializing into an arena or a pool
//! A plain [`Deserialize`](::serde::Deserialize) impl has nowhere to take an allocator from, so
//! the values built here implement [`DeserializeIn<'de, A>`](DeserializeIn) instead: the same
//! thing, with the allocator `A` passed along. `A` is any allocator-api2
//! [`Allocator`](allocator_api2::alloc::Allocator) that is `Clone` (`&Arena`, `&ArenaRef`,
//! `&LocalArena`, `&SyncArena`, `&Pool`, `&SizeClassPool`, `Global`…): every value nested in the
//! one being built gets a clone of it, so a `Vec` of `String`s puts its buffer and every string in
//! the same arena.
//!
//! | type | where its memory goes |
//! |---|---|
//! | [`collections::String<A>`](crate::collections::String) | its text, in `A` |
//! | allocator-api2 [`Vec<T, A>`](allocator_api2::vec::Vec), [`Box<T, A>`](allocator_api2::boxed::Box) | their buffer or block, in `A`; `T` deserialized in `A` too |
//! | hashbrown [`HashMap<K, V, S, A>`](hashbrown::HashMap), [`HashSet<T, S, A>`](hashbrown::HashSet) | the table, in `A`; keys and values in `A` too |
//! | `&'a str`, `&'a [T]` with `A = &'a X` for an arena type `X` (`Arena`, `ArenaRef`, `LocalArena`, `SyncArena`; a `ScopeGuard` through [`as_arena_ref`](crate::ScopeGuard::as_arena_ref)) | in the arena, never dropped (see [`BumpAlloc::alloc`](crate::BumpAlloc::alloc)); they live as long as the borrow of the arena |
//! | `Option<T>` and tuples of up to 6 elements | their elements, as above |
//! | `bool`, `char`, the integers, `f32`, `f64`, `()` | nothing: plain values, as `Deserialize` makes them |
//! | [`Plain<T>`] for any `T: Deserialize` | wherever `T`'s own `Deserialize` puts it |
//!
//! The text of a `&str` or a `String` is always copied into `A`: the result does not borrow the
//! input, which can be dropped (or the next request read into it) as soon as parsing is done.
//!
//! Call [`DeserializeIn::deserialize_in`] with a deserializer and the allocator, or hand a
//! [`DeserializeInSeed`] to anything that takes a [`DeserializeSeed`]
//! (that is how a value nested in another is deserialized in the same allocator):
//!
//! ```
//! use arena_pool::Arena;
//! use arena_pool::allocator_api2::vec::Vec;
//! use arena_pool::collections::String;
//! use arena_pool::serde::DeserializeIn;
//!
//! let mut arena = Arena::new();
//! {
//!     let mut json = serde_json::Deserializer::from_str(r#"["ada", "grace", "edsger"]"#);
//!     let names = Vec::<String<_>, _>::deserialize_in(&mut json, &arena).unwrap();
//!     json.end().unwrap(); // nothing but whitespace after the value
//!     assert_eq!(names, ["ada", "grace", "edsger"]);
//!     assert!(arena.used_bytes() > 0); // the buffer and the three strings
//! }
//! arena.reset(); // the request is done: all of it goes at once
//! ```
//!
//! # Your own types
//! There is no derive: a struct whose fields live in an arena implements [`DeserializeIn`] with
//! a [`Visitor`](::serde::de::Visitor), as serde's own documentation shows for
//! `DeserializeSeed`. It reads each key with a [`FieldName`] (which allocates nothing) and each
//! field with [`next_value_seed`](::serde::de::MapAccess::next_value_seed)`(DeserializeInSeed::new(alloc))`
//! (a field that holds no allocator memory can use plain `next_value()`):
//!
//! ```
//! use core::fmt;
//! use arena_pool::Arena;
//! use arena_pool::allocator_api2::vec::Vec;
//! use arena_pool::serde::{DeserializeIn, DeserializeInSeed, FieldName};
//! use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
//!
//! struct Order<'a> {
//!     customer: &'a str,
//!     items: Vec<&'a str, &'a Arena>,
//!     quantity: u32,
//! }
//!
//! const FIELDS: &[&str] = &["customer", "items", "quantity"];
//!
//! impl<'de, 'a> DeserializeIn<'de, &'a Arena> for Order<'a> {
//!     fn deserialize_in<D: Deserializer<'de>>(d: D, arena: &'a Arena) -> Result<Self, D::Error> {
//!         struct OrderVisitor<'a>(&'a Arena);
//!
//!         impl<'de, 'a> Visitor<'de> for OrderVisitor<'a> {
//!             type Value = Order<'a>;
//!
//!             fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
//!                 f.write_str("an order")
//!             }
//!
//!             fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Order<'a>, M::Error> {
//!                 let (mut customer, mut items, mut quantity) = (None, None, None);
//!                 while let Some(field) = map.next_key_seed(FieldName::new(FIELDS))? {
//!                     match field {
//!                         Some("customer") => customer = Some(map.next_value_seed(DeserializeInSeed::new(self.0))?),
//!                         Some("items") => items = Some(map.next_value_seed(DeserializeInSeed::new(self.0))?),
//!                         Some("quantity") => quantity = Some(map.next_value()?),
//!                         _ => drop(map.next_value::<IgnoredAny>()?), // a field we do not know
//!                     }
//!                 }
//!                 Ok(Order {
//!                     customer: customer.ok_or_else(|| de::Error::missing_field("customer"))?,
//!                     items: items.unwrap_or_else(|| Vec::new_in(self.0)),
//!                     quantity: quantity.unwrap_or(1),
//!                 })
//!             }
//!         }
//!
//!         d.deserialize_struct("Order", FIELDS, OrderVisitor(arena))
//!     }
//! }
//!
//! let arena = Arena::new();
//! let body = r#"{"customer": "ada", "items": ["tea", "scones"], "note": "by ten"}"#;
//! let order = Order::deserialize_in(&mut serde_json::Deserializer::from_str(body), &arena).unwrap();
//! assert_eq!((order.customer, order.quantity), ("ada", 1));
//! assert_eq!(order.items, ["tea", "scones"]);
//! ```
//!
//! `examples/serde_request.rs` does the same for a whole request, with a map and a reset per
//! request.
//!
//! # Errors
//! Every allocation made while deserializing is fallible: an allocator that refuses a block (an
//! arena's [allocation limit](crate::Arena::set_allocation_limit), out of memory) makes
//! `deserialize_in` return the deserializer's error, whose message says how many bytes were
//! refused and names the allocation limit, instead of a panic or an abort. (An arena set to
//! [panic at its limit](crate::Arena::set_panic_on_limit) panics, as it was told to.) What was
//! built before the error is dropped: its blocks go back to the allocator (in an arena, they stay
//! used until the reset, as any freed block that is not the last one). A length announced by the
//! input (a `size_hint`) is reserved only up to 1 MiB, so a lying length cannot make one huge
//! request.
//!
//! # Memory in an arena
//! A sequence's length is rarely known ahead (JSON does not give it): a `Vec` grows as its
//! elements are read, and in an arena, once an element with memory of its own (a string) is
//! placed after the buffer, the buffer moves when it grows and the old one stays used until the
//! reset, up to about as much again as the final buffer. A `Vec` of plain values (numbers) is the
//! arena's last block and grows in place.
//!
//! # Serializing
//! [`collections::String`](crate::collections::String) serializes as a string, [`Plain<T>`] as
//! its `T`. hashbrown's maps and sets serialize through hashbrown's own `serde` feature, which
//! this feature turns on. allocator-api2's `Vec` and `Box` serialize through allocator-api2's
//! own `serde` feature; this feature leaves it off, because it turns on serde's `std` and so
//! would break `no_std` builds: with `std`, add `allocator-api2 = { version = "0.2", features =
//! ["serde"] }` to your `Cargo.toml` (in `no_std`, or with this crate's `nightly` feature, where
//! the `Vec` is std's and serde serializes it in `Global` only, serialize `vec.as_slice()`).
//! `&str` and `&[T]` are serde's own.

mod field;
mod maps;
mod plain;
mod seq;
mod ser;
mod text;

use core::fmt;
use core::marker::PhantomData;

use ::serde::de::{self, DeserializeSeed, Deserializer};

pub use field::FieldName;
pub use plain::Plain;

/// A type that can be deserialized with its memory taken from the allocator `A`: the
/// allocator-aware counterpart of [`Deserialize`](::serde::Deserialize), for the types listed in
/// [the module documentation](self) and your own.
///
/// `'de` is the deserializer's input lifetime, as in `Deserialize<'de>`; the values built here
/// never borrow from it (text is copied into `A`). Container impls take `A: Clone` and pass a
/// clone to every element, so elements deserialize in the same allocator.
///
/// There is no impl for every `Deserialize` type: it would overlap with the impls for
/// allocator-api2's `Vec` and `Box` and hashbrown's maps, which have `Deserialize` impls of their
/// own (in `A::default()`). The primitives have impls here, and any other `Deserialize` type goes
/// in a [`Plain<T>`].
///
/// ```
/// use arena_pool::{Arena, SizeClassPool};
/// use arena_pool::allocator_api2::vec::Vec;
/// use arena_pool::serde::DeserializeIn;
///
/// let arena = Arena::new();
/// let body = r#"[[1, 2], [3]]"#;
/// let v = Vec::<Vec<u64, _>, _>::deserialize_in(
///     &mut serde_json::Deserializer::from_str(body),
///     &arena,
/// )
/// .unwrap();
/// assert_eq!((v[0].as_slice(), v[1].as_slice()), (&[1, 2][..], &[3][..]));
///
/// // Any allocator of the crate, here a pool of size classes:
/// let pool = SizeClassPool::new();
/// let text: arena_pool::collections::String<&SizeClassPool> =
///     DeserializeIn::deserialize_in(&mut serde_json::Deserializer::from_str(r#""hi""#), &pool)
///         .unwrap();
/// assert_eq!(text, "hi");
/// ```
pub trait DeserializeIn<'de, A>: Sized {
    /// Deserializes a value from `deserializer`, taking its memory from `alloc`.
    ///
    /// # Errors
    /// The deserializer's error: for input that does not match the type, and when `alloc`
    /// refuses a block (the message then names the allocation limit; see
    /// [Errors](self#errors)).
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::serde::DeserializeIn;
    ///
    /// let arena = Arena::new();
    /// let mut json = serde_json::Deserializer::from_str(r#""héllo""#);
    /// let s: &str = DeserializeIn::deserialize_in(&mut json, &arena).unwrap();
    /// assert_eq!(s, "héllo");
    /// assert_eq!(arena.used_bytes(), 6);
    /// ```
    fn deserialize_in<D>(deserializer: D, alloc: A) -> Result<Self, D::Error>
    where
        D: Deserializer<'de>;
}

/// The [`DeserializeSeed`] that deserializes a `T` in the allocator `A`
/// ([`T::deserialize_in`](DeserializeIn::deserialize_in) with the allocator it holds): what a
/// [`Visitor`](::serde::de::Visitor) passes to `next_element_seed`, `next_key_seed` or
/// `next_value_seed` for a value that lives in the allocator, and what a framework that takes
/// a seed is given.
///
/// ```
/// use arena_pool::Arena;
/// use arena_pool::collections::String;
/// use arena_pool::serde::DeserializeInSeed;
/// use serde::de::DeserializeSeed;
///
/// let arena = Arena::new();
/// let seed = DeserializeInSeed::<String<_>, _>::new(&arena);
/// let s = seed.deserialize(&mut serde_json::Deserializer::from_str(r#""text""#)).unwrap();
/// assert_eq!(s, "text");
/// assert_eq!(*s.allocator() as *const Arena, &arena as *const Arena);
/// ```
pub struct DeserializeInSeed<T, A> {
    alloc: A,
    value: Makes<T>,
}

impl<T, A> DeserializeInSeed<T, A> {
    /// A seed that deserializes a `T` in `alloc`.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::serde::DeserializeInSeed;
    /// use serde::de::DeserializeSeed;
    ///
    /// let arena = Arena::new();
    /// let mut json = serde_json::Deserializer::from_str(r#""in the arena""#);
    /// let s: &str = DeserializeInSeed::new(&arena).deserialize(&mut json).unwrap();
    /// assert_eq!(s, "in the arena");
    /// ```
    #[must_use]
    pub const fn new(alloc: A) -> Self {
        DeserializeInSeed {
            alloc,
            value: PhantomData,
        }
    }
}

impl<T, A: Clone> Clone for DeserializeInSeed<T, A> {
    fn clone(&self) -> Self {
        DeserializeInSeed::new(self.alloc.clone())
    }
}

impl<T, A: Copy> Copy for DeserializeInSeed<T, A> {}

impl<T, A: fmt::Debug> fmt::Debug for DeserializeInSeed<T, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeserializeInSeed")
            .field("value", &core::any::type_name::<T>())
            .field("alloc", &self.alloc)
            .finish()
    }
}

impl<'de, T: DeserializeIn<'de, A>, A> DeserializeSeed<'de> for DeserializeInSeed<T, A> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        T::deserialize_in(deserializer, self.alloc)
    }
}

/// The marker of a visitor or seed that makes a `T` and holds none (no drop check for `T`, and
/// `Send`/`Sync` whatever `T` is).
type Makes<T> = PhantomData<fn() -> T>;

/// The error for a block of `size` bytes that the allocator refused.
fn refused<E: de::Error>(size: usize) -> E {
    E::custom(format_args!(
        "arena-pool: the allocator refused {size} bytes while deserializing \
         (allocation limit reached, or out of memory)"
    ))
}

/// The error for a collection whose capacity would pass `isize::MAX` bytes.
fn overflowed<E: de::Error>() -> E {
    E::custom("arena-pool: a collection's capacity overflowed while deserializing")
}

/// The error for a failed `try_reserve` of allocator-api2's collections.
#[cfg(not(feature = "nightly"))]
fn reserve_failed<E: de::Error>(e: allocator_api2::collections::TryReserveError) -> E {
    match e.kind() {
        allocator_api2::collections::TryReserveErrorKind::AllocError { layout, .. } => {
            refused(layout.size())
        }
        allocator_api2::collections::TryReserveErrorKind::CapacityOverflow => overflowed(),
    }
}

/// The error for a failed `try_reserve` of allocator-api2's collections. With `nightly` the error
/// is std's, whose `kind()` (the refused size) is unstable: the message does without it.
#[cfg(feature = "nightly")]
fn reserve_failed<E: de::Error>(_: allocator_api2::collections::TryReserveError) -> E {
    E::custom(
        "arena-pool: the allocator refused a collection's block while deserializing \
         (allocation limit reached, or out of memory), or its capacity overflowed",
    )
}

/// How many elements to reserve for a sequence or map whose input announced `hint`: at most
/// 1 MiB of them, since the hint comes from the input and only the elements read prove it.
fn cautious<T>(hint: Option<usize>) -> usize {
    const MAX_BYTES: usize = 1024 * 1024;
    let per = core::mem::size_of::<T>().max(1);
    hint.unwrap_or(0).min(MAX_BYTES / per)
}
