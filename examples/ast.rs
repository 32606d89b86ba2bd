//! A small interpreter on one `Arena`: a recursive-descent parser for integer arithmetic with
//! variables and `let` bindings (`let x = 3 * (y + 4); x - y / 2`) builds its AST from
//! `Box<Expr, &Arena>` nodes, interns identifiers in a `hashbrown::HashMap` that lives in the
//! arena (names copied with `alloc_str`), evaluates each program in an environment and prints the
//! tree. Before parsing, each program is lexed into a scratch token vector inside `with_scope`,
//! whose memory goes back to the arena when the scope ends.
//!
//! Run with `cargo run --release --example ast`.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use core::fmt;

use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{Arena, ArenaRef};
use hashbrown::{DefaultHashBuilder, HashMap};

// ----- tokens ---------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token<'s> {
    Num(i64),
    Ident(&'s str),
    Let,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    LParen,
    RParen,
    Assign,
    Semi,
}

#[derive(Debug, PartialEq, Eq)]
enum Error {
    UnexpectedChar(usize, char),
    NumberTooLarge(usize),
    Unbalanced(usize),
    Expected(usize, &'static str),
    Unbound(std::string::String),
    DivisionByZero,
    Overflow,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnexpectedChar(at, c) => write!(f, "unexpected character {c:?} at {at}"),
            Error::NumberTooLarge(at) => write!(f, "number too large at {at}"),
            Error::Unbalanced(at) => write!(f, "unbalanced parenthesis at {at}"),
            Error::Expected(at, what) => write!(f, "expected {what} at {at}"),
            Error::Unbound(name) => write!(f, "unbound variable `{name}`"),
            Error::DivisionByZero => write!(f, "division by zero"),
            Error::Overflow => write!(f, "arithmetic overflow"),
        }
    }
}

/// Produces tokens on demand, each with its byte offset.
struct Lexer<'s> {
    src: &'s str,
    pos: usize,
}

impl<'s> Lexer<'s> {
    fn new(src: &'s str) -> Self {
        Lexer { src, pos: 0 }
    }

    fn next_token(&mut self) -> Result<Option<(usize, Token<'s>)>, Error> {
        let rest = &self.src[self.pos..];
        let trimmed = rest.trim_start();
        self.pos += rest.len() - trimmed.len();
        let start = self.pos;
        let Some(c) = trimmed.chars().next() else {
            return Ok(None);
        };
        let word_len = |pred: fn(char) -> bool| trimmed.find(|c| !pred(c)).unwrap_or(trimmed.len());
        let (token, len) = match c {
            '0'..='9' => {
                let len = word_len(|c| c.is_ascii_digit());
                let n = trimmed[..len]
                    .parse()
                    .map_err(|_| Error::NumberTooLarge(start))?;
                (Token::Num(n), len)
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let len = word_len(|c| c.is_ascii_alphanumeric() || c == '_');
                match &trimmed[..len] {
                    "let" => (Token::Let, len),
                    name => (Token::Ident(name), len),
                }
            }
            '+' => (Token::Plus, 1),
            '-' => (Token::Minus, 1),
            '*' => (Token::Star, 1),
            '/' => (Token::Slash, 1),
            '%' => (Token::Percent, 1),
            '(' => (Token::LParen, 1),
            ')' => (Token::RParen, 1),
            '=' => (Token::Assign, 1),
            ';' => (Token::Semi, 1),
            c => return Err(Error::UnexpectedChar(start, c)),
        };
        self.pos += len;
        Ok(Some((start, token)))
    }
}

/// What the scoped check learned about a program.
#[derive(Clone, Copy, Debug)]
struct TokenStats {
    tokens: usize,
    identifiers: usize,
    max_depth: usize,
    /// Bytes the scratch vector took in the scope.
    scratch_bytes: usize,
}

/// Lexes the whole program into a scratch vector allocated in `scope`, and checks that it lexes
/// and that its parentheses balance. Everything allocated here is freed when the scope ends.
fn check(src: &str, scope: &ArenaRef<'_>) -> Result<TokenStats, Error> {
    let base = scope.used_bytes();
    let mut tokens: Vec<(usize, Token<'_>), &ArenaRef<'_>> = Vec::new_in(scope);
    let mut lexer = Lexer::new(src);
    while let Some(t) = lexer.next_token()? {
        tokens.push(t);
    }
    let (mut depth, mut max_depth) = (0usize, 0);
    for &(at, t) in &tokens {
        match t {
            Token::LParen => {
                depth += 1;
                max_depth = max_depth.max(depth);
            }
            Token::RParen => depth = depth.checked_sub(1).ok_or(Error::Unbalanced(at))?,
            _ => {}
        }
    }
    if depth != 0 {
        return Err(Error::Unbalanced(src.len()));
    }
    Ok(TokenStats {
        tokens: tokens.len(),
        identifiers: tokens
            .iter()
            .filter(|(_, t)| matches!(t, Token::Ident(_)))
            .count(),
        max_depth,
        scratch_bytes: scope.used_bytes() - base,
    })
}

// ----- the AST and the interner ---------------------------------------------------------------

/// An AST node owned by the arena. `Box<Expr, &Arena>` drops properly: dropping the tree runs
/// `Expr`'s drop glue and hands every node back to the arena (the last block is rolled back).
/// Placing nodes with `arena.alloc(expr)` instead would return `&mut Expr` and never run a
/// destructor: harmless for plain data like this, but a node owning a heap `String` would leak
/// its buffer at reset.
type Node<'a> = Box<Expr<'a>, &'a Arena>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

enum Expr<'a> {
    Num(i64),
    Var(u32),
    Neg(Node<'a>),
    Bin(BinOp, Node<'a>, Node<'a>),
    /// `let name = value; body`
    Let {
        name: u32,
        value: Node<'a>,
        body: Node<'a>,
    },
}

/// Identifier names, each stored once in the arena, numbered in order of appearance.
struct Interner<'a> {
    arena: &'a Arena,
    ids: HashMap<&'a str, u32, DefaultHashBuilder, &'a Arena>,
    names: Vec<&'a str, &'a Arena>,
}

impl<'a> Interner<'a> {
    fn new(arena: &'a Arena) -> Self {
        Interner {
            arena,
            ids: HashMap::new_in(arena),
            names: Vec::new_in(arena),
        }
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let stored: &'a str = self.arena.alloc_str(name);
        let id = self.names.len() as u32;
        self.names.push(stored);
        self.ids.insert(stored, id);
        id
    }

    fn name(&self, id: u32) -> &'a str {
        self.names[id as usize]
    }
}

// ----- the parser -----------------------------------------------------------------------------

/// program := "let" ident "=" expr ";" program | expr
/// expr    := term (("+" | "-") term)*
/// term    := unary (("*" | "/" | "%") unary)*
/// unary   := "-" unary | atom
/// atom    := number | ident | "(" program ")"
struct Parser<'s, 'a, 'i> {
    lexer: Lexer<'s>,
    peeked: Option<(usize, Token<'s>)>,
    arena: &'a Arena,
    interner: &'i mut Interner<'a>,
    nodes: usize,
}

impl<'s, 'a, 'i> Parser<'s, 'a, 'i> {
    fn parse(src: &'s str, interner: &'i mut Interner<'a>) -> Result<(Node<'a>, usize), Error> {
        let mut parser = Parser {
            lexer: Lexer::new(src),
            peeked: None,
            arena: interner.arena,
            interner,
            nodes: 0,
        };
        let program = parser.program()?;
        match parser.peek()? {
            None => Ok((program, parser.nodes)),
            Some((at, _)) => Err(Error::Expected(at, "end of input")),
        }
    }

    fn peek(&mut self) -> Result<Option<(usize, Token<'s>)>, Error> {
        if self.peeked.is_none() {
            self.peeked = self.lexer.next_token()?;
        }
        Ok(self.peeked)
    }

    fn bump(&mut self) -> Result<Option<(usize, Token<'s>)>, Error> {
        let t = self.peek()?;
        self.peeked = None;
        Ok(t)
    }

    fn offset(&mut self) -> Result<usize, Error> {
        Ok(self.peek()?.map_or(self.lexer.src.len(), |(at, _)| at))
    }

    fn expect(&mut self, token: Token<'_>, what: &'static str) -> Result<(), Error> {
        match self.bump()? {
            Some((_, t)) if t == token => Ok(()),
            Some((at, _)) => Err(Error::Expected(at, what)),
            None => Err(Error::Expected(self.lexer.src.len(), what)),
        }
    }

    fn node(&mut self, expr: Expr<'a>) -> Node<'a> {
        self.nodes += 1;
        Box::new_in(expr, self.arena)
    }

    fn program(&mut self) -> Result<Node<'a>, Error> {
        if let Some((_, Token::Let)) = self.peek()? {
            self.bump()?;
            let name = match self.bump()? {
                Some((_, Token::Ident(name))) => self.interner.intern(name),
                Some((at, _)) => return Err(Error::Expected(at, "a name after `let`")),
                None => return Err(Error::Expected(self.lexer.src.len(), "a name")),
            };
            self.expect(Token::Assign, "`=`")?;
            let value = self.expr()?;
            self.expect(Token::Semi, "`;`")?;
            let body = self.program()?;
            return Ok(self.node(Expr::Let { name, value, body }));
        }
        self.expr()
    }

    fn expr(&mut self) -> Result<Node<'a>, Error> {
        let mut lhs = self.term()?;
        loop {
            let op = match self.peek()? {
                Some((_, Token::Plus)) => BinOp::Add,
                Some((_, Token::Minus)) => BinOp::Sub,
                _ => return Ok(lhs),
            };
            self.bump()?;
            let rhs = self.term()?;
            lhs = self.node(Expr::Bin(op, lhs, rhs));
        }
    }

    fn term(&mut self) -> Result<Node<'a>, Error> {
        let mut lhs = self.unary()?;
        loop {
            let op = match self.peek()? {
                Some((_, Token::Star)) => BinOp::Mul,
                Some((_, Token::Slash)) => BinOp::Div,
                Some((_, Token::Percent)) => BinOp::Rem,
                _ => return Ok(lhs),
            };
            self.bump()?;
            let rhs = self.unary()?;
            lhs = self.node(Expr::Bin(op, lhs, rhs));
        }
    }

    fn unary(&mut self) -> Result<Node<'a>, Error> {
        if let Some((_, Token::Minus)) = self.peek()? {
            self.bump()?;
            let operand = self.unary()?;
            return Ok(self.node(Expr::Neg(operand)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Node<'a>, Error> {
        let at = self.offset()?;
        match self.bump()? {
            Some((_, Token::Num(n))) => Ok(self.node(Expr::Num(n))),
            Some((_, Token::Ident(name))) => {
                let id = self.interner.intern(name);
                Ok(self.node(Expr::Var(id)))
            }
            Some((_, Token::LParen)) => {
                let inner = self.program()?;
                self.expect(Token::RParen, "`)`")?;
                Ok(inner)
            }
            _ => Err(Error::Expected(at, "a number, a name or `(`")),
        }
    }
}

// ----- evaluation and printing ----------------------------------------------------------------

/// Bindings in scope, innermost last; `let` pushes one for its body and pops it after.
type Env<'a> = Vec<(u32, i64), &'a Arena>;

fn eval(expr: &Expr<'_>, env: &mut Env<'_>, interner: &Interner<'_>) -> Result<i64, Error> {
    Ok(match expr {
        Expr::Num(n) => *n,
        Expr::Var(id) => match env.iter().rev().find(|(name, _)| name == id) {
            Some(&(_, value)) => value,
            None => return Err(Error::Unbound(interner.name(*id).into())),
        },
        Expr::Neg(e) => eval(e, env, interner)?
            .checked_neg()
            .ok_or(Error::Overflow)?,
        Expr::Bin(op, l, r) => {
            let (l, r) = (eval(l, env, interner)?, eval(r, env, interner)?);
            match op {
                BinOp::Add => l.checked_add(r).ok_or(Error::Overflow)?,
                BinOp::Sub => l.checked_sub(r).ok_or(Error::Overflow)?,
                BinOp::Mul => l.checked_mul(r).ok_or(Error::Overflow)?,
                BinOp::Div | BinOp::Rem if r == 0 => return Err(Error::DivisionByZero),
                BinOp::Div => l.checked_div(r).ok_or(Error::Overflow)?,
                BinOp::Rem => l.checked_rem(r).ok_or(Error::Overflow)?,
            }
        }
        Expr::Let { name, value, body } => {
            let value = eval(value, env, interner)?;
            env.push((*name, value));
            let result = eval(body, env, interner);
            env.pop();
            result?
        }
    })
}

/// Prints the tree, one node per line, children indented below their parent.
fn print_tree(expr: &Expr<'_>, interner: &Interner<'_>, depth: usize, label: &str) {
    let pad = "  ".repeat(depth);
    match expr {
        Expr::Num(n) => println!("    {pad}{label}{n}"),
        Expr::Var(id) => println!("    {pad}{label}{}", interner.name(*id)),
        Expr::Neg(e) => {
            println!("    {pad}{label}neg");
            print_tree(e, interner, depth + 1, "");
        }
        Expr::Bin(op, l, r) => {
            println!("    {pad}{label}{op:?}");
            print_tree(l, interner, depth + 1, "");
            print_tree(r, interner, depth + 1, "");
        }
        Expr::Let { name, value, body } => {
            println!("    {pad}{label}let {}", interner.name(*name));
            print_tree(value, interner, depth + 1, "= ");
            print_tree(body, interner, depth + 1, "in ");
        }
    }
}

// ----- the driver -----------------------------------------------------------------------------

/// The environment every program starts with.
const INPUTS: [(&str, i64); 3] = [("y", 10), ("width", 12), ("height", 7)];

/// Sample programs and what they must evaluate to.
const PROGRAMS: [(&str, Result<i64, &str>); 9] = [
    ("let x = 3 * (y + 4); x - y / 2", Ok(37)),
    (
        "let a = 2; let b = a * a * a; (b - a) * -3 + b / 3",
        Ok(-16),
    ),
    (
        "let x = 1; let x = x + 10; (let x = x * 2; x + 1) * x",
        Ok(253),
    ),
    (
        "width * height - (let border = 2; (width - border) * (height - border))",
        Ok(34),
    ),
    ("1 + (2 * 3", Err("unbalanced parenthesis at 10")),
    ("y # 2", Err("unexpected character '#' at 2")),
    ("let = 3; 4", Err("expected a name after `let` at 4")),
    ("z + 1", Err("unbound variable `z`")),
    ("y / (y - 10)", Err("division by zero")),
];

fn main() {
    let mut arena = Arena::new();

    // 1. A check of every program in a scope: the scratch token vectors go back to the arena.
    //    (This runs before the interner and the trees exist: they borrow the arena, and a scope
    //    needs it mutably.)
    println!("check (scratch tokens in a scope):");
    let mut checks = std::vec::Vec::new();
    for (src, _) in PROGRAMS {
        let before = arena.used_bytes();
        let checked = arena.with_scope(|scope| check(src, scope));
        assert_eq!(arena.used_bytes(), before, "the scope gave its memory back");
        match &checked {
            Ok(s) => println!(
                "  {:>2} tokens, {} identifiers, depth {}, scratch {:>4} B: {src}",
                s.tokens, s.identifiers, s.max_depth, s.scratch_bytes
            ),
            Err(e) => println!("  rejected ({e}): {src}"),
        }
        checks.push(checked);
    }
    assert!(checks.iter().flatten().all(|s| s.scratch_bytes > 0));
    println!("  arena used after the checks: {} B", arena.used_bytes());

    // 2. Parse and evaluate; the interner, the trees and the environment live in the arena.
    let mut interner = Interner::new(&arena);
    let mut inputs: Env<'_> = Vec::new_in(&arena);
    for (name, value) in INPUTS {
        inputs.push((interner.intern(name), value));
    }
    let mut total_nodes = 0;
    for ((src, expected), checked) in PROGRAMS.into_iter().zip(checks) {
        println!("\n> {src}");
        let outcome = checked.and_then(|_| {
            // The tree is dropped at the end of this closure: every `Box` drops its node and
            // hands the bytes back (the arena reclaims only the last block; the rest at reset).
            let (ast, nodes) = Parser::parse(src, &mut interner)?;
            total_nodes += nodes;
            println!(
                "  {nodes} nodes of {} B, arena used {} B:",
                size_of::<Expr<'_>>(),
                arena.used_bytes()
            );
            print_tree(&ast, &interner, 0, "");
            let mut env = inputs.clone();
            let result = eval(&ast, &mut env, &interner);
            assert_eq!(env.len(), inputs.len(), "every `let` popped its binding");
            result
        });
        match &outcome {
            Ok(value) => println!("  = {value}"),
            Err(e) => println!("  error: {e}"),
        }
        match (outcome, expected) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{src}"),
            (Err(got), Err(want)) => assert_eq!(got.to_string(), want, "{src}"),
            (got, want) => panic!("{src}: got {got:?}, expected {want:?}"),
        }
    }

    println!(
        "\n{} names interned ({}), {total_nodes} nodes parsed; arena used {} B, held {} B",
        interner.names.len(),
        interner.names.join(", "),
        arena.used_bytes(),
        arena.allocated_bytes(),
    );
    assert_eq!(interner.ids.len(), interner.names.len());
    assert_eq!(interner.names.len(), 8);
    assert_eq!(total_nodes, 65);
    drop((inputs, interner));
    arena.reset();
    assert_eq!(arena.used_bytes(), 0);
}
