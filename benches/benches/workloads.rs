//! The `workloads` suite: small deterministic programs of the kind arenas are made for, run on
//! every crate through the same generic code (allocator-api2 0.2's `Vec` and `Box` and
//! hashbrown's `HashMap`, each in the allocator under test through [`Api02`]). Ids are
//! `workloads/<crate>/<case>`.
//!
//! - **Compiler front end**: a generated source of about 200 KB is lexed into a token vector
//!   (identifiers interned in a map whose keys are copied into the allocator), parsed by
//!   recursive descent into a tree of boxed nodes, and constant-folded into a second tree.
//! - **Request handler**: 1 000 generated text requests (one of them about 4 MiB, the others
//!   mostly 1 to 4 KB), each parsed (headers into a map, body records into vectors) and answered
//!   in a growing response buffer, with the crate's reset after each request.
//! - **Graph frame** and **graph churn**: adjacency lists of 10 000 nodes and 50 000 edges, built
//!   by pushes, then a breadth-first search; the churn case keeps the graph for 16 frames and
//!   replaces 5% of its edges before each frame's search.
//!
//! One allocator serves every iteration, and each iteration is one unit of work followed by the
//! crate's reset (the request handler resets after every request). The inputs are generated once
//! per process from fixed seeds, outside the memory meter's count ([`unmetered`]). Every unit
//! computes a summary of its result and checks it against the summary of the same unit run on
//! the global allocator (computed once, unmeasured): every crate must give the same answer.

use core::borrow::Borrow;
use core::hash::{Hash, Hasher};
use std::hint::black_box;
use std::io::Write as _;
use std::sync::OnceLock;

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::boxed::Box;
use allocator_api2::vec::Vec;
use arena_pool_benches::harness::{Driver, Runner, reset_loop, run_suite};
use arena_pool_benches::meter::unmetered;
use arena_pool_benches::{Api02, BenchAlloc, Malloc, MixHasher, XorShift};

/// A hashbrown map in the allocator `Al`, hashed by [`MixHasher`] (the same work for every crate).
type Map<K, V, Al> = hashbrown::HashMap<K, V, MixHasher, Al>;

/// An empty [`Map`] in `a`.
fn new_map<K, V, Al: Allocator>(a: Al) -> Map<K, V, Al> {
    Map::with_hasher_in(MixHasher::default(), a)
}

/// A byte string in the allocator under test, as a map key that can be looked up by `&[u8]`
/// (allocator-api2 0.2's `Vec` does not implement `Borrow<[u8]>`; this wrapper does, and hashes
/// and compares as the slice, as `Borrow` requires).
struct Bytes<Al: Allocator>(Vec<u8, Al>);

impl<Al: Allocator> Bytes<Al> {
    /// A copy of `src` in `a`.
    fn copy_of(src: &[u8], a: Al) -> Self {
        let mut v = Vec::with_capacity_in(src.len(), a);
        v.extend_from_slice(src);
        Bytes(v)
    }

    /// A lower-cased copy of `src` in `a`.
    fn lowercase_of(src: &[u8], a: Al) -> Self {
        let mut v = Vec::with_capacity_in(src.len(), a);
        v.extend(src.iter().map(u8::to_ascii_lowercase));
        Bytes(v)
    }
}

impl<Al: Allocator> Borrow<[u8]> for Bytes<Al> {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl<Al: Allocator> Hash for Bytes<Al> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.as_slice().hash(state);
    }
}

impl<Al: Allocator> PartialEq for Bytes<Al> {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_slice() == other.0.as_slice()
    }
}

impl<Al: Allocator> Eq for Bytes<Al> {}

/// Runs `f` once per process, outside the memory meter's count, and keeps its result (for the
/// expected summaries, computed on the global allocator).
fn once<T: Copy + Send + Sync>(cell: &'static OnceLock<T>, f: impl FnOnce() -> T) -> T {
    *cell.get_or_init(|| unmetered(f))
}

// ---------------------------------------------------------------------------------------------
// Compiler front end.

/// Bytes of generated source (about: the last statement ends past it).
const SOURCE_BYTES: usize = 200_000;
/// Variable names are `<word>_<n>`: these words, times `NAMES_PER_WORD` numbers.
const NAME_WORDS: [&str; 8] = [
    "alpha", "beta", "gamma", "delta", "kappa", "omega", "sigma", "theta",
];
const NAMES_PER_WORD: u64 = 50;
const NAMES: u64 = NAME_WORDS.len() as u64 * NAMES_PER_WORD;
/// Functions `f_0` ... (never defined: a call folds by a fixed rule), and free variables
/// `input_0` ... (never bound: they are not constants).
const FUNCTIONS: u64 = 16;
const FREE_VARIABLES: u64 = 8;
/// Nesting limits of the generated expressions and blocks.
const MAX_EXPR_DEPTH: u32 = 3;
const MAX_BLOCK_DEPTH: u32 = 3;

/// The compiler's input: the source text and its number of tokens.
struct Source {
    text: std::vec::Vec<u8>,
    tokens: u64,
}

/// Generates the source: `let <name> = <expr>;` statements and nested `{ ... }` blocks.
/// Expressions mix integer literals, names bound by an earlier `let`, free variables, calls of
/// 0 to 4 arguments, `+ - *` and parentheses.
struct SourceGen {
    rng: XorShift,
    text: std::vec::Vec<u8>,
    tokens: u64,
    /// The names bound so far (each once), which expressions may refer to.
    bound: std::vec::Vec<u64>,
    is_bound: std::vec::Vec<bool>,
}

impl SourceGen {
    /// Statements until the text reaches `SOURCE_BYTES`.
    fn generate() -> Source {
        let mut g = SourceGen {
            rng: XorShift::new(0x853c_49e6_748f_ea9b),
            text: std::vec::Vec::with_capacity(SOURCE_BYTES + 4096),
            tokens: 0,
            bound: std::vec::Vec::new(),
            is_bound: vec![false; NAMES as usize],
        };
        while g.text.len() < SOURCE_BYTES {
            g.stmt(0);
        }
        Source {
            text: g.text,
            tokens: g.tokens,
        }
    }

    /// One token and a space after it.
    fn token(&mut self, token: core::fmt::Arguments<'_>) {
        self.text.write_fmt(token).expect("writing to a Vec");
        self.text.push(b' ');
        self.tokens += 1;
    }

    /// A new line, indented for `depth`.
    fn line(&mut self, depth: u32) {
        self.text.push(b'\n');
        self.text.extend((0..4 * depth).map(|_| b' '));
    }

    /// A block (one time in ten, below the nesting limit) of 2 to 6 statements, or a `let` of
    /// a random name.
    fn stmt(&mut self, depth: u32) {
        if depth < MAX_BLOCK_DEPTH && self.rng.below(10) == 0 {
            self.token(format_args!("{{"));
            for _ in 0..2 + self.rng.below(5) {
                self.line(depth + 1);
                self.stmt(depth + 1);
            }
            self.line(depth);
            self.token(format_args!("}}"));
        } else {
            let name = self.rng.below(NAMES);
            self.token(format_args!("let"));
            self.name(name);
            self.token(format_args!("="));
            self.expr(0);
            self.token(format_args!(";"));
            if !self.is_bound[name as usize] {
                self.is_bound[name as usize] = true;
                self.bound.push(name);
            }
        }
        if depth == 0 {
            self.line(0);
        }
    }

    /// The variable name numbered `name`.
    fn name(&mut self, name: u64) {
        let word = NAME_WORDS[(name % NAME_WORDS.len() as u64) as usize];
        self.token(format_args!("{word}_{}", name / NAME_WORDS.len() as u64));
    }

    /// A name bound earlier, or (one time in eight, or while none is bound) a free variable.
    fn reference(&mut self) {
        if self.bound.is_empty() || self.rng.below(8) == 0 {
            let free = self.rng.below(FREE_VARIABLES);
            self.token(format_args!("input_{free}"));
        } else {
            let name = self.bound[self.rng.below(self.bound.len() as u64) as usize];
            self.name(name);
        }
    }

    /// Terms joined by `+` and `-`.
    fn expr(&mut self, depth: u32) {
        for i in 0..1 + self.rng.below(3) {
            if i > 0 {
                let op = if self.rng.below(3) == 0 { "-" } else { "+" };
                self.token(format_args!("{op}"));
            }
            self.term(depth);
        }
    }

    /// Factors joined by `*`.
    fn term(&mut self, depth: u32) {
        for i in 0..1 + self.rng.below(2) {
            if i > 0 {
                self.token(format_args!("*"));
            }
            self.factor(depth);
        }
    }

    /// A literal, a name, a call or a parenthesised expression (the last two only below the
    /// depth limit).
    fn factor(&mut self, depth: u32) {
        let choices = if depth < MAX_EXPR_DEPTH { 10 } else { 7 };
        match self.rng.below(choices) {
            0..=3 => {
                let value = self.rng.below(1000);
                self.token(format_args!("{value}"));
            }
            4..=6 => self.reference(),
            7 | 8 => {
                let f = self.rng.below(FUNCTIONS);
                self.token(format_args!("f_{f}"));
                self.token(format_args!("("));
                for i in 0..self.rng.below(5) {
                    if i > 0 {
                        self.token(format_args!(","));
                    }
                    self.expr(depth + 1);
                }
                self.token(format_args!(")"));
            }
            _ => {
                self.token(format_args!("("));
                self.expr(depth + 1);
                self.token(format_args!(")"));
            }
        }
    }
}

/// `+`, `-` or `*`, in wrapping `i64` arithmetic.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BinOp {
    Add,
    Sub,
    Mul,
}

impl BinOp {
    /// `l op r`, wrapping.
    fn apply(self, l: i64, r: i64) -> i64 {
        match self {
            BinOp::Add => l.wrapping_add(r),
            BinOp::Sub => l.wrapping_sub(r),
            BinOp::Mul => l.wrapping_mul(r),
        }
    }
}

/// A token of the source.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Token {
    Let,
    /// An identifier: its symbol (interned).
    Ident(u32),
    Int(i64),
    Op(BinOp),
    Assign,
    Semi,
    Comma,
    LParen,
    RParen,
    LBrace,
    RBrace,
}

/// An expression node; its children are in the allocator `Al`.
enum Expr<Al: Allocator> {
    Int(i64),
    Var(u32),
    Binary(BinOp, Box<Expr<Al>, Al>, Box<Expr<Al>, Al>),
    Call(u32, Vec<Expr<Al>, Al>),
}

/// A statement: `let <symbol> = <expr>;` or a block.
enum Stmt<Al: Allocator> {
    Let(u32, Expr<Al>),
    Block(Vec<Stmt<Al>, Al>),
}

/// The lexer's output: the tokens and the symbol table (identifier -> symbol).
struct Lexed<Al: Allocator> {
    tokens: Vec<Token, Al>,
    symbols: Map<Bytes<Al>, u32, Al>,
}

/// The symbol of `word`: looked up by its bytes, copied into the allocator only when new.
fn intern<Al: Allocator + Copy>(symbols: &mut Map<Bytes<Al>, u32, Al>, word: &[u8], a: Al) -> u32 {
    if let Some(&symbol) = symbols.get(word) {
        return symbol;
    }
    let symbol = symbols.len() as u32;
    symbols.insert(Bytes::copy_of(word, a), symbol);
    symbol
}

fn lex<Al: Allocator + Copy>(src: &[u8], a: Al) -> Lexed<Al> {
    let mut tokens = Vec::new_in(a);
    let mut symbols = new_map(a);
    let mut i = 0;
    while let Some(&c) = src.get(i) {
        let start = i;
        i += 1;
        let token = match c {
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            b'+' => Token::Op(BinOp::Add),
            b'-' => Token::Op(BinOp::Sub),
            b'*' => Token::Op(BinOp::Mul),
            b'=' => Token::Assign,
            b';' => Token::Semi,
            b',' => Token::Comma,
            b'(' => Token::LParen,
            b')' => Token::RParen,
            b'{' => Token::LBrace,
            b'}' => Token::RBrace,
            b'0'..=b'9' => {
                let mut value = i64::from(c - b'0');
                while let Some(&d @ b'0'..=b'9') = src.get(i) {
                    value = value.wrapping_mul(10).wrapping_add(i64::from(d - b'0'));
                    i += 1;
                }
                Token::Int(value)
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                while src
                    .get(i)
                    .is_some_and(|&d| d.is_ascii_alphanumeric() || d == b'_')
                {
                    i += 1;
                }
                match &src[start..i] {
                    b"let" => Token::Let,
                    word => Token::Ident(intern(&mut symbols, word, a)),
                }
            }
            _ => panic!("unexpected byte {c:#04x} at {start}"),
        };
        tokens.push(token);
    }
    Lexed { tokens, symbols }
}

/// A recursive-descent parser over the tokens, building the tree in `a`. The input is generated
/// and well formed: a parse error is a bug, and panics.
struct Parser<'t, Al> {
    tokens: &'t [Token],
    pos: usize,
    a: Al,
}

impl<Al: Allocator + Copy> Parser<'_, Al> {
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.pos).copied()
    }

    fn next(&mut self) -> Token {
        let token = self.peek().expect("parse error: unexpected end of input");
        self.pos += 1;
        token
    }

    fn expect(&mut self, expected: Token) {
        let token = self.next();
        assert_eq!(token, expected, "parse error at token {}", self.pos - 1);
    }

    /// Statements up to the end of the input.
    fn program(&mut self) -> Vec<Stmt<Al>, Al> {
        let mut body = Vec::new_in(self.a);
        while self.peek().is_some() {
            body.push(self.stmt());
        }
        body
    }

    fn stmt(&mut self) -> Stmt<Al> {
        match self.next() {
            Token::Let => {
                let Token::Ident(symbol) = self.next() else {
                    panic!("parse error: no name after `let` at token {}", self.pos - 1);
                };
                self.expect(Token::Assign);
                let value = self.expr();
                self.expect(Token::Semi);
                Stmt::Let(symbol, value)
            }
            Token::LBrace => {
                let mut body = Vec::new_in(self.a);
                while self.peek() != Some(Token::RBrace) {
                    body.push(self.stmt());
                }
                self.pos += 1;
                Stmt::Block(body)
            }
            token => panic!("parse error: {token:?} at token {}", self.pos - 1),
        }
    }

    fn binary(&self, op: BinOp, l: Expr<Al>, r: Expr<Al>) -> Expr<Al> {
        Expr::Binary(op, Box::new_in(l, self.a), Box::new_in(r, self.a))
    }

    /// Terms joined by `+` and `-` (left-associative).
    fn expr(&mut self) -> Expr<Al> {
        let mut l = self.term();
        while let Some(Token::Op(op @ (BinOp::Add | BinOp::Sub))) = self.peek() {
            self.pos += 1;
            let r = self.term();
            l = self.binary(op, l, r);
        }
        l
    }

    /// Factors joined by `*` (left-associative).
    fn term(&mut self) -> Expr<Al> {
        let mut l = self.factor();
        while let Some(Token::Op(BinOp::Mul)) = self.peek() {
            self.pos += 1;
            let r = self.factor();
            l = self.binary(BinOp::Mul, l, r);
        }
        l
    }

    /// A literal, a call, a name or a parenthesised expression.
    fn factor(&mut self) -> Expr<Al> {
        match self.next() {
            Token::Int(value) => Expr::Int(value),
            Token::Ident(symbol) if self.peek() == Some(Token::LParen) => {
                self.pos += 1;
                let mut args = Vec::new_in(self.a);
                if self.peek() == Some(Token::RParen) {
                    self.pos += 1;
                } else {
                    loop {
                        args.push(self.expr());
                        match self.next() {
                            Token::Comma => {}
                            Token::RParen => break,
                            token => panic!("parse error: {token:?} in a call"),
                        }
                    }
                }
                Expr::Call(symbol, args)
            }
            Token::Ident(symbol) => Expr::Var(symbol),
            Token::LParen => {
                let e = self.expr();
                self.expect(Token::RParen);
                e
            }
            token => panic!("parse error: {token:?} at token {}", self.pos - 1),
        }
    }
}

/// Constant folding into a new tree: literal op literal is a literal, a name bound by `let` to a
/// constant is that constant, and a call whose arguments are all constants is the wrapping sum
/// of its arguments times (its symbol + 1).
struct Folder<Al: Allocator> {
    /// Per symbol: the constant its last `let` bound it to, if any.
    env: Vec<Option<i64>, Al>,
    a: Al,
}

impl<Al: Allocator + Copy> Folder<Al> {
    fn stmts(&mut self, body: &[Stmt<Al>]) -> Vec<Stmt<Al>, Al> {
        let mut out = Vec::with_capacity_in(body.len(), self.a);
        for stmt in body {
            out.push(self.stmt(stmt));
        }
        out
    }

    fn stmt(&mut self, stmt: &Stmt<Al>) -> Stmt<Al> {
        match stmt {
            Stmt::Let(symbol, value) => {
                let value = self.expr(value);
                self.env[*symbol as usize] = match value {
                    Expr::Int(v) => Some(v),
                    _ => None,
                };
                Stmt::Let(*symbol, value)
            }
            Stmt::Block(body) => Stmt::Block(self.stmts(body)),
        }
    }

    fn expr(&self, e: &Expr<Al>) -> Expr<Al> {
        match e {
            Expr::Int(v) => Expr::Int(*v),
            Expr::Var(symbol) => match self.env[*symbol as usize] {
                Some(v) => Expr::Int(v),
                None => Expr::Var(*symbol),
            },
            Expr::Binary(op, l, r) => match (self.expr(l), self.expr(r)) {
                (Expr::Int(l), Expr::Int(r)) => Expr::Int(op.apply(l, r)),
                (l, r) => Expr::Binary(*op, Box::new_in(l, self.a), Box::new_in(r, self.a)),
            },
            Expr::Call(f, args) => {
                let mut folded = Vec::with_capacity_in(args.len(), self.a);
                let mut sum = Some(0i64);
                for arg in args.iter() {
                    let arg = self.expr(arg);
                    sum = match (sum, &arg) {
                        (Some(s), Expr::Int(v)) => Some(s.wrapping_add(*v)),
                        _ => None,
                    };
                    folded.push(arg);
                }
                match sum {
                    Some(s) => Expr::Int(s.wrapping_mul(i64::from(*f) + 1)),
                    None => Expr::Call(*f, folded),
                }
            }
        }
    }
}

/// What the compiler front end checks: of the input, the tokens and distinct identifiers; of
/// the folded tree, its nodes (statements and expressions), its literals and their wrapping sum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CompileSum {
    tokens: u64,
    symbols: u64,
    nodes: u64,
    literals: u64,
    literal_sum: i64,
}

impl CompileSum {
    fn stmts<Al: Allocator>(&mut self, body: &[Stmt<Al>]) {
        for stmt in body {
            self.nodes += 1;
            match stmt {
                Stmt::Let(_, value) => self.expr(value),
                Stmt::Block(body) => self.stmts(body),
            }
        }
    }

    fn expr<Al: Allocator>(&mut self, e: &Expr<Al>) {
        self.nodes += 1;
        match e {
            Expr::Int(v) => {
                self.literals += 1;
                self.literal_sum = self.literal_sum.wrapping_add(*v);
            }
            Expr::Var(_) => {}
            Expr::Binary(_, l, r) => {
                self.expr(l);
                self.expr(r);
            }
            Expr::Call(_, args) => args.iter().for_each(|arg| self.expr(arg)),
        }
    }
}

/// One unit of the compiler front end: lex, parse, fold, summarise, drop all.
fn compile<Al: Allocator + Copy>(src: &[u8], a: Al) -> CompileSum {
    let Lexed { tokens, symbols } = lex(src, a);
    let program = Parser {
        tokens: &tokens,
        pos: 0,
        a,
    }
    .program();
    let mut env = Vec::with_capacity_in(symbols.len(), a);
    env.resize(symbols.len(), None);
    let mut folder = Folder { env, a };
    let folded = folder.stmts(&program);
    let mut sum = CompileSum {
        tokens: tokens.len() as u64,
        symbols: symbols.len() as u64,
        ..CompileSum::default()
    };
    sum.stmts(&folded);
    sum
}

// ---------------------------------------------------------------------------------------------
// Request handler.

/// Requests per unit; the large one's place in the list and its body's size.
const REQUESTS: usize = 1_000;
const LARGE_AT: usize = REQUESTS / 2;
const LARGE_BODY: usize = 4 << 20;
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
struct Requests {
    list: std::vec::Vec<std::vec::Vec<u8>>,
    lines: u64,
}

/// Generates the requests: `POST /api/orders/<n> HTTP/1.1`, 8 to 20 headers, a blank line and a
/// body of records `id=..;name=..;qty=..;price=..` (one in four with a `note`). Bodies are 1 to
/// 4 KB (92%), 4 to 16 KB (6%) or 16 to 32 KB (2%), except one, in the middle of the list, of
/// `LARGE_BODY` bytes.
fn generate_requests() -> Requests {
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
struct ServeSum {
    lines: u64,
    records: u64,
    response_bytes: u64,
    response_hash: u64,
    total: u64,
}

impl ServeSum {
    /// `self` followed by `one` (counts summed, checksums folded in order).
    fn add(self, one: ServeSum) -> ServeSum {
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
fn handle<Al: Allocator + Copy>(req: &[u8], a: Al) -> ServeSum {
    let head = parse_head(req, a);
    let records = parse_records(head.body, a);
    respond(&head, &records, a)
}

// ---------------------------------------------------------------------------------------------
// Graph frame and graph churn.

const NODES: usize = 10_000;
const EDGES: usize = 50_000;
/// Frames of the churn case, and the edges replaced before each (5% of them).
const FRAMES: usize = 16;
const REPLACED: usize = EDGES / 20;

/// The edges `(from, to)`, uniformly random.
fn generate_edges() -> std::vec::Vec<(u32, u32)> {
    let mut rng = XorShift::new(0x6a09_e667_f3bc_c909);
    (0..EDGES)
        .map(|_| {
            (
                rng.below(NODES as u64) as u32,
                rng.below(NODES as u64) as u32,
            )
        })
        .collect()
}

/// Adjacency lists in `a`: `NODES` empty vectors, then one push per edge (no reserve).
fn build_graph<Al: Allocator + Copy>(edges: &[(u32, u32)], a: Al) -> Vec<Vec<u32, Al>, Al> {
    let mut adjacency = Vec::with_capacity_in(NODES, a);
    for _ in 0..NODES {
        adjacency.push(Vec::new_in(a));
    }
    for &(from, to) in edges {
        adjacency[from as usize].push(to);
    }
    adjacency
}

/// What a breadth-first search from node 0 checks: the nodes reached and the wrapping sum of
/// `node * 31 + distance` over them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct BfsSum {
    reached: u64,
    sum: u64,
}

/// Breadth-first search from node 0: a vector as the queue (a head index, no ring), the
/// distances in a map, all in `a`.
fn bfs<Al: Allocator + Copy>(adjacency: &[Vec<u32, Al>], a: Al) -> BfsSum {
    let mut distances: Map<u32, u32, Al> = new_map(a);
    let mut queue = Vec::new_in(a);
    distances.insert(0, 0);
    queue.push(0u32);
    let mut result = BfsSum { reached: 1, sum: 0 };
    let mut head = 0;
    while let Some(&node) = queue.get(head) {
        head += 1;
        let next_distance = distances[&node] + 1;
        for &next in adjacency[node as usize].iter() {
            if let hashbrown::hash_map::Entry::Vacant(slot) = distances.entry(next) {
                slot.insert(next_distance);
                queue.push(next);
                result.reached += 1;
                result.sum = result
                    .sum
                    .wrapping_add(u64::from(next) * 31 + u64::from(next_distance));
            }
        }
    }
    result
}

/// What the churn case checks: the nodes reached over all frames, and the frames' sums folded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ChurnSum {
    reached: u64,
    hash: u64,
}

/// One unit of the graph frame: build, search, drop.
fn graph_frame<Al: Allocator + Copy>(edges: &[(u32, u32)], a: Al) -> BfsSum {
    let adjacency = build_graph(edges, a);
    bfs(&adjacency, a)
}

/// One unit of the graph churn: build, then `FRAMES` times replace `REPLACED` edges (a random
/// edge of a random node with edges is removed, by `swap_remove`; a random edge is added) and
/// search; drop.
fn graph_churn<Al: Allocator + Copy>(edges: &[(u32, u32)], a: Al) -> ChurnSum {
    let mut adjacency = build_graph(edges, a);
    let mut rng = XorShift::new(0xbb67_ae85_84ca_a73b);
    let mut result = ChurnSum::default();
    for _ in 0..FRAMES {
        for _ in 0..REPLACED {
            let list = loop {
                let list = &mut adjacency[rng.below(NODES as u64) as usize];
                if !list.is_empty() {
                    break list;
                }
            };
            let gone = rng.below(list.len() as u64) as usize;
            list.swap_remove(gone);
            let from = rng.below(NODES as u64) as usize;
            adjacency[from].push(rng.below(NODES as u64) as u32);
        }
        let frame = bfs(&adjacency, a);
        result.reached += frame.reached;
        result.hash = result.hash.wrapping_mul(31).wrapping_add(frame.sum);
    }
    result
}

// ---------------------------------------------------------------------------------------------
// The suite.

/// The inputs of every case, generated once per process (outside the memory meter's count) and
/// shared by all crates.
struct Inputs {
    source: Source,
    requests: Requests,
    edges: std::vec::Vec<(u32, u32)>,
}

fn inputs() -> &'static Inputs {
    static INPUTS: OnceLock<Inputs> = OnceLock::new();
    INPUTS.get_or_init(|| {
        unmetered(|| Inputs {
            source: SourceGen::generate(),
            requests: generate_requests(),
            edges: generate_edges(),
        })
    })
}

#[derive(Clone, Copy)]
enum Case {
    /// The compiler front end over the generated source ([`compile`]).
    Compiler,
    /// The request handler over the `REQUESTS` requests ([`handle`]), a reset after each.
    Requests,
    /// [`graph_frame`].
    GraphFrame,
    /// [`graph_churn`].
    GraphChurn,
}

impl Case {
    /// Tokens; lines parsed; edges; edges times frames.
    fn ops(self) -> u64 {
        match self {
            Case::Compiler => inputs().source.tokens,
            Case::Requests => inputs().requests.lines,
            Case::GraphFrame => EDGES as u64,
            Case::GraphChurn => (FRAMES * EDGES) as u64,
        }
    }

    fn run<A: BenchAlloc>(self, d: &mut Driver<'_, '_>) {
        let input = inputs();
        match self {
            Case::Compiler => {
                static EXPECTED: OnceLock<CompileSum> = OnceLock::new();
                let src = &input.source.text[..];
                let expected = once(&EXPECTED, || compile(src, Global));
                assert_eq!(expected.tokens, input.source.tokens, "tokens generated");
                reset_loop::<A>(d, |a| {
                    assert_eq!(compile(black_box(src), Api02(a)), expected);
                });
            }
            Case::Requests => {
                static EXPECTED: OnceLock<ServeSum> = OnceLock::new();
                let list = &input.requests.list;
                let expected = once(&EXPECTED, || {
                    list.iter()
                        .fold(ServeSum::default(), |sum, req| sum.add(handle(req, Global)))
                });
                assert_eq!(expected.lines, input.requests.lines, "lines generated");
                let mut a = A::new();
                d.steady(|| {
                    let mut sum = ServeSum::default();
                    for req in black_box(list) {
                        sum = sum.add(handle(req, Api02(&a)));
                        a.reset();
                    }
                    assert_eq!(sum, expected);
                });
            }
            Case::GraphFrame => {
                static EXPECTED: OnceLock<BfsSum> = OnceLock::new();
                let edges = &input.edges[..];
                let expected = once(&EXPECTED, || graph_frame(edges, Global));
                reset_loop::<A>(d, |a| {
                    assert_eq!(graph_frame(black_box(edges), Api02(a)), expected);
                });
            }
            Case::GraphChurn => {
                static EXPECTED: OnceLock<ChurnSum> = OnceLock::new();
                let edges = &input.edges[..];
                let expected = once(&EXPECTED, || graph_churn(edges, Global));
                reset_loop::<A>(d, |a| {
                    assert_eq!(graph_churn(black_box(edges), Api02(a)), expected);
                });
            }
        }
    }
}

/// One row: the case for every crate, arena-pool first (criterion-table's baseline column), its
/// `SizeClassPool` second.
fn row(r: &mut Runner<'_>, name: &str, case: Case) {
    fn one<A: BenchAlloc>(r: &mut Runner<'_>, name: &str, case: Case) {
        r.bench(A::NAME, name, case.ops(), |d| case.run::<A>(d));
    }
    one::<arena_pool::Arena>(r, name, case);
    one::<arena_pool::SizeClassPool>(r, name, case);
    one::<bumpalo::Bump>(r, name, case);
    one::<bump_scope::Bump>(r, name, case);
    one::<blink_alloc::Blink>(r, name, case);
    one::<stumpalo::Arena>(r, name, case);
    one::<Malloc>(r, name, case);
}

fn workloads(r: &mut Runner<'_>) {
    // Iterations of milliseconds.
    r.long_running();
    row(
        r,
        &format!(
            "compiler front end: lex, intern, parse, fold {} KB",
            SOURCE_BYTES / 1000
        ),
        Case::Compiler,
    );
    row(
        r,
        &format!(
            "request handler: {REQUESTS} requests (one of {} MiB), parse + respond",
            LARGE_BODY >> 20
        ),
        Case::Requests,
    );
    row(
        r,
        &format!("graph frame: {NODES} nodes, {EDGES} edges, BFS"),
        Case::GraphFrame,
    );
    row(
        r,
        &format!("graph churn: {FRAMES} frames, 5% of edges replaced per frame"),
        Case::GraphChurn,
    );
}

fn main() {
    run_suite("workloads", workloads);
}
