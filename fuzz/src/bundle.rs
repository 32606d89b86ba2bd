//! [`Bundle`]: several inputs of a target joined into one file, each run from a fresh state.
//!
//! A corpus keeps the fewest files that cover what the whole corpus covers. The inputs of the
//! operation targets cannot simply be joined end to end: the second one's operations would run
//! on the state the first left, and what only a fresh arena or pool reaches would be lost. Joined
//! by [`SEPARATOR`], each part is decoded and run as an input of its own, so a bundle covers what
//! its parts cover and the corpus needs far fewer files (`minimise.sh` makes the bundles). A file
//! without the separator is one part: it decodes as it did before bundles existed.

use arbitrary::{Arbitrary, Unstructured};

/// What joins the parts of a bundle: twelve bytes a mutation is most unlikely to make by chance
/// (and harmless when it does: the input is then two inputs).
pub const SEPARATOR: &[u8] = b"\xfe\xed\xfa\xcebundle\xfe\xed";

/// The inputs of a file, in order: its parts between separators, each decoded as a `T` (a part
/// that does not decode is skipped, as libFuzzer's glue skips such a file).
#[derive(Debug)]
pub struct Bundle<T>(pub Vec<T>);

/// `data` cut at every [`SEPARATOR`].
fn parts(data: &[u8]) -> Vec<&[u8]> {
    let mut parts = Vec::new();
    let mut rest = data;
    while let Some(at) = rest
        .windows(SEPARATOR.len())
        .position(|window| window == SEPARATOR)
    {
        parts.push(&rest[..at]);
        rest = &rest[at + SEPARATOR.len()..];
    }
    parts.push(rest);
    parts
}

impl<'a, T: Arbitrary<'a>> Arbitrary<'a> for Bundle<T> {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let data = u.bytes(u.len())?;
        Ok(Self::decode(data))
    }

    fn arbitrary_take_rest(u: Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Self::decode(u.take_rest()))
    }

    /// A file shorter than one input is rejected, as it was before bundles.
    fn size_hint(depth: usize) -> (usize, Option<usize>) {
        (T::size_hint(depth).0, None)
    }
}

impl<'a, T: Arbitrary<'a>> Bundle<T> {
    fn decode(data: &'a [u8]) -> Self {
        Bundle(
            parts(data)
                .into_iter()
                .filter_map(|part| T::arbitrary_take_rest(Unstructured::new(part)).ok())
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_cut_at_each_separator() {
        let joined = [&b"ab"[..], SEPARATOR, b"", SEPARATOR, b"cd"].concat();
        assert_eq!(parts(&joined), [&b"ab"[..], b"", b"cd"]);
        assert_eq!(parts(b"abc"), [&b"abc"[..]]);
        assert_eq!(parts(b""), [&b""[..]]);
    }

    #[test]
    fn a_single_part_decodes_as_the_plain_input() {
        let data = [3u8, 1, 4, 1, 5, 9, 2, 6];
        let plain = <Vec<u8>>::arbitrary_take_rest(Unstructured::new(&data)).unwrap();
        let bundle = <Bundle<Vec<u8>>>::arbitrary_take_rest(Unstructured::new(&data)).unwrap();
        assert_eq!(bundle.0, [plain]);
    }
}
