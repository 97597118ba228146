//! The instruction set: opcodes, decoded instructions, programs, and the
//! canonical encoding a program's hash is taken over.
//!
//! Every instruction has the same shape: an opcode, a destination register
//! `rd`, two source registers `rs1` and `rs2`, an immediate `imm` and a jump
//! target `tgt`. Operands are `x = reg[rs1]` and `y = reg[rs2]`; the
//! arithmetic and comparison instructions use `y + imm` as their second
//! operand, so `rs2 = r0` (always zero) turns them into immediate forms.

use backend_api::F;
use std::fmt;

/// Registers r0..r7; r0 always reads zero and ignores writes.
pub const NUM_REGS: usize = 8;
/// Memory is word-addressed over [0, 2^32): the memory table's ordering
/// argument range-checks address gaps with two 16-bit limbs.
pub const MEM_LIMIT: u64 = 1 << 32;
/// Programs longer than this are rejected (the program table is fixed and
/// the verifier evaluates it, so it stays modest).
pub const MAX_PROGRAM_LEN: usize = 1 << 20;

/// The opcodes; the discriminant is the canonical encoding and the index of
/// the opcode's flag column in the CPU and program tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    /// rd = x + (y + imm)
    Add = 0,
    /// rd = x - (y + imm)
    Sub = 1,
    /// rd = x * (y + imm)
    Mul = 2,
    /// rd = 1 if x == y + imm else 0
    Eq = 3,
    /// rd = mem[x + imm]
    Load = 4,
    /// mem[x + imm] = y
    Store = 5,
    /// if x == y + imm { pc = tgt }
    Beq = 6,
    /// if x != y + imm { pc = tgt }
    Bne = 7,
    /// rd = pc + 1; pc = tgt
    Jal = 8,
    /// rd = pc + 1; pc = x + imm
    Jalr = 9,
    /// rd = the next public input
    Read = 10,
    /// append x to the public outputs
    Write = 11,
    /// stop; the machine stays here
    Halt = 12,
}

impl Opcode {
    pub const COUNT: usize = 13;
    pub const ALL: [Opcode; Opcode::COUNT] = [
        Opcode::Add,
        Opcode::Sub,
        Opcode::Mul,
        Opcode::Eq,
        Opcode::Load,
        Opcode::Store,
        Opcode::Beq,
        Opcode::Bne,
        Opcode::Jal,
        Opcode::Jalr,
        Opcode::Read,
        Opcode::Write,
        Opcode::Halt,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn mnemonic(self) -> &'static str {
        match self {
            Opcode::Add => "add",
            Opcode::Sub => "sub",
            Opcode::Mul => "mul",
            Opcode::Eq => "eq",
            Opcode::Load => "load",
            Opcode::Store => "store",
            Opcode::Beq => "beq",
            Opcode::Bne => "bne",
            Opcode::Jal => "jal",
            Opcode::Jalr => "jalr",
            Opcode::Read => "read",
            Opcode::Write => "write",
            Opcode::Halt => "halt",
        }
    }

    /// Whether the instruction writes `rd` (a write to r0 is still dropped).
    pub fn writes_rd(self) -> bool {
        matches!(
            self,
            Opcode::Add
                | Opcode::Sub
                | Opcode::Mul
                | Opcode::Eq
                | Opcode::Load
                | Opcode::Jal
                | Opcode::Jalr
                | Opcode::Read
        )
    }
}

/// A decoded instruction. Fields an opcode does not use are zero, so every
/// instruction has one canonical form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Instruction {
    pub op: Opcode,
    pub rd: u8,
    pub rs1: u8,
    pub rs2: u8,
    pub imm: F,
    pub tgt: u32,
}

impl Instruction {
    pub fn new(op: Opcode) -> Instruction {
        Instruction { op, rd: 0, rs1: 0, rs2: 0, imm: F::ZERO, tgt: 0 }
    }

    /// The register actually written, if any (writes to r0 vanish).
    pub fn dest(&self) -> Option<usize> {
        (self.op.writes_rd() && self.rd != 0).then_some(self.rd as usize)
    }
}

impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Instruction { op, rd, rs1, rs2, imm, tgt } = *self;
        let m = op.mnemonic();
        match op {
            Opcode::Add | Opcode::Sub | Opcode::Mul | Opcode::Eq => write!(f, "{m} r{rd}, r{rs1}, r{rs2} + {imm}"),
            Opcode::Load => write!(f, "{m} r{rd}, [r{rs1} + {imm}]"),
            Opcode::Store => write!(f, "{m} [r{rs1} + {imm}], r{rs2}"),
            Opcode::Beq | Opcode::Bne => write!(f, "{m} r{rs1}, r{rs2} + {imm}, @{tgt}"),
            Opcode::Jal => write!(f, "{m} r{rd}, @{tgt}"),
            Opcode::Jalr => write!(f, "{m} r{rd}, r{rs1} + {imm}"),
            Opcode::Read => write!(f, "{m} r{rd}"),
            Opcode::Write => write!(f, "{m} r{rs1}"),
            Opcode::Halt => write!(f, "{m}"),
        }
    }
}

/// An assembled program, with the source line of each instruction (for
/// error messages; not part of the program's identity).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub instructions: Vec<Instruction>,
    pub lines: Vec<usize>,
}

const ENCODING_TAG: &[u8] = b"kiln-vm-program-v1";

impl Program {
    pub fn len(&self) -> usize {
        self.instructions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.instructions.is_empty()
    }

    /// The canonical encoding: a tag, the length, then per instruction
    /// opcode, rd, rs1, rs2 (one byte each), imm and tgt (8 bytes LE each).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ENCODING_TAG.len() + 8 + self.len() * 20);
        out.extend_from_slice(ENCODING_TAG);
        out.extend_from_slice(&(self.len() as u64).to_le_bytes());
        for ins in &self.instructions {
            out.extend_from_slice(&[ins.op as u8, ins.rd, ins.rs1, ins.rs2]);
            out.extend_from_slice(&ins.imm.to_le_bytes());
            out.extend_from_slice(&(ins.tgt as u64).to_le_bytes());
        }
        out
    }

    /// Decodes a canonical encoding (untrusted bytes: every field is
    /// checked).
    pub fn decode(bytes: &[u8]) -> Result<Program, String> {
        let body = bytes.strip_prefix(ENCODING_TAG).ok_or("not a Kiln VM program encoding")?;
        let (len, body) = body.split_first_chunk::<8>().ok_or("truncated program length")?;
        let len = u64::from_le_bytes(*len);
        if len == 0 || len > MAX_PROGRAM_LEN as u64 || body.len() as u64 != len * 20 {
            return Err(format!("program of {len} instructions does not match {} bytes", body.len()));
        }
        let mut instructions = Vec::with_capacity(len as usize);
        for (pc, c) in body.chunks_exact(20).enumerate() {
            let op = *Opcode::ALL.get(c[0] as usize).ok_or(format!("instruction {pc}: bad opcode {}", c[0]))?;
            let [rd, rs1, rs2] = [c[1], c[2], c[3]];
            if [rd, rs1, rs2].iter().any(|&r| r as usize >= NUM_REGS) {
                return Err(format!("instruction {pc}: bad register"));
            }
            let imm = u64::from_le_bytes(c[4..12].try_into().expect("8 bytes"));
            let imm = F::from_canonical(imm).ok_or(format!("instruction {pc}: immediate not canonical"))?;
            let tgt = u64::from_le_bytes(c[12..20].try_into().expect("8 bytes"));
            let tgt = u32::try_from(tgt).map_err(|_| format!("instruction {pc}: bad jump target"))?;
            instructions.push(Instruction { op, rd, rs1, rs2, imm, tgt });
        }
        Ok(Program { lines: vec![0; instructions.len()], instructions })
    }

    /// BLAKE3 of the canonical encoding.
    pub fn hash(&self) -> [u8; 32] {
        *blake3::hash(&self.encode()).as_bytes()
    }

    /// The hash as four field elements (8-byte little-endian limbs, reduced):
    /// the first public values of every statement about this program.
    pub fn hash_felts(&self) -> [F; 4] {
        let h = self.hash();
        std::array::from_fn(|i| F::new(u64::from_le_bytes(h[8 * i..8 * i + 8].try_into().expect("8 bytes"))))
    }
}
