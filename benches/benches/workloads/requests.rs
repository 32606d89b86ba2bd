//! The request handler: generated text requests, each parsed (headers into a map, body records
//! into vectors) and answered in a growing response buffer.

use std::hint::black_box;
use std::io::Write as _;

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;
use arena_pool_benches::XorShift;

use super::{Bytes, Map, new_map};

/// Requests per unit; the large one's place in the list and its body's size.
pub(super) const REQUESTS: usize = 1_000;
const LARGE_AT: usize = REQUESTS / 2;
pub(super) const LARGE_BODY: usize = 4 << 20;
/// Header names, in the order they are sent (a request sends the first 8 to 20).
const HEADER_NAMES: [&str; 20] = [
    "Host",
    "Content-Type",
    "Content-Length",
    "User-Agent",
    "Accept",
    "Accept-Encoding",
    "Accept-Language",
    "X-Request-Id",
    "Cache-Control",
    "Connection",
    "Cookie",
    "Authorization",
    "X-Trace-Id",
    "X-Forwarded-For",
    "X-Forwarded-Proto",
    "X-Client-Version",
    "X-Tenant",
    "Origin",
    "Referer",
    "If-None-Match",
];
/// The headers the response echoes (looked up in the map; those present are echoed).
const ECHOED: [&str; 6] = [
    "host",
    "content-type",
    "x-request-id",
    "x-trace-id",
    "x-tenant",
    "cache-control",
];
const PRODUCTS: [&str; 8] = [
    "widget", "gadget", "sprocket", "flange", "bracket", "gasket", "spindle", "valve",
];

/// The handler's input: the requests and the lines they hold (request lines, headers and
/// records).
pub(super) struct Requests {
    pub(super) list: std::vec::Vec<std::vec::Vec<u8>>,
    pub(super) lines: u64,
}

/// Generates the requests: `POST /api/orders/<n> HTTP/1.1`, 8 to 20 headers, a blank line and a
/// body of records `id=..;name=..;qty=..;price=..` (one in four with a `note`). Bodies are 1 to
/// 4 KB (92%), 4 to 16 KB (6%) or 16 to 32 KB (2%), except one, in the middle of the list, of
/// `LARGE_BODY` bytes.
pub(super) fn generate_requests() -> Requests {
    let mut rng = XorShift::new(0xda3e_39cb_94b9_5bdb);
    let mut lines = 0;
    let list = (0..REQUESTS)
        .map(|i| {
            let body_size = if i == LARGE_AT {
                LARGE_BODY
            } else {
                (match rng.below(100) {
                    0..=91 => 1024 + rng.below(3072),
                    92..=97 => 4096 + rng.below(12_288),
                    _ => 16_384 + rng.below(16_384),
                }) as usize
            };
            let (request, request_lines) = request(&mut rng, i, body_size);
            lines += request_lines;
            request
        })
        .collect();
    Requests { list, lines }
}

/// One request with a body of about `body_size` bytes, and its line count.
fn request(rng: &mut XorShift, n: usize, body_size: usize) -> (std::vec::Vec<u8>, u64) {
    let mut body = std::vec::Vec::with_capacity(body_size + 128);
    let mut records = 0;
    while body.len() < body_size {
        write!(
            body,
            "id={};name={}_{};qty={};price={}",
            rng.below(1_000_000),
            PRODUCTS[rng.below(PRODUCTS.len() as u64) as usize],
            rng.below(100),
            1 + rng.below(20),
            rng.below(100_000),
        )
        .expect("writing to a Vec");
        if rng.below(4) == 0 {
            body.extend_from_slice(b";note=");
            random_text(rng, &mut body, 8, 40);
        }
        body.push(b'\n');
        records += 1;
    }
    let headers = 8 + rng.below(13) as usize;
    let mut req = std::vec::Vec::with_capacity(body.len() + 1024);
    write!(req, "POST /api/orders/{n} HTTP/1.1\r\n").expect("writing to a Vec");
    for name in &HEADER_NAMES[..headers] {
        write!(req, "{name}: ").expect("writing to a Vec");
        match *name {
            "Content-Length" => write!(req, "{}", body.len()).expect("writing to a Vec"),
            "Content-Type" => req.extend_from_slice(b"text/x-records"),
            _ => random_text(rng, &mut req, 8, 48),
        }
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"\r\n");
    req.extend_from_slice(&body);
    (req, 1 + headers as u64 + records)
}

/// Appends `min..=max` random characters from `[a-z0-9-]`.
fn random_text(rng: &mut XorShift, out: &mut std::vec::Vec<u8>, min: u64, max: u64) {
    const ALPHABET: &[u8; 37] = b"abcdefghijklmnopqrstuvwxyz0123456789-";
    for _ in 0..min + rng.below(max - min + 1) {
        out.push(ALPHABET[rng.below(ALPHABET.len() as u64) as usize]);
    }
}

/// A parsed body record: its numbers, and all its fields (borrowed from the request).
struct Record<'r, Al: Allocator> {
    id: u64,
    qty: u64,
    price: u64,
    fields: Vec<(&'r [u8], &'r [u8]), Al>,
}

impl<'r, Al: Allocator> Record<'r, Al> {
    /// An empty record (no allocation yet).
    fn new(a: Al) -> Self {
        Record {
            id: 0,
            qty: 0,
            price: 0,
            fields: Vec::new_in(a),
        }
    }

    /// Adds a field; `id`, `qty` and `price` are numbers.
    fn add(&mut self, key: &'r [u8], value: &'r [u8]) {
        match key {
            b"id" => self.id = number(value),
            b"qty" => self.qty = number(value),
            b"price" => self.price = number(value),
            _ => {}
        }
        self.fields.push((key, value));
    }

    /// The value of the field `key` (empty if it has none).
    fn field(&self, key: &[u8]) -> &'r [u8] {
        self.fields
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(&[][..], |&(_, v)| v)
    }
}

/// What the request handler checks, over all requests: lines parsed, records, the response
/// bytes and a checksum of them (folded request by request), and the sum of the records' totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ServeSum {
    pub(super) lines: u64,
    records: u64,
    response_bytes: u64,
    response_hash: u64,
    total: u64,
}

impl ServeSum {
    /// `self` followed by `one` (counts summed, checksums folded in order).
    pub(super) fn add(self, one: ServeSum) -> ServeSum {
        ServeSum {
            lines: self.lines + one.lines,
            records: self.records + one.records,
            response_bytes: self.response_bytes + one.response_bytes,
            response_hash: self.response_hash.rotate_left(11) ^ one.response_hash,
            total: self.total.wrapping_add(one.total),
        }
    }
}

/// The first line of `bytes` (up to a `\n`, without it and without a `\r` before it), and the
/// rest after it.
fn split_line(bytes: &[u8]) -> (&[u8], &[u8]) {
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    let line = &bytes[..end];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    (line, bytes.get(end + 1..).unwrap_or(&[]))
}

/// A decimal number (the input is generated: anything else is a bug).
fn number(digits: &[u8]) -> u64 {
    assert!(!digits.is_empty(), "an empty number");
    digits.iter().fold(0, |n, &d| {
        assert!(d.is_ascii_digit(), "not a number: {digits:?}");
        n * 10 + u64::from(d - b'0')
    })
}

/// A cheap checksum of `bytes` (eight at a time).
fn bytes_hash(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let mut h = bytes.len() as u64;
    for word in &mut words {
        let word: [u8; 8] = word.try_into().expect("chunks of 8");
        h = h.rotate_left(7) ^ u64::from_le_bytes(word);
    }
    for &b in words.remainder() {
        h = h.rotate_left(7) ^ u64::from(b);
    }
    h
}

/// The head of a request: the order number of its path, its headers (lower-cased names copied
/// into the allocator, values borrowed from the request), and its body.
struct Head<'r, Al: Allocator> {
    order: u64,
    headers: Map<Bytes<Al>, &'r [u8], Al>,
    body: &'r [u8],
}

/// Parses the request line and the headers (the input is generated: a malformed request is a
/// bug, and panics).
fn parse_head<Al: Allocator + Copy>(req: &[u8], a: Al) -> Head<'_, Al> {
    let (request_line, mut rest) = split_line(req);
    let mut parts = request_line.split(|&b| b == b' ');
    let (Some(b"POST"), Some(path), Some(b"HTTP/1.1")) = (parts.next(), parts.next(), parts.next())
    else {
        panic!("bad request line {request_line:?}");
    };
    let order = number(path.strip_prefix(b"/api/orders/").expect("an order path"));
    let mut headers = new_map(a);
    loop {
        let (line, after) = split_line(rest);
        rest = after;
        if line.is_empty() {
            break;
        }
        let colon = line.iter().position(|&b| b == b':').expect("a header");
        let value = &line[colon + 1..];
        let value = value.strip_prefix(b" ").unwrap_or(value);
        headers.insert(Bytes::lowercase_of(&line[..colon], a), value);
    }
    let length = headers
        .get(&b"content-length"[..])
        .expect("a Content-Length header");
    assert_eq!(number(length), rest.len() as u64, "Content-Length");
    Head {
        order,
        headers,
        body: rest,
    }
}

/// Parses the body's records (`key=value` fields separated by `;`, one record a line), in one
/// pass over the bytes.
fn parse_records<Al: Allocator + Copy>(body: &[u8], a: Al) -> Vec<Record<'_, Al>, Al> {
    let mut records = Vec::new_in(a);
    let mut record = Record::new(a);
    let (mut key, mut eq) = (0, 0);
    for (i, &b) in body.iter().enumerate() {
        match b {
            b'=' => eq = i,
            b';' | b'\n' => {
                assert!(key < eq && eq < i, "not key=value: {:?}", &body[key..i]);
                record.add(&body[key..eq], &body[eq + 1..i]);
                key = i + 1;
                if b == b'\n' {
                    records.push(core::mem::replace(&mut record, Record::new(a)));
                }
            }
            _ => {}
        }
    }
    assert!(
        record.fields.is_empty(),
        "the body ends in the middle of a record"
    );
    records
}

/// Writes the response to a parsed request in a growing buffer (no reserve) and summarises it:
/// a status line, the headers of `ECHOED` the request has, and one line per record with its
/// total (quantity times price).
fn respond<Al: Allocator + Copy>(
    head: &Head<'_, Al>,
    records: &[Record<'_, Al>],
    a: Al,
) -> ServeSum {
    let mut out = Vec::new_in(a);
    write!(out, "HTTP/1.1 200 OK\r\nx-order: {}\r\n", head.order).expect("writing to a Vec");
    for name in ECHOED {
        if let Some(value) = head.headers.get(name.as_bytes()) {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
    }
    write!(out, "x-records: {}\r\n\r\n", records.len()).expect("writing to a Vec");
    let mut total = 0u64;
    for r in records {
        let line_total = r.qty * r.price;
        total = total.wrapping_add(line_total);
        out.extend_from_slice(b"{\"name\":\"");
        out.extend_from_slice(r.field(b"name"));
        writeln!(out, "\",\"id\":{},\"total\":{line_total}}}", r.id).expect("writing to a Vec");
    }
    writeln!(out, "{{\"total\":{total}}}").expect("writing to a Vec");
    let out = black_box(out);
    ServeSum {
        lines: 1 + head.headers.len() as u64 + records.len() as u64,
        records: records.len() as u64,
        response_bytes: out.len() as u64,
        response_hash: bytes_hash(&out),
        total,
    }
}

/// Handles one request: parses it, answers it, and drops all it allocated in `a`.
pub(super) fn handle<Al: Allocator + Copy>(req: &[u8], a: Al) -> ServeSum {
    let head = parse_head(req, a);
    let records = parse_records(head.body, a);
    respond(&head, &records, a)
}
