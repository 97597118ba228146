//! The VM's AIR: four tables joined by LogUp buses.
//!
//! - `cpu`: one row per cycle. Holds the registers, the decoded instruction
//!   (one-hot opcode flags and register selectors), the operand values and
//!   the result; its transitions are the ISA's semantics.
//! - `memory`: every load and store, sorted by (address, cycle); offline
//!   memory checking makes each read return the last value written there
//!   (or zero).
//! - `program`: fixed, built by the verifier from the program; the CPU's
//!   instruction fetch is a lookup into it.
//! - `range`: fixed values 0..2^16; the memory table's addresses and
//!   ordering gaps are looked up in it, as two 16-bit limbs each.
//!
//! Buses (tags): fetch (1): cpu sends (pc, decoded instruction) every row,
//! program receives with its multiplicity column. memory (2): cpu sends
//! (addr, clk, value, is_write) on loads and stores, memory receives its
//! real rows. range (3): memory sends both limbs of every row's gap, range
//! receives with its multiplicity column (the address limbs too). io (4): cpu sends (0, i, value)
//! for its i-th `read` and (1, j, value) for its j-th `write`; the verifier
//! adds the public inputs and outputs itself, each exactly once. boundary
//! (5): memory across segments (below).
//!
//! Segments. A run may be proven as segments of consecutive cycles
//! ([`crate::segment`]); a whole run is the one segment 0 that is also the
//! last. The CPU's first row is the public start state; unless the segment
//! is the last, its last row steps into the public end state (the next
//! segment's start) under the same transition constraints, and only the
//! last segment must end halted. The memory table of segment k opens with
//! an `init` row (a write at cycle start - 1) for every address touched
//! before it, receiving (addr, value, k) on the boundary bus, and the last
//! row of every address sends (addr, value, k + 1) unless k is the last.
//! Sends of k and receives of k + 1 are then the same set, so memory flows
//! unchanged from one segment to the next; the bus tag k + 1 keeps a value
//! from skipping a segment, and the segment index in every memory-bus
//! tuple keeps one segment's accesses out of another's table.
//!
//! Public values: `[hash_0..hash_3, n_in, n_out, segment, is_last,
//! start state, end state, inputs.., outputs..]` ([`public`]), where the
//! hash is the program's ([`Program::hash_felts`]) and a state is
//! [`STATE_COLUMNS`]. A whole run has segment 0, is_last 1, the zero start
//! state and a zero end state (its end is not constrained).

use crate::isa::{Instruction, Opcode, Program, NUM_REGS};
use crate::logup::{self, Interaction, CH_ALPHA, CH_Z, NUM_CHALLENGES};
use backend_api::{ColMatrix, ConstraintBuilder, ConstraintSystem, Expr, Ext, Layout, LogUp, F};
use stark::{Air, Machine};

pub const TAG_FETCH: u64 = 1;
pub const TAG_MEMORY: u64 = 2;
pub const TAG_RANGE: u64 = 3;
pub const TAG_IO: u64 = 4;
pub const TAG_BOUNDARY: u64 = 5;

/// Bits per range-checked limb; the range table has 2^RANGE_BITS rows.
pub const RANGE_BITS: u32 = 16;
/// Smallest table height (log2), so tiny programs still give tables the
/// prover's FRI schedule can fold.
pub const MIN_LOG_HEIGHT: u32 = 4;
/// The CPU columns that make a machine state at a segment boundary, in
/// the order of the start and end states in the public values.
pub const STATE_COLUMNS: [usize; 4 + NUM_REGS - 1] = {
    let mut c = [0; 4 + NUM_REGS - 1];
    c[0] = cpu::CLK;
    c[1] = cpu::PC;
    let mut j = 1;
    while j < NUM_REGS {
        c[1 + j] = cpu::REG + j - 1;
        j += 1;
    }
    c[NUM_REGS + 1] = cpu::IN_PTR;
    c[NUM_REGS + 2] = cpu::OUT_PTR;
    c
};
pub const STATE_LEN: usize = STATE_COLUMNS.len();

/// Where each public value sits.
pub mod public {
    use super::STATE_LEN;
    pub const HASH: usize = 0;
    pub const N_IN: usize = 4;
    pub const N_OUT: usize = 5;
    pub const SEGMENT: usize = 6;
    pub const IS_LAST: usize = 7;
    pub const START: usize = 8;
    pub const END: usize = START + STATE_LEN;
    /// Public values before the inputs.
    pub const HEADER: usize = END + STATE_LEN;
}
pub const PUBLIC_HEADER: usize = public::HEADER;

/// CPU main columns.
pub mod cpu {
    use super::{Opcode, NUM_REGS};
    pub const CLK: usize = 0;
    pub const PC: usize = 1;
    /// r1..r7 (r0 is always zero and has no column): r_j at REG + j - 1.
    pub const REG: usize = 2;
    pub const X: usize = REG + NUM_REGS - 1;
    pub const Y: usize = X + 1;
    pub const RES: usize = X + 2;
    /// 1 / (x - y - imm) when that is non-zero, for the equality test.
    pub const INV: usize = X + 3;
    pub const IN_PTR: usize = X + 4;
    pub const OUT_PTR: usize = X + 5;
    /// The decoded instruction, fetched from the program table: imm, tgt,
    /// one flag per opcode, one-hot selectors of rs1, rs2 and rd (r1..r7).
    pub const DECODED: usize = X + 6;
    pub const IMM: usize = DECODED;
    pub const TGT: usize = DECODED + 1;
    pub const FLAG: usize = DECODED + 2;
    pub const SEL1: usize = FLAG + Opcode::COUNT;
    pub const SEL2: usize = SEL1 + NUM_REGS - 1;
    pub const SELD: usize = SEL2 + NUM_REGS - 1;
    /// The segment index (a public value), for the memory-bus tuples.
    pub const SEG: usize = SELD + NUM_REGS - 1;
    /// The pc after this step: the next row's, or the end state's.
    pub const NPC: usize = SEG + 1;
    pub const WIDTH: usize = NPC + 1;
    pub const DECODED_WIDTH: usize = SEG - DECODED;

    /// Column names, for reports.
    pub fn names() -> Vec<String> {
        let regs = |prefix: &'static str| (1..NUM_REGS).map(move |j| format!("{prefix}r{j}"));
        let mut names: Vec<String> = ["clk", "pc"].map(String::from).into();
        names.extend(regs(""));
        names.extend(["x", "y", "res", "inv", "in_ptr", "out_ptr", "imm", "tgt"].map(String::from));
        names.extend(Opcode::ALL.iter().map(|op| format!("flag.{}", op.mnemonic())));
        for sel in ["sel1.", "sel2.", "seld."] {
            names.extend(regs(sel));
        }
        names.extend(["seg", "npc"].map(String::from));
        debug_assert_eq!(names.len(), WIDTH);
        names
    }
}

/// Memory main columns.
pub mod mem {
    pub const ADDR: usize = 0;
    pub const CLK: usize = 1;
    pub const VAL: usize = 2;
    pub const WRITE: usize = 3;
    /// 1 on rows that are accesses; padding (0) only after them.
    pub const REAL: usize = 4;
    /// 1 when this row's address equals the previous row's.
    pub const SAME: usize = 5;
    /// The gap to the previous row, as two 16-bit limbs: clk - clk_prev - 1
    /// within an address, addr - addr_prev - 1 across addresses.
    pub const LO: usize = 6;
    pub const HI: usize = 7;
    /// The address as two 16-bit limbs: every address lies in [0, 2^32).
    pub const ADDR_LO: usize = 8;
    pub const ADDR_HI: usize = 9;
    /// 1 on a segment's opening row of an address touched before it.
    pub const INIT: usize = 10;
    /// 1 on the last real row of every address.
    pub const FINAL: usize = 11;
    /// final, unless this is the last segment: the row sends its value on.
    pub const SEND: usize = 12;
    /// The segment index (a public value).
    pub const SEG: usize = 13;
    pub const WIDTH: usize = 14;
    pub const NAMES: [&str; WIDTH] = [
        "addr", "clk", "val", "write", "real", "same", "lo", "hi", "addr_lo", "addr_hi", "init", "final", "send", "seg",
    ];
}

/// Program table: fixed columns pc, the decoded instruction, is_real; one
/// main column, the fetch multiplicity.
pub mod prog {
    use super::cpu::DECODED_WIDTH;
    pub const PC: usize = 0;
    pub const DECODED: usize = 1;
    pub const IS_REAL: usize = DECODED + DECODED_WIDTH;
    pub const FIXED_WIDTH: usize = IS_REAL + 1;
    pub const MULT: usize = 0;
}

/// The decoded-instruction columns shared by the CPU and program tables.
pub fn decode(ins: &Instruction) -> [F; cpu::DECODED_WIDTH] {
    let mut d = [F::ZERO; cpu::DECODED_WIDTH];
    d[0] = ins.imm;
    d[1] = F::new(ins.tgt as u64);
    d[2 + ins.op.index()] = F::ONE;
    let sel = |base: usize, r: u8, d: &mut [F]| {
        if r != 0 {
            d[base - cpu::DECODED + r as usize - 1] = F::ONE;
        }
    };
    sel(cpu::SEL1, ins.rs1, &mut d);
    sel(cpu::SEL2, ins.rs2, &mut d);
    if let Some(rd) = ins.dest() {
        sel(cpu::SELD, rd as u8, &mut d);
    }
    d
}

fn layout(fixed_width: usize, main_width: usize, interactions: usize, num_public: usize) -> Layout {
    Layout {
        fixed_width,
        main_width,
        aux_width: interactions + 1,
        num_challenges: NUM_CHALLENGES,
        num_public,
        num_aux_values: 1,
    }
}

/// One table: constraints, optional fixed trace, and its LogUp interactions.
pub struct Table {
    name: &'static str,
    column_names: Vec<String>,
    cs: ConstraintSystem,
    fixed: Option<ColMatrix>,
    logup: LogUp,
}

impl Air for Table {
    fn name(&self) -> &str {
        self.name
    }
    fn constraints(&self) -> &ConstraintSystem {
        &self.cs
    }
    fn column_name(&self, col: usize) -> String {
        self.column_names.get(col).cloned().unwrap_or_else(|| format!("main[{col}]"))
    }
    fn fixed_trace(&self) -> Option<&ColMatrix> {
        self.fixed.as_ref()
    }
    fn logup(&self) -> Option<&LogUp> {
        Some(&self.logup)
    }
}

fn table(
    name: &'static str,
    layout: Layout,
    fixed: Option<ColMatrix>,
    body: impl FnOnce(&mut ConstraintBuilder),
    at: &dyn Fn(usize) -> Vec<Interaction>,
    column_names: &[&str],
) -> Table {
    let mut b = ConstraintBuilder::new(layout);
    body(&mut b);
    backend_api::logup::constrain(&mut b, at, CH_Z, CH_ALPHA);
    let cs = b.build().expect("the VM's constraints fit their layout");
    let logup = LogUp::new(layout, at(0), CH_Z, CH_ALPHA).expect("the VM's interactions fit their layout");
    let column_names = column_names.iter().map(|s| s.to_string()).collect();
    Table { name, column_names, cs, fixed, logup }
}

fn cpu_interactions(off: usize) -> Vec<Interaction> {
    use cpu::*;
    let c = |col| Expr::main(col, off);
    let flag = |op: Opcode| c(FLAG + op.index());
    let mut fetched = vec![c(PC)];
    fetched.extend((DECODED..SEG).map(c));
    let (load, store, read, write) = (flag(Opcode::Load), flag(Opcode::Store), flag(Opcode::Read), flag(Opcode::Write));
    vec![
        Interaction { tag: TAG_FETCH, values: fetched, mult: -Expr::one() },
        Interaction {
            tag: TAG_MEMORY,
            values: vec![c(X) + c(IMM), c(CLK), c(RES), store.clone(), c(SEG)],
            mult: -(&load + &store),
        },
        Interaction {
            tag: TAG_IO,
            values: vec![write.clone(), &read * c(IN_PTR) + &write * c(OUT_PTR), c(RES)],
            mult: -(read + write),
        },
    ]
}

/// The ISA's step from the current row into `next` (a column's value one
/// cycle later), one constraint each, of degree at most 2; the caller
/// picks where they hold.
fn step_constraints(next: &dyn Fn(usize) -> Expr) -> Vec<Expr> {
    use cpu::*;
    let m = |col| Expr::main(col, 0);
    let f = |op: Opcode| m(FLAG + op.index());
    let reg = |j: usize| REG + j - 1;
    let mut out = vec![];
    // Write-back: the selected register takes res, the others keep.
    for j in 1..NUM_REGS {
        out.push(next(reg(j)) - m(reg(j)) - m(SELD + j - 1) * (m(RES) - m(reg(j))));
    }
    out.push(next(CLK) - m(CLK) - Expr::one());
    out.push(next(IN_PTR) - m(IN_PTR) - f(Opcode::Read));
    out.push(next(OUT_PTR) - m(OUT_PTR) - f(Opcode::Write));
    out.push(next(PC) - m(NPC));
    out
}

/// Control flow: the pc after each step, by opcode.
fn next_pc_constraints() -> Vec<Expr> {
    use cpu::*;
    let m = |col| Expr::main(col, 0);
    let f = |op: Opcode| m(FLAG + op.index());
    let pc1 = m(PC) + Expr::one();
    let seq =
        [Opcode::Add, Opcode::Sub, Opcode::Mul, Opcode::Eq, Opcode::Load, Opcode::Store, Opcode::Read, Opcode::Write]
            .into_iter()
            .fold(Expr::zero(), |acc, op| acc + f(op));
    let npc = m(NPC);
    vec![
        seq * (&npc - &pc1),
        f(Opcode::Beq) * (&npc - &pc1 - m(RES) * (m(TGT) - &pc1)),
        f(Opcode::Bne) * (&npc - m(TGT) - m(RES) * (&pc1 - m(TGT))),
        f(Opcode::Jal) * (&npc - m(TGT)),
        f(Opcode::Jalr) * (&npc - m(X) - m(IMM)),
        f(Opcode::Halt) * (&npc - m(PC)),
    ]
}

fn cpu_table(num_public: usize) -> Table {
    use cpu::*;
    let body = |b: &mut ConstraintBuilder| {
        let m = |col| Expr::main(col, 0);
        let f = |op: Opcode| m(FLAG + op.index());
        let p = Expr::public;
        let regs = 1..NUM_REGS;
        // Operands: x = reg[rs1], y = reg[rs2] through one-hot selectors.
        let pick = |sel: usize| regs.clone().fold(Expr::zero(), |acc, j| acc + m(sel + j - 1) * m(REG + j - 1));
        b.always(m(X) - pick(SEL1));
        b.always(m(Y) - pick(SEL2));
        b.always(m(SEG) - p(public::SEGMENT));
        for c in next_pc_constraints() {
            b.always(c);
        }
        // Rows step into the next row; the last row of a segment that is
        // not the last steps into the public end state (a constant factor:
        // the degree is unchanged, at most 2 as a boundary constraint must
        // be, which is why the next pc has a column).
        for c in step_constraints(&|col| Expr::main(col, 1)) {
            b.when_transition(c);
        }
        let end = |col: usize| {
            let i = STATE_COLUMNS.iter().position(|&c| c == col).expect("a state column");
            p(public::END + i)
        };
        for c in step_constraints(&end) {
            b.when_last_row((Expr::one() - p(public::IS_LAST)) * c);
        }
        // The public start state; the run ends halted.
        for (i, &col) in STATE_COLUMNS.iter().enumerate() {
            b.when_first_row(m(col) - p(public::START + i));
        }
        b.when_last_row(p(public::IS_LAST) * (f(Opcode::Halt) - Expr::one()));
        // Results.
        let yi = m(Y) + m(IMM);
        let pc1 = m(PC) + Expr::one();
        b.always(f(Opcode::Add) * (m(RES) - m(X) - &yi));
        b.always(f(Opcode::Sub) * (m(RES) - m(X) + &yi));
        b.always(f(Opcode::Mul) * (m(RES) - m(X) * &yi));
        let cmp = f(Opcode::Eq) + f(Opcode::Beq) + f(Opcode::Bne);
        let d = m(X) - &yi;
        b.always(&cmp * (m(RES) - Expr::one() + &d * m(INV)));
        b.always(&cmp * &d * m(RES));
        // inv is 1/d where res = 0 and zero elsewhere, so it is never free.
        b.always((Expr::one() - &cmp) * m(INV));
        b.always(m(RES) * m(INV));
        b.always(f(Opcode::Halt) * m(RES));
        b.always(f(Opcode::Store) * (m(RES) - m(Y)));
        b.always(f(Opcode::Write) * (m(RES) - m(X)));
        b.always((f(Opcode::Jal) + f(Opcode::Jalr)) * (m(RES) - &pc1));
    };
    let names = names();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    table("cpu", layout(0, WIDTH, 3, num_public), None, body, &cpu_interactions, &names)
}

fn memory_interactions(off: usize) -> Vec<Interaction> {
    use mem::*;
    let c = |col| Expr::main(col, off);
    vec![
        Interaction {
            tag: TAG_MEMORY,
            values: vec![c(ADDR), c(CLK), c(VAL), c(WRITE), c(SEG)],
            mult: c(REAL) - c(INIT),
        },
        Interaction { tag: TAG_BOUNDARY, values: vec![c(ADDR), c(VAL), c(SEG)], mult: c(INIT) },
        Interaction { tag: TAG_BOUNDARY, values: vec![c(ADDR), c(VAL), c(SEG) + Expr::one()], mult: -c(SEND) },
        Interaction { tag: TAG_RANGE, values: vec![c(LO)], mult: -Expr::one() },
        Interaction { tag: TAG_RANGE, values: vec![c(HI)], mult: -Expr::one() },
        Interaction { tag: TAG_RANGE, values: vec![c(ADDR_LO)], mult: -Expr::one() },
        Interaction { tag: TAG_RANGE, values: vec![c(ADDR_HI)], mult: -Expr::one() },
    ]
}

fn memory_table(num_public: usize) -> Table {
    use mem::*;
    let body = |b: &mut ConstraintBuilder| {
        let m = |col| Expr::main(col, 0);
        let n = |col| Expr::main(col, 1);
        let one = Expr::one();
        let p = Expr::public;
        for col in [SAME, WRITE, REAL, INIT, FINAL] {
            b.always(m(col) * (&one - m(col)));
        }
        b.always(m(SEG) - p(public::SEGMENT));
        // An init row is a real write, the first of its address, just
        // before the segment's first cycle; it is not a CPU access.
        b.always(m(INIT) * (&one - m(REAL)));
        b.always(m(INIT) * (&one - m(WRITE)));
        b.always(m(INIT) * m(SAME));
        let start_clk = p(public::START);
        b.always(m(INIT) * (m(CLK) - start_clk + &one));
        // final marks exactly the last real row of every address (real
        // rows come first, so a real row followed by padding is one); all
        // but the last segment send it on.
        b.when_transition(m(FINAL) - m(REAL) + n(SAME) * n(REAL));
        b.when_last_row(m(FINAL) - m(REAL));
        b.always(m(SEND) - m(FINAL) * (&one - p(public::IS_LAST)));
        let limbs = |lo, hi| m(lo) + m(hi) * F::new(1 << RANGE_BITS);
        // Every address is below 2^32: its 16-bit limbs are range-checked.
        b.always(m(ADDR) - limbs(ADDR_LO, ADDR_HI));
        // Padding only at the end, so it cannot sit between real accesses.
        b.when_transition((&one - m(REAL)) * n(REAL));
        b.when_transition(n(SAME) * (n(ADDR) - m(ADDR)));
        // Sorted by (addr, clk): the gap is range-checked below 2^32.
        let gap = n(SAME) * (n(CLK) - m(CLK) - &one) + (&one - n(SAME)) * (n(ADDR) - m(ADDR) - &one);
        b.when_transition(n(LO) + n(HI) * F::new(1 << RANGE_BITS) - gap);
        // A read sees the previous access's value at that address, or zero.
        b.when_transition((&one - n(WRITE)) * (n(VAL) - n(SAME) * m(VAL)));
        b.when_first_row((&one - m(WRITE)) * m(VAL));
        // The first row has no predecessor: no gap, a new address.
        for col in [SAME, LO, HI] {
            b.when_first_row(m(col));
        }
        // Padding rows write zero to the last address: the witness is a
        // function of the accesses, so no cell of it is free.
        b.always((&one - m(REAL)) * m(VAL));
        b.always((&one - m(REAL)) * (&one - m(WRITE)));
        b.when_transition((&one - n(REAL)) * (&one - n(SAME)));
    };
    table("memory", layout(0, WIDTH, 7, num_public), None, body, &memory_interactions, &mem::NAMES)
}

fn program_interactions(off: usize) -> Vec<Interaction> {
    let values = (0..prog::IS_REAL).map(|c| Expr::fixed(c, off)).collect();
    vec![Interaction { tag: TAG_FETCH, values, mult: Expr::main(prog::MULT, off) }]
}

/// The program table's fixed columns: pc, decoded instruction, is_real.
pub fn program_fixed(program: &Program) -> ColMatrix {
    let n = program.len().next_power_of_two().max(1 << MIN_LOG_HEIGHT);
    let mut m = ColMatrix::zeros(prog::FIXED_WIDTH, n);
    for r in 0..n {
        m.set(r, prog::PC, F::new(r as u64));
    }
    for (r, ins) in program.instructions.iter().enumerate() {
        for (i, v) in decode(ins).into_iter().enumerate() {
            m.set(r, prog::DECODED + i, v);
        }
        m.set(r, prog::IS_REAL, F::ONE);
    }
    m
}

fn program_table(program: &Program, num_public: usize) -> Table {
    let body = |b: &mut ConstraintBuilder| {
        // Rows past the program cannot be fetched.
        b.always(Expr::main(prog::MULT, 0) * (Expr::one() - Expr::fixed(prog::IS_REAL, 0)));
    };
    let fixed = program_fixed(program);
    table("program", layout(prog::FIXED_WIDTH, 1, 1, num_public), Some(fixed), body, &program_interactions, &["mult"])
}

fn range_interactions(off: usize) -> Vec<Interaction> {
    vec![Interaction { tag: TAG_RANGE, values: vec![Expr::fixed(0, off)], mult: Expr::main(0, off) }]
}

fn range_table(num_public: usize) -> Table {
    let fixed = ColMatrix::from_columns(vec![(0..1u64 << RANGE_BITS).map(F::new).collect()]);
    table("range", layout(1, 1, 1, num_public), Some(fixed), |_| {}, &range_interactions, &["mult"])
}

/// Where a segment sits in its run: its index, whether it is the last,
/// the state at its first cycle and the state after its last cycle (zero
/// for the last segment: a run's end is not part of its statement).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub index: u64,
    pub is_last: bool,
    pub start: [F; STATE_LEN],
    pub end: [F; STATE_LEN],
}

impl Place {
    /// A whole run: the one segment, from the initial state.
    pub const WHOLE_RUN: Place =
        Place { index: 0, is_last: true, start: [F::ZERO; STATE_LEN], end: [F::ZERO; STATE_LEN] };
}

/// Errors building a statement from public values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StatementError {
    #[error("the public values are malformed: {0}")]
    Malformed(String),
    #[error("the public values name another program (hash mismatch)")]
    WrongProgram,
}

/// A statement: "this program, run on these inputs, halts with these
/// outputs". The four tables, their fixed columns built from the program.
pub struct VmMachine {
    pub program: Program,
    publics: Vec<F>,
    tables: [Table; 4],
}

impl VmMachine {
    /// The statement of a whole run.
    pub fn new(program: &Program, inputs: &[F], outputs: &[F]) -> VmMachine {
        VmMachine::segment(program, inputs, outputs, &Place::WHOLE_RUN)
    }

    /// The statement of one segment of a run.
    pub fn segment(program: &Program, inputs: &[F], outputs: &[F], place: &Place) -> VmMachine {
        let mut publics = program.hash_felts().to_vec();
        publics.push(F::new(inputs.len() as u64));
        publics.push(F::new(outputs.len() as u64));
        publics.push(F::new(place.index));
        publics.push(F::new(place.is_last as u64));
        publics.extend_from_slice(&place.start);
        publics.extend_from_slice(&place.end);
        publics.extend_from_slice(inputs);
        publics.extend_from_slice(outputs);
        VmMachine::build(program, publics)
    }

    /// Rebuilds the statement a verifier checks, from the program and the
    /// public values a proof claims.
    pub fn from_publics(program: &Program, publics: &[F]) -> Result<VmMachine, StatementError> {
        let (n_in, n_out) = parse_publics(publics)?;
        if publics[..4] != program.hash_felts() {
            return Err(StatementError::WrongProgram);
        }
        debug_assert_eq!(PUBLIC_HEADER + n_in + n_out, publics.len());
        Ok(VmMachine::build(program, publics.to_vec()))
    }

    fn build(program: &Program, publics: Vec<F>) -> VmMachine {
        let np = publics.len();
        let tables = [cpu_table(np), memory_table(np), program_table(program, np), range_table(np)];
        VmMachine { program: program.clone(), publics, tables }
    }

    pub fn publics(&self) -> &[F] {
        &self.publics
    }

    /// Where this statement's segment sits in its run.
    pub fn place(&self) -> Place {
        let p = &self.publics;
        let state = |at: usize| -> [F; STATE_LEN] { p[at..at + STATE_LEN].try_into().expect("state length") };
        Place {
            index: p[public::SEGMENT].value(),
            is_last: p[public::IS_LAST] == F::ONE,
            start: state(public::START),
            end: state(public::END),
        }
    }

    pub fn inputs(&self) -> &[F] {
        let n_in = self.publics[public::N_IN].value() as usize;
        &self.publics[PUBLIC_HEADER..PUBLIC_HEADER + n_in]
    }

    pub fn outputs(&self) -> &[F] {
        let n_in = self.publics[public::N_IN].value() as usize;
        &self.publics[PUBLIC_HEADER + n_in..]
    }

    /// The io bus's public side: every input and output once.
    pub(crate) fn io_sum(publics: &[F], challenges: &[Ext]) -> Result<Ext, String> {
        let (n_in, _) = parse_publics(publics).map_err(|e| e.to_string())?;
        let ios = &publics[PUBLIC_HEADER..];
        let dens: Vec<Ext> = ios
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let (kind, idx) = if i < n_in { (F::ZERO, i) } else { (F::ONE, i - n_in) };
                logup::denominator(challenges, TAG_IO, &[kind, F::new(idx as u64), v])
            })
            .collect();
        if dens.iter().any(|d| d.is_zero()) {
            return Err("a public io fingerprint hits the challenge".into());
        }
        Ok(backend_api::batch_inverse(&dens).into_iter().sum())
    }
}

fn parse_publics(publics: &[F]) -> Result<(usize, usize), StatementError> {
    if publics.len() < PUBLIC_HEADER {
        return Err(StatementError::Malformed(format!(
            "{} values, the header alone has {PUBLIC_HEADER}",
            publics.len()
        )));
    }
    if publics[public::IS_LAST].value() > 1 {
        return Err(StatementError::Malformed("is_last is neither 0 nor 1".into()));
    }
    let (n_in, n_out) = (publics[public::N_IN].value(), publics[public::N_OUT].value());
    let rest = (publics.len() - PUBLIC_HEADER) as u64;
    if n_in.checked_add(n_out) != Some(rest) {
        return Err(StatementError::Malformed(format!("{n_in} inputs and {n_out} outputs, but {rest} values follow")));
    }
    Ok((n_in as usize, n_out as usize))
}

impl Machine for VmMachine {
    fn tables(&self) -> Vec<&dyn Air> {
        self.tables.iter().map(|t| t as &dyn Air).collect()
    }

    fn num_challenges(&self) -> usize {
        NUM_CHALLENGES
    }

    fn check_aux_values(&self, publics: &[F], challenges: &[Ext], aux_values: &[Vec<Ext>]) -> Result<(), String> {
        if publics.len() < 4 || publics[..4] != self.program.hash_felts() {
            return Err("the public program hash is not this program's".into());
        }
        if self.place() != Place::WHOLE_RUN {
            return Err("a proof on its own states a whole run: segment 0, the last, from the initial state".into());
        }
        if aux_values.len() != self.tables.len() || aux_values.iter().any(|v| v.len() != 1) {
            return Err("expected one bus sum per table".into());
        }
        let total: Ext = aux_values.iter().map(|v| v[0]).sum::<Ext>() + VmMachine::io_sum(publics, challenges)?;
        if total.is_zero() {
            Ok(())
        } else {
            Err("the LogUp buses do not balance".into())
        }
    }
}
