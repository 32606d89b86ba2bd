//! Collections that take any allocator: a UTF-8 [`String`], [`format_in!`](crate::format_in)
//! and [`try_format_in!`](crate::try_format_in), and [`collect_in`](CollectIn::collect_in) for
//! iterators.
//!
//! They are generic over allocator-api2's [`Allocator`](allocator_api2::alloc::Allocator), so
//! they work on `&Arena`, `&ArenaRef`, `&LocalArena`, `&SyncArena`, `&Pool`, `&SizeClassPool`,
//! `Global` or any other allocator, and they are built on allocator-api2's
//! [`Vec`](allocator_api2::vec::Vec): a `String` growing at the end of an arena grows in place
//! exactly as a `Vec` does.
//!
//! ```
//! use arena_pool::Arena;
//! use arena_pool::allocator_api2::vec::Vec;
//! use arena_pool::collections::String;
//! use arena_pool::prelude::*; // CollectIn
//!
//! let arena = Arena::new();
//! let mut greeting = String::new_in(&arena);
//! greeting.push_str("hello");
//! greeting.push(' ');
//! let name = arena_pool::format_in!(&arena, "{}-{}", "wörld", 42);
//! greeting.push_str(&name);
//! assert_eq!(greeting, "hello wörld-42");
//!
//! let squares: Vec<u32, _> = (1..=4).map(|i| i * i).collect_in(&arena);
//! assert_eq!(squares, [1, 4, 9, 16]);
//! let reversed: String<_> = "abc".chars().rev().collect_in(&arena);
//! assert_eq!(reversed, "cba");
//! ```

mod collect;
mod string;
mod vec_in;

pub use collect::{CollectIn, FromIteratorIn, TryFromIteratorIn};
pub use string::{FromUtf8Error, String, StringDrain};
