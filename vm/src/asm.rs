//! The assembler: text with labels and comments to a [`Program`].
//!
//! Errors carry the 1-based line and column of the offending token. The
//! assembler never panics, whatever bytes it is given (a property test
//! feeds it random input).

use crate::isa::{Instruction, Opcode, Program, MAX_PROGRAM_LEN, NUM_REGS};
use backend_api::field::P;
use backend_api::F;
use std::collections::HashMap;
use std::fmt;

/// An assembly error at a source position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {col}: {kind}")]
pub struct AsmError {
    pub line: usize,
    pub col: usize,
    pub kind: AsmErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AsmErrorKind {
    #[error("the source is not valid UTF-8")]
    NotUtf8,
    #[error("unexpected character {0:?}")]
    BadChar(char),
    #[error("unknown instruction `{0}`")]
    UnknownMnemonic(String),
    #[error("expected {expected}, found {found}")]
    Expected { expected: &'static str, found: String },
    #[error("`{0}` is not a register (r0..r7, zero, sp, ra)")]
    BadRegister(String),
    #[error("number `{0}` is malformed or not below the field modulus")]
    BadNumber(String),
    #[error("unknown label `{0}`")]
    UnknownLabel(String),
    /// A register name in the wrong case (`R3`): registers are lowercase.
    #[error("`{found}` is not a register or a label: registers are lowercase; did you mean `{register}`?")]
    RegisterCase { found: String, register: String },
    #[error("label `{name}` is already defined on line {first_line}")]
    DuplicateLabel { name: String, first_line: usize },
    #[error("the program has no instructions")]
    Empty,
    #[error("the program has more than {MAX_PROGRAM_LEN} instructions")]
    TooLong,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Num(String),
    Comma,
    Colon,
    LBracket,
    RBracket,
    Plus,
    Minus,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "`{s}`"),
            Tok::Num(s) => write!(f, "number `{s}`"),
            Tok::Comma => f.write_str("`,`"),
            Tok::Colon => f.write_str("`:`"),
            Tok::LBracket => f.write_str("`[`"),
            Tok::RBracket => f.write_str("`]`"),
            Tok::Plus => f.write_str("`+`"),
            Tok::Minus => f.write_str("`-`"),
        }
    }
}

/// A token and its 1-based column.
type Spanned = (Tok, usize);

fn lex_line(line: &str, lineno: usize) -> Result<(Vec<Spanned>, usize), AsmError> {
    let chars: Vec<char> = line.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let col = i + 1;
        if c == ';' || c == '#' {
            break;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let single = match c {
            ',' => Some(Tok::Comma),
            ':' => Some(Tok::Colon),
            '[' => Some(Tok::LBracket),
            ']' => Some(Tok::RBracket),
            '+' => Some(Tok::Plus),
            '-' => Some(Tok::Minus),
            _ => None,
        };
        if let Some(t) = single {
            toks.push((t, col));
            i += 1;
            continue;
        }
        let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
        if c.is_ascii_digit() || c.is_ascii_alphabetic() || c == '_' || c == '.' {
            let start = i;
            while i < chars.len() && is_word(chars[i]) {
                i += 1;
            }
            let s: String = chars[start..i].iter().collect();
            toks.push((if c.is_ascii_digit() { Tok::Num(s) } else { Tok::Ident(s) }, col));
            continue;
        }
        return Err(AsmError { line: lineno, col, kind: AsmErrorKind::BadChar(c) });
    }
    Ok((toks, chars.len() + 1))
}

/// Parses a value as the assembler reads immediates: decimal, `0x` hex or
/// `0b` binary, `_` separators, an optional leading `-` (field negation).
pub fn parse_value(s: &str) -> Option<F> {
    let s = s.trim();
    match s.strip_prefix('-') {
        Some(rest) => parse_number(rest.trim_start()).map(|v| -v),
        None => parse_number(s),
    }
}

fn parse_number(s: &str) -> Option<F> {
    if !s.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let digits: String = s.chars().filter(|&c| c != '_').collect();
    let v = if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()?
    } else if let Some(bin) = digits.strip_prefix("0b") {
        u64::from_str_radix(bin, 2).ok()?
    } else {
        digits.parse::<u64>().ok()?
    };
    (v < P).then(|| F::new(v))
}

fn parse_register(s: &str) -> Option<u8> {
    match s {
        "zero" => return Some(0),
        "sp" => return Some(6),
        "ra" => return Some(7),
        _ => {}
    }
    let n = s.strip_prefix('r')?;
    if n.is_empty() || n.len() > 1 {
        return None;
    }
    let v: u8 = n.parse().ok()?;
    ((v as usize) < NUM_REGS).then_some(v)
}

/// Names the likely mistake when `s` is the wrong case of a register.
fn register_case(s: &str) -> Option<AsmErrorKind> {
    let lower = s.to_ascii_lowercase();
    (lower != s && parse_register(&lower).is_some())
        .then(|| AsmErrorKind::RegisterCase { found: s.to_string(), register: lower })
}

fn not_a_register(s: &str) -> AsmErrorKind {
    register_case(s).unwrap_or_else(|| AsmErrorKind::BadRegister(s.to_string()))
}

/// An immediate before labels are resolved.
#[derive(Clone, Debug)]
enum ImmRef {
    Value(F),
    /// A label's address, possibly negated; column for errors.
    Label {
        name: String,
        negate: bool,
        col: usize,
    },
}

/// An instruction before labels are resolved.
struct Pending {
    ins: Instruction,
    line: usize,
    imm: Option<ImmRef>,
    target: Option<(String, usize)>,
}

struct Parser<'a> {
    toks: &'a [Spanned],
    pos: usize,
    line: usize,
    end_col: usize,
}

impl Parser<'_> {
    fn err(&self, col: usize, kind: AsmErrorKind) -> AsmError {
        AsmError { line: self.line, col, kind }
    }

    fn col(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end_col, |t| t.1)
    }

    fn found(&self) -> String {
        self.toks.get(self.pos).map_or_else(|| "end of line".to_string(), |t| t.0.to_string())
    }

    fn expected(&self, expected: &'static str) -> AsmError {
        self.err(self.col(), AsmErrorKind::Expected { expected, found: self.found() })
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, t: Tok, what: &'static str) -> Result<(), AsmError> {
        if self.eat(&t) {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    fn comma(&mut self) -> Result<(), AsmError> {
        self.expect(Tok::Comma, "`,`")
    }

    fn end(&self) -> Result<(), AsmError> {
        if self.pos < self.toks.len() {
            Err(self.expected("end of line"))
        } else {
            Ok(())
        }
    }

    fn register(&mut self) -> Result<u8, AsmError> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let col = self.col();
                let r = parse_register(s).ok_or_else(|| self.err(col, not_a_register(s)))?;
                self.pos += 1;
                Ok(r)
            }
            _ => Err(self.expected("a register")),
        }
    }

    fn is_register_next(&self) -> bool {
        matches!(self.peek(), Some(Tok::Ident(s)) if parse_register(s).is_some())
    }

    /// `[-] number | [-] label`.
    fn immediate(&mut self) -> Result<ImmRef, AsmError> {
        let negate = self.eat(&Tok::Minus);
        let col = self.col();
        match self.peek().cloned() {
            Some(Tok::Num(s)) => {
                let v = parse_number(&s).ok_or_else(|| self.err(col, AsmErrorKind::BadNumber(s.clone())))?;
                self.pos += 1;
                Ok(ImmRef::Value(if negate { -v } else { v }))
            }
            Some(Tok::Ident(s)) if parse_register(&s).is_none() => {
                self.pos += 1;
                Ok(ImmRef::Label { name: s, negate, col })
            }
            _ => Err(self.expected("a number or a label")),
        }
    }

    /// `reg | imm | reg + imm | reg - imm`: a register and an offset.
    fn reg_plus_imm(&mut self) -> Result<(u8, ImmRef), AsmError> {
        if self.is_register_next() {
            let r = self.register()?;
            // `r - k` lets `immediate` take the minus sign.
            let imm = if self.eat(&Tok::Plus) || self.peek() == Some(&Tok::Minus) {
                self.immediate()?
            } else {
                ImmRef::Value(F::ZERO)
            };
            Ok((r, imm))
        } else {
            Ok((0, self.immediate()?))
        }
    }

    /// `[ reg + imm ]`.
    fn memory(&mut self) -> Result<(u8, ImmRef), AsmError> {
        self.expect(Tok::LBracket, "`[`")?;
        let v = self.reg_plus_imm()?;
        self.expect(Tok::RBracket, "`]`")?;
        Ok(v)
    }

    fn label(&mut self) -> Result<(String, usize), AsmError> {
        let col = self.col();
        match self.peek().cloned() {
            Some(Tok::Ident(s)) if parse_register(&s).is_none() => {
                self.pos += 1;
                Ok((s, col))
            }
            _ => Err(self.expected("a label")),
        }
    }
}

/// Assembles raw bytes (a file's contents): invalid UTF-8 is an error at
/// the line and column where it starts.
pub fn assemble_bytes(src: &[u8]) -> Result<Program, AsmError> {
    match std::str::from_utf8(src) {
        Ok(s) => assemble(s),
        Err(e) => {
            let good = &src[..e.valid_up_to()];
            let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
            let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            let col = std::str::from_utf8(&good[line_start..]).map_or(1, |s| s.chars().count() + 1);
            Err(AsmError { line, col, kind: AsmErrorKind::NotUtf8 })
        }
    }
}

/// Assembles source text.
pub fn assemble(src: &str) -> Result<Program, AsmError> {
    let mut labels: HashMap<String, (usize, usize)> = HashMap::new();
    let mut pending: Vec<Pending> = Vec::new();
    let mut last_line = 1;
    for (idx, text) in src.lines().enumerate() {
        let line = idx + 1;
        last_line = line;
        let (toks, end_col) = lex_line(text, line)?;
        let mut p = Parser { toks: &toks, pos: 0, line, end_col };
        // Any number of `label:` prefixes, then at most one instruction.
        while let (Some((Tok::Ident(name), col)), Some((Tok::Colon, _))) = (toks.get(p.pos), toks.get(p.pos + 1)) {
            if parse_register(name).is_some() {
                return Err(
                    p.err(*col, AsmErrorKind::Expected { expected: "a label name", found: format!("`{name}`") })
                );
            }
            if let Some(&(first_line, _)) = labels.get(name) {
                return Err(p.err(*col, AsmErrorKind::DuplicateLabel { name: name.clone(), first_line }));
            }
            labels.insert(name.clone(), (line, pending.len()));
            p.pos += 2;
        }
        if p.pos == toks.len() {
            continue;
        }
        if pending.len() >= MAX_PROGRAM_LEN {
            return Err(p.err(p.col(), AsmErrorKind::TooLong));
        }
        pending.push(parse_instruction(&mut p)?);
    }
    if pending.is_empty() {
        return Err(AsmError { line: last_line, col: 1, kind: AsmErrorKind::Empty });
    }
    let mut instructions = Vec::with_capacity(pending.len());
    let mut lines = Vec::with_capacity(pending.len());
    for p in pending {
        let mut ins = p.ins;
        let resolve = |name: &str, col: usize| {
            labels.get(name).map(|&(_, pc)| pc).ok_or_else(|| AsmError {
                line: p.line,
                col,
                kind: register_case(name).unwrap_or_else(|| AsmErrorKind::UnknownLabel(name.to_string())),
            })
        };
        if let Some(imm) = &p.imm {
            ins.imm = match imm {
                ImmRef::Value(v) => *v,
                ImmRef::Label { name, negate, col } => {
                    let v = F::new(resolve(name, *col)? as u64);
                    if *negate {
                        -v
                    } else {
                        v
                    }
                }
            };
        }
        if let Some((name, col)) = &p.target {
            ins.tgt = resolve(name, *col)? as u32;
        }
        instructions.push(ins);
        lines.push(p.line);
    }
    Ok(Program { instructions, lines })
}

fn parse_instruction(p: &mut Parser) -> Result<Pending, AsmError> {
    let col = p.col();
    let mnemonic = match p.peek() {
        Some(Tok::Ident(s)) => s.to_ascii_lowercase(),
        _ => return Err(p.expected("an instruction")),
    };
    p.pos += 1;
    let line = p.line;
    let out = |op: Opcode| Pending { ins: Instruction::new(op), line, imm: None, target: None };
    let mut r = match mnemonic.as_str() {
        "add" | "sub" | "mul" | "eq" => {
            let op = match mnemonic.as_str() {
                "add" => Opcode::Add,
                "sub" => Opcode::Sub,
                "mul" => Opcode::Mul,
                _ => Opcode::Eq,
            };
            let mut r = out(op);
            r.ins.rd = p.register()?;
            p.comma()?;
            r.ins.rs1 = p.register()?;
            p.comma()?;
            let (rs2, imm) = p.reg_plus_imm()?;
            r.ins.rs2 = rs2;
            r.imm = Some(imm);
            r
        }
        "li" => {
            let mut r = out(Opcode::Add);
            r.ins.rd = p.register()?;
            p.comma()?;
            r.imm = Some(p.immediate()?);
            r
        }
        "mov" => {
            let mut r = out(Opcode::Add);
            r.ins.rd = p.register()?;
            p.comma()?;
            r.ins.rs1 = p.register()?;
            r
        }
        "neg" => {
            let mut r = out(Opcode::Sub);
            r.ins.rd = p.register()?;
            p.comma()?;
            r.ins.rs2 = p.register()?;
            r
        }
        "nop" => out(Opcode::Add),
        "load" => {
            let mut r = out(Opcode::Load);
            r.ins.rd = p.register()?;
            p.comma()?;
            let (rs1, imm) = p.memory()?;
            r.ins.rs1 = rs1;
            r.imm = Some(imm);
            r
        }
        "store" => {
            let mut r = out(Opcode::Store);
            let (rs1, imm) = p.memory()?;
            r.ins.rs1 = rs1;
            r.imm = Some(imm);
            p.comma()?;
            r.ins.rs2 = p.register()?;
            r
        }
        "beq" | "bne" => {
            let mut r = out(if mnemonic == "beq" { Opcode::Beq } else { Opcode::Bne });
            r.ins.rs1 = p.register()?;
            p.comma()?;
            let (rs2, imm) = p.reg_plus_imm()?;
            r.ins.rs2 = rs2;
            r.imm = Some(imm);
            p.comma()?;
            r.target = Some(p.label()?);
            r
        }
        "beqz" | "bnez" => {
            let mut r = out(if mnemonic == "beqz" { Opcode::Beq } else { Opcode::Bne });
            r.ins.rs1 = p.register()?;
            p.comma()?;
            r.target = Some(p.label()?);
            r
        }
        "jal" => {
            let mut r = out(Opcode::Jal);
            r.ins.rd = p.register()?;
            p.comma()?;
            r.target = Some(p.label()?);
            r
        }
        "jmp" | "call" => {
            let mut r = out(Opcode::Jal);
            r.ins.rd = if mnemonic == "call" { 7 } else { 0 };
            r.target = Some(p.label()?);
            r
        }
        "jalr" => {
            let mut r = out(Opcode::Jalr);
            r.ins.rd = p.register()?;
            p.comma()?;
            let (rs1, imm) = p.reg_plus_imm()?;
            r.ins.rs1 = rs1;
            r.imm = Some(imm);
            r
        }
        "jr" => {
            let mut r = out(Opcode::Jalr);
            r.ins.rs1 = p.register()?;
            r
        }
        "ret" => {
            let mut r = out(Opcode::Jalr);
            r.ins.rs1 = 7;
            r
        }
        "read" => {
            let mut r = out(Opcode::Read);
            r.ins.rd = p.register()?;
            r
        }
        "write" => {
            let mut r = out(Opcode::Write);
            r.ins.rs1 = p.register()?;
            r
        }
        "halt" => out(Opcode::Halt),
        _ => return Err(p.err(col, AsmErrorKind::UnknownMnemonic(mnemonic))),
    };
    p.end()?;
    // Canonical form: a write to r0 is no write.
    if !r.ins.op.writes_rd() {
        r.ins.rd = 0;
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assembles_every_form() {
        let src = "\
; a comment
start:  li r1, 5          # trailing comment
        mov r2, r1
        add r3, r1, r2 + 7
        sub r3, r3, -1
        mul r4, r3, 0x10
        eq  r5, r4, r3
        load r1, [sp + 2]
        store [r2 - 1], r3
        store [100], r3
        beq r1, r2, start
        bnez r1, end
        call start
        ret
        jmp end
        read r1
        write r2
end:    halt
";
        let p = assemble(src).unwrap();
        assert_eq!(p.len(), 17);
        assert_eq!(p.instructions[0].imm, F::new(5));
        assert_eq!(p.instructions[3].imm, -F::ONE);
        assert_eq!(p.instructions[6].rs1, 6);
        assert_eq!(p.instructions[7].imm, -F::ONE);
        assert_eq!(p.instructions[10].tgt, 16);
        assert_eq!(p.instructions[11].rd, 7);
        assert_eq!(p.lines[0], 2);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = assemble("halt\n  add r1, r9, 1\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 11));
        assert!(matches!(e.kind, AsmErrorKind::BadRegister(_)));
        let e = assemble("  jmp nowhere\nhalt").unwrap_err();
        assert_eq!((e.line, e.col, e.kind), (1, 7, AsmErrorKind::UnknownLabel("nowhere".into())));
        // Registers are lowercase: `R3` is neither a register nor a label.
        let e = assemble("li R3, 5\nhalt").unwrap_err();
        assert_eq!((e.line, e.col), (1, 4));
        assert_eq!(e.kind, AsmErrorKind::RegisterCase { found: "R3".into(), register: "r3".into() });
        assert!(e.to_string().ends_with("did you mean `r3`?"), "{e}");
        let e = assemble("  add r1, r1, R3\nhalt").unwrap_err();
        assert_eq!(e.kind, AsmErrorKind::RegisterCase { found: "R3".into(), register: "r3".into() });
        let e = assemble("jmp SP\nhalt").unwrap_err();
        assert_eq!(e.kind, AsmErrorKind::RegisterCase { found: "SP".into(), register: "sp".into() });
        let e = assemble("a: halt\na: halt").unwrap_err();
        assert_eq!((e.line, e.col), (2, 1));
        let e = assemble("frob r1").unwrap_err();
        assert_eq!(e.to_string(), "line 1, column 1: unknown instruction `frob`");
        let e = assemble("li r1, 18446744069414584321").unwrap_err();
        assert!(matches!(e.kind, AsmErrorKind::BadNumber(_)));
        let e = assemble("add r1, r2").unwrap_err();
        assert_eq!((e.line, e.col), (1, 11));
        assert_eq!(assemble("; nothing\n").unwrap_err().kind, AsmErrorKind::Empty);
        let e = assemble_bytes(b"halt\nli r1, \xff").unwrap_err();
        assert_eq!((e.line, e.col, e.kind), (2, 8, AsmErrorKind::NotUtf8));
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            let _ = assemble_bytes(&bytes);
        }

        #[test]
        fn random_token_soup_never_panics(words in proptest::collection::vec(
            proptest::sample::select(vec![
                "add", "li", "load", "store", "beq", "jal", "r1", "r9", "sp", "[", "]", ",", ":", "+", "-",
                "12", "0x", "x:", "lbl", "\n", ";", "halt", "99999999999999999999",
            ]),
            0..40,
        )) {
            let _ = assemble(&words.join(" "));
        }
    }
}
