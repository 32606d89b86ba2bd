//! The compiler front end: a generated source lexed into tokens (identifiers interned), parsed by
//! recursive descent into a tree of boxed nodes, and constant-folded into a second tree.

use std::io::Write as _;

use allocator_api2::alloc::Allocator;
use allocator_api2::boxed::Box;
use allocator_api2::vec::Vec;
use arena_pool_benches::XorShift;

use super::{Bytes, Map, new_map};

/// Bytes of generated source (about: the last statement ends past it).
pub(super) const SOURCE_BYTES: usize = 200_000;
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
pub(super) struct Source {
    pub(super) text: std::vec::Vec<u8>,
    pub(super) tokens: u64,
}

/// Generates the source: `let <name> = <expr>;` statements and nested `{ ... }` blocks.
/// Expressions mix integer literals, names bound by an earlier `let`, free variables, calls of
/// 0 to 4 arguments, `+ - *` and parentheses.
pub(super) struct SourceGen {
    rng: XorShift,
    text: std::vec::Vec<u8>,
    tokens: u64,
    /// The names bound so far (each once), which expressions may refer to.
    bound: std::vec::Vec<u64>,
    is_bound: std::vec::Vec<bool>,
}

impl SourceGen {
    /// Statements until the text reaches `SOURCE_BYTES`.
    pub(super) fn generate() -> Source {
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
pub(super) struct CompileSum {
    pub(super) tokens: u64,
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
pub(super) fn compile<Al: Allocator + Copy>(src: &[u8], a: Al) -> CompileSum {
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
