//! Lexing and parsing of the shell language subset: simple commands with
//! assignments and redirections, pipelines, `!`, `&&`, `||`, `;`, `&` and
//! newlines; single and double quotes, backslash, `$NAME`, `${NAME}` and
//! the special parameters, `#` comments, `~` at the start of a word.

use alloc::boxed::Box;
use alloc::vec::Vec;

/// A parameter that a `$` refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    Named(Vec<u8>),
    /// `$0`..`$9`
    Positional(usize),
    /// `$?`
    Status,
    /// `$$`
    Pid,
    /// `$!`
    LastBackground,
    /// `$#`
    Count,
    /// `$@` and `$*`
    All,
}

/// A piece of a word: literal text, or a parameter to expand. `quoted`
/// parts are not split into fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Lit(Vec<u8>),
    Param { param: Param, quoted: bool },
}

pub type Word = Vec<Part>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirKind {
    /// `<`
    In,
    /// `>`
    Out,
    /// `>>`
    Append,
    /// `>&` and `<&`: duplicate the descriptor named by the target (`-`
    /// closes).
    Dup,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redir {
    pub fd: i32,
    pub kind: RedirKind,
    pub target: Word,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    pub assigns: Vec<(Vec<u8>, Word)>,
    pub words: Vec<Word>,
    pub redirs: Vec<Redir>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pipeline {
    pub negate: bool,
    pub cmds: Vec<Command>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connector {
    And,
    Or,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AndOr {
    pub first: Pipeline,
    pub rest: Vec<(Connector, Pipeline)>,
}

/// A list item, run in the background when `background`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub and_or: AndOr,
    pub background: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The input ends inside a construct (a quote, after `|`): more lines
    /// may complete it.
    Incomplete(&'static str),
    /// A token where it cannot be.
    Unexpected(Box<[u8]>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(Word),
    /// A redirection operator with its explicit descriptor, if any.
    Redir(Option<i32>, RedirKind, i32),
    Pipe,
    AndIf,
    OrIf,
    Semi,
    Amp,
    Newline,
}

impl Tok {
    fn text(&self) -> &'static [u8] {
        match self {
            Tok::Word(_) => b"word",
            Tok::Redir(..) => b"redirection",
            Tok::Pipe => b"|",
            Tok::AndIf => b"&&",
            Tok::OrIf => b"||",
            Tok::Semi => b";",
            Tok::Amp => b"&",
            Tok::Newline => b"newline",
        }
    }
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether `s` is a valid variable name.
pub fn is_name(s: &[u8]) -> bool {
    matches!(s.first(), Some(&c) if is_name_start(c)) && s.iter().all(|&c| is_name_char(c))
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn peek_at(&self, off: usize) -> Option<u8> {
        self.s.get(self.i + off).copied()
    }

    fn tokens(mut self) -> Result<Vec<Tok>, ParseError> {
        let mut toks = Vec::new();
        loop {
            // Blanks and line continuations.
            match self.peek() {
                None => return Ok(toks),
                Some(b' ' | b'\t' | b'\r') => {
                    self.i += 1;
                    continue;
                }
                Some(b'\\') if self.peek_at(1) == Some(b'\n') => {
                    self.i += 2;
                    continue;
                }
                Some(b'#') => {
                    while !matches!(self.peek(), None | Some(b'\n')) {
                        self.i += 1;
                    }
                    continue;
                }
                _ => {}
            }
            if let Some(t) = self.operator(None) {
                toks.push(t);
                continue;
            }
            let start = self.i;
            let word = self.word()?;
            // An all-digit unquoted word right before `<` or `>` names the
            // descriptor of the redirection.
            let digits = &self.s[start..self.i];
            if !digits.is_empty()
                && digits.len() < 4
                && digits.iter().all(u8::is_ascii_digit)
                && matches!(self.peek(), Some(b'<' | b'>'))
            {
                let fd = digits.iter().fold(0, |n, d| n * 10 + (d - b'0') as i32);
                if let Some(t) = self.operator(Some(fd)) {
                    toks.push(t);
                    continue;
                }
            }
            toks.push(Tok::Word(word));
        }
    }

    fn operator(&mut self, fd: Option<i32>) -> Option<Tok> {
        let two = (self.peek()?, self.peek_at(1));
        let (tok, len) = match two {
            (b'\n', _) => (Tok::Newline, 1),
            (b';', _) => (Tok::Semi, 1),
            (b'&', Some(b'&')) => (Tok::AndIf, 2),
            (b'&', _) => (Tok::Amp, 1),
            (b'|', Some(b'|')) => (Tok::OrIf, 2),
            (b'|', _) => (Tok::Pipe, 1),
            (b'>', Some(b'>')) => (Tok::Redir(fd, RedirKind::Append, 1), 2),
            (b'>', Some(b'&')) => (Tok::Redir(fd, RedirKind::Dup, 1), 2),
            (b'>', _) => (Tok::Redir(fd, RedirKind::Out, 1), 1),
            (b'<', Some(b'&')) => (Tok::Redir(fd, RedirKind::Dup, 0), 2),
            (b'<', _) => (Tok::Redir(fd, RedirKind::In, 0), 1),
            _ => return None,
        };
        self.i += len;
        Some(tok)
    }

    fn word(&mut self) -> Result<Word, ParseError> {
        let mut parts: Word = Vec::new();
        let mut lit: Vec<u8> = Vec::new();
        // `~` or `~/...` at the start of a word is $HOME.
        if self.peek() == Some(b'~')
            && matches!(
                self.peek_at(1),
                None | Some(b'/' | b' ' | b'\t' | b'\n' | b';' | b'|' | b'&' | b'<' | b'>')
            )
        {
            self.i += 1;
            parts.push(Part::Param {
                param: Param::Named(b"HOME".to_vec()),
                quoted: true,
            });
        }
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\r' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' => break,
                b'\'' => {
                    self.i += 1;
                    let rest = &self.s[self.i..];
                    let Some(end) = rest.iter().position(|&b| b == b'\'') else {
                        return Err(ParseError::Incomplete("unterminated quoted string"));
                    };
                    lit.extend_from_slice(&rest[..end]);
                    // Even '' makes a (possibly empty) field.
                    flush_lit(&mut parts, &mut lit, true);
                    self.i += end + 1;
                }
                b'"' => {
                    self.i += 1;
                    self.double_quoted(&mut parts, &mut lit)?;
                }
                b'\\' => {
                    match self.peek_at(1) {
                        Some(b'\n') => {}
                        Some(n) => lit.push(n),
                        None => lit.push(b'\\'),
                    }
                    self.i += 2;
                }
                b'$' => {
                    if let Some(p) = self.param() {
                        flush_lit(&mut parts, &mut lit, false);
                        parts.push(Part::Param {
                            param: p?,
                            quoted: false,
                        });
                    } else {
                        lit.push(b'$');
                        self.i += 1;
                    }
                }
                _ => {
                    lit.push(c);
                    self.i += 1;
                }
            }
        }
        flush_lit(&mut parts, &mut lit, false);
        Ok(parts)
    }

    /// After an opening `"`: up to and including the closing one.
    fn double_quoted(&mut self, parts: &mut Word, lit: &mut Vec<u8>) -> Result<(), ParseError> {
        loop {
            let Some(c) = self.peek() else {
                return Err(ParseError::Incomplete("unterminated quoted string"));
            };
            match c {
                b'"' => {
                    self.i += 1;
                    flush_lit(parts, lit, true);
                    return Ok(());
                }
                b'\\' => match self.peek_at(1) {
                    Some(n @ (b'$' | b'`' | b'"' | b'\\')) => {
                        lit.push(n);
                        self.i += 2;
                    }
                    Some(b'\n') => self.i += 2,
                    _ => {
                        lit.push(b'\\');
                        self.i += 1;
                    }
                },
                b'$' => {
                    if let Some(p) = self.param() {
                        flush_lit(parts, lit, true);
                        parts.push(Part::Param {
                            param: p?,
                            quoted: true,
                        });
                    } else {
                        lit.push(b'$');
                        self.i += 1;
                    }
                }
                _ => {
                    lit.push(c);
                    self.i += 1;
                }
            }
        }
    }

    /// At a `$`: the parameter it introduces (consumed), or None if the `$`
    /// is literal.
    fn param(&mut self) -> Option<Result<Param, ParseError>> {
        let c = self.peek_at(1)?;
        let simple = match c {
            b'?' => Some(Param::Status),
            b'$' => Some(Param::Pid),
            b'!' => Some(Param::LastBackground),
            b'#' => Some(Param::Count),
            b'@' | b'*' => Some(Param::All),
            b'0'..=b'9' => Some(Param::Positional((c - b'0') as usize)),
            _ => None,
        };
        if let Some(p) = simple {
            self.i += 2;
            return Some(Ok(p));
        }
        if is_name_start(c) {
            let start = self.i + 1;
            let mut end = start;
            while self.s.get(end).is_some_and(|&b| is_name_char(b)) {
                end += 1;
            }
            self.i = end;
            return Some(Ok(Param::Named(self.s[start..end].to_vec())));
        }
        if c == b'{' {
            let start = self.i + 2;
            let Some(len) = self.s[start..].iter().position(|&b| b == b'}') else {
                return Some(Err(ParseError::Incomplete("missing '}'")));
            };
            let name = &self.s[start..start + len];
            self.i = start + len + 1;
            let p = match name {
                b"?" => Param::Status,
                b"$" => Param::Pid,
                b"!" => Param::LastBackground,
                b"#" => Param::Count,
                b"@" | b"*" => Param::All,
                _ if !name.is_empty() && name.iter().all(u8::is_ascii_digit) => {
                    Param::Positional(name.iter().fold(0, |n, d| n * 10 + (d - b'0') as usize))
                }
                _ if is_name(name) => Param::Named(name.to_vec()),
                _ => return Some(Err(ParseError::Unexpected(b"bad substitution".as_slice().into()))),
            };
            return Some(Ok(p));
        }
        None
    }
}

/// Moves pending literal text into `parts`; `force` keeps an empty literal
/// (from quotes) so that the word still yields a field.
fn flush_lit(parts: &mut Word, lit: &mut Vec<u8>, force: bool) {
    if !lit.is_empty() || force {
        parts.push(Part::Lit(core::mem::take(lit)));
    }
}

/// The literal text of a word that has no parameters, if it is one.
fn literal(word: &Word) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for p in word {
        match p {
            Part::Lit(l) => out.extend_from_slice(l),
            Part::Param { .. } => return None,
        }
    }
    Some(out)
}

struct Parser {
    toks: Vec<Tok>,
    i: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }

    fn skip_newlines(&mut self) {
        while self.peek() == Some(&Tok::Newline) {
            self.i += 1;
        }
    }

    fn unexpected(&self) -> ParseError {
        match self.peek() {
            Some(t) => ParseError::Unexpected(t.text().into()),
            None => ParseError::Incomplete("unexpected end of file"),
        }
    }

    fn list(&mut self) -> Result<Vec<Item>, ParseError> {
        let mut items = Vec::new();
        loop {
            while matches!(self.peek(), Some(Tok::Newline)) {
                self.i += 1;
            }
            if self.peek().is_none() {
                return Ok(items);
            }
            let and_or = self.and_or()?;
            let background = match self.peek() {
                None => false,
                Some(Tok::Semi | Tok::Newline) => {
                    self.i += 1;
                    false
                }
                Some(Tok::Amp) => {
                    self.i += 1;
                    true
                }
                Some(_) => return Err(self.unexpected()),
            };
            items.push(Item { and_or, background });
        }
    }

    fn and_or(&mut self) -> Result<AndOr, ParseError> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            let c = match self.peek() {
                Some(Tok::AndIf) => Connector::And,
                Some(Tok::OrIf) => Connector::Or,
                _ => return Ok(AndOr { first, rest }),
            };
            self.i += 1;
            self.skip_newlines();
            rest.push((c, self.pipeline()?));
        }
    }

    fn pipeline(&mut self) -> Result<Pipeline, ParseError> {
        let mut negate = false;
        if let Some(Tok::Word(w)) = self.peek() {
            if literal(w).as_deref() == Some(b"!") && w.len() == 1 {
                negate = true;
                self.i += 1;
            }
        }
        let mut cmds = alloc::vec![self.command()?];
        while self.peek() == Some(&Tok::Pipe) {
            self.i += 1;
            self.skip_newlines();
            cmds.push(self.command()?);
        }
        Ok(Pipeline { negate, cmds })
    }

    fn command(&mut self) -> Result<Command, ParseError> {
        let mut cmd = Command::default();
        loop {
            match self.peek().cloned() {
                Some(Tok::Word(w)) => {
                    self.i += 1;
                    match assignment(&w) {
                        Some(a) if cmd.words.is_empty() => cmd.assigns.push(a),
                        _ => cmd.words.push(w),
                    }
                }
                Some(Tok::Redir(fd, kind, default_fd)) => {
                    self.i += 1;
                    let Some(Tok::Word(target)) = self.peek().cloned() else {
                        return Err(self.unexpected());
                    };
                    self.i += 1;
                    cmd.redirs.push(Redir {
                        fd: fd.unwrap_or(default_fd),
                        kind,
                        target,
                    });
                }
                _ => break,
            }
        }
        if cmd.words.is_empty() && cmd.assigns.is_empty() && cmd.redirs.is_empty() {
            return Err(self.unexpected());
        }
        Ok(cmd)
    }
}

/// `NAME=value` (the name and `=` unquoted): the name and the value's parts.
fn assignment(w: &Word) -> Option<(Vec<u8>, Word)> {
    let Some(Part::Lit(first)) = w.first() else { return None };
    let eq = first.iter().position(|&b| b == b'=')?;
    let name = &first[..eq];
    if !is_name(name) {
        return None;
    }
    let mut value: Word = Vec::new();
    value.push(Part::Lit(first[eq + 1..].to_vec()));
    value.extend(w[1..].iter().cloned());
    Some((name.to_vec(), value))
}

/// Parses a whole script.
pub fn parse(src: &[u8]) -> Result<Vec<Item>, ParseError> {
    let toks = Lexer { s: src, i: 0 }.tokens()?;
    // A trailing `|`, `&&` or `||` wants more input.
    if let Some(Tok::Pipe | Tok::AndIf | Tok::OrIf) = toks.iter().rev().find(|t| **t != Tok::Newline) {
        return Err(ParseError::Incomplete("unexpected end of file"));
    }
    Parser { toks, i: 0 }.list()
}
