//! Trace generation: an execution record to the four main traces, in the
//! machine's table order (cpu, memory, program, range), each padded to a
//! power-of-two height with rows that satisfy the constraints.
//!
//! Tables are built in parallel over blocks of rows: each block writes its
//! slice of every column (column-major, so a block's slices stay in a
//! core's cache) into a zeroed buffer, and only the non-zero cells are
//! written. What a row needs from the rows before it (the io pointers, the
//! previous memory access) is known per block before the blocks run.
//!
//! A whole run is one [`Segment`]; [`crate::segment`] cuts longer runs
//! into several, each built the same way.

use crate::air::{cpu, decode, mem, prog, MIN_LOG_HEIGHT, RANGE_BITS};
use crate::exec::{Execution, MemAccess, Step};
use crate::isa::{Opcode, Program, NUM_REGS};
use backend_api::{ColMatrix, F};
use rayon::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    #[error("the execution was not recorded (run with `record: true`)")]
    NotRecorded,
    #[error("the execution has no steps")]
    Empty,
    #[error("out of host memory building the {table} table ({bytes} bytes)")]
    HostAlloc { table: &'static str, bytes: u64 },
}

/// A zeroed column-major matrix's buffer (`backend_api::host`: fresh zero
/// pages, transparent huge pages for large ones, so building and freeing a
/// trace takes one page fault per 2 MiB, not per 4 KiB), or the typed
/// error naming the table when the host cannot give it.
fn zeroed(table: &'static str, width: usize, height: usize) -> Result<Vec<F>, TraceError> {
    backend_api::host::try_zeroed(width * height).map_err(|e| TraceError::HostAlloc { table, bytes: e.bytes })
}

/// Rows per block: a block's slices of the CPU table's 51 columns take
/// 51 x 4096 x 8 bytes, within a core's L2.
const BLOCK: usize = 1 << 12;

fn padded(n: usize) -> usize {
    n.next_power_of_two().max(1 << MIN_LOG_HEIGHT)
}

/// The part of a recorded execution that one segment proves.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    pub index: u64,
    pub is_last: bool,
    /// The segment's steps; all but the last segment's are a power of two
    /// in number (the last is padded with its final halt).
    pub steps: &'a [Step],
    /// Its loads and stores, in time order.
    pub accesses: &'a [MemAccess],
    /// The cycle of its first step.
    pub start_clk: u64,
    /// The pc after its last step (the last segment's: its halt's).
    pub next_pc: u32,
    /// Inputs read and outputs written before it.
    pub start_io: (u64, u64),
    /// Every address touched before it, ascending, with its value then.
    pub live: &'a [(u64, F)],
}

impl<'a> Segment<'a> {
    /// A whole run as its one segment.
    pub fn whole(ex: &'a Execution) -> Segment<'a> {
        Segment {
            index: 0,
            is_last: true,
            steps: &ex.steps,
            accesses: &ex.memory,
            start_clk: 0,
            next_pc: ex.steps.last().map_or(0, |s| s.pc),
            start_io: (0, 0),
            live: &[],
        }
    }
}

/// Builds the main traces of a recorded execution of `program`.
pub fn generate(program: &Program, ex: &Execution) -> Result<Vec<ColMatrix>, TraceError> {
    if ex.steps.is_empty() {
        return Err(if ex.cycles == 0 { TraceError::Empty } else { TraceError::NotRecorded });
    }
    generate_segment(program, &Segment::whole(ex))
}

/// Builds the main traces of one segment.
pub fn generate_segment(program: &Program, seg: &Segment) -> Result<Vec<ColMatrix>, TraceError> {
    if seg.steps.is_empty() {
        return Err(TraceError::Empty);
    }
    let ((cpu_trace, program_trace), memory) =
        rayon::join(|| (cpu_trace(program, seg), program_multiplicities(program, seg.steps)), || memory_trace(seg));
    let memory = memory?;
    let range_trace = range_multiplicities(&memory);
    Ok(vec![cpu_trace?, memory, program_trace, range_trace])
}

/// A zeroed column-major matrix, cut into blocks of rows: `blocks[b][c]`
/// is column c's slice of rows [b * BLOCK, (b + 1) * BLOCK).
fn blocks_of(data: &mut [F], height: usize) -> Vec<Vec<&mut [F]>> {
    let mut blocks: Vec<Vec<&mut [F]>> = (0..height.div_ceil(BLOCK)).map(|_| vec![]).collect();
    for column in data.chunks_mut(height) {
        for (b, slice) in column.chunks_mut(BLOCK).enumerate() {
            blocks[b].push(slice);
        }
    }
    blocks
}

/// The decoded instruction's non-zero cells, per pc.
fn sparse_decoded(program: &Program) -> Vec<Vec<(usize, F)>> {
    let nonzero = |d: [F; cpu::DECODED_WIDTH]| -> Vec<(usize, F)> {
        d.into_iter().enumerate().filter(|(_, v)| !v.is_zero()).map(|(i, v)| (cpu::DECODED + i, v)).collect()
    };
    program.instructions.iter().map(|ins| nonzero(decode(ins))).collect()
}

/// The (in_ptr, out_ptr) at the first row of every block: the reads and
/// writes of the rows before it.
fn io_pointers(program: &Program, steps: &[Step], blocks: usize) -> Vec<(u64, u64)> {
    let counts: Vec<(u64, u64)> = (0..blocks)
        .into_par_iter()
        .map(|b| {
            let rows = steps.get(b * BLOCK..((b + 1) * BLOCK).min(steps.len())).unwrap_or(&[]);
            rows.iter().fold((0, 0), |(r, w), s| {
                let op = program.instructions[s.pc as usize].op;
                (r + (op == Opcode::Read) as u64, w + (op == Opcode::Write) as u64)
            })
        })
        .collect();
    let mut at = (0, 0);
    counts
        .into_iter()
        .map(|(r, w)| {
            let start = at;
            at = (at.0 + r, at.1 + w);
            start
        })
        .collect()
}

fn cpu_trace(program: &Program, seg: &Segment) -> Result<ColMatrix, TraceError> {
    let rows = seg.steps.len();
    let n = padded(rows);
    let decoded = sparse_decoded(program);
    let mut data = zeroed("cpu", cpu::WIDTH, n)?;
    let blocks = blocks_of(&mut data, n);
    let starts = io_pointers(program, seg.steps, blocks.len());
    let (in0, out0) = seg.start_io;
    blocks.into_par_iter().zip(starts).enumerate().for_each(|(b, (mut cols, (in_ptr, out_ptr)))| {
        let (mut in_ptr, mut out_ptr) = (in0 + in_ptr, out0 + out_ptr);
        for i in 0..cols[0].len() {
            let r = b * BLOCK + i;
            // Padding repeats the final halt, one cycle later each row.
            let step = &seg.steps[r.min(rows - 1)];
            let ins = &program.instructions[step.pc as usize];
            let mut set = |c: usize, v: F| cols[c][i] = v;
            set(cpu::CLK, F::new(seg.start_clk + r as u64));
            set(cpu::SEG, F::new(seg.index));
            let npc = if r + 1 < rows { seg.steps[r + 1].pc } else { seg.next_pc };
            set(cpu::NPC, F::new(npc as u64));
            set(cpu::PC, F::new(step.pc as u64));
            for j in 1..NUM_REGS {
                set(cpu::REG + j - 1, step.regs[j]);
            }
            let x = step.regs[ins.rs1 as usize];
            let y = step.regs[ins.rs2 as usize];
            set(cpu::X, x);
            set(cpu::Y, y);
            set(cpu::RES, step.res);
            if matches!(ins.op, Opcode::Eq | Opcode::Beq | Opcode::Bne) {
                set(cpu::INV, (x - y - ins.imm).inverse().unwrap_or(F::ZERO));
            }
            set(cpu::IN_PTR, F::new(in_ptr));
            set(cpu::OUT_PTR, F::new(out_ptr));
            for &(c, v) in &decoded[step.pc as usize] {
                set(c, v);
            }
            in_ptr += (ins.op == Opcode::Read) as u64;
            out_ptr += (ins.op == Opcode::Write) as u64;
        }
    });
    Ok(ColMatrix::new(cpu::WIDTH, n, data))
}

/// One row of the memory table: an access, or a segment's opening write
/// of a value from before it.
#[derive(Clone, Copy, Debug)]
struct MemRow {
    access: MemAccess,
    init: bool,
}

/// Row r of the memory table: the r-th row in (address, cycle) order, or
/// padding, which writes zero to the last address one cycle apart.
fn memory_row(sorted: &[MemRow], seg: &Segment, r: usize) -> [(usize, F); mem::WIDTH] {
    let real = r < sorted.len();
    let at = |i: usize| match sorted.get(i) {
        Some(row) => row.access,
        None => {
            let last = sorted.last().map_or(MemAccess { addr: 0, clk: 0, value: F::ZERO, write: true }, |a| a.access);
            let clk = if sorted.is_empty() { i as u64 } else { last.clk + (i + 1 - sorted.len()) as u64 };
            MemAccess { addr: last.addr, clk, value: F::ZERO, write: true }
        }
    };
    let a = at(r);
    let prev = (r > 0).then(|| at(r - 1));
    let same = prev.is_some_and(|p| p.addr == a.addr);
    let gap = match prev {
        None => 0,
        Some(p) if same => a.clk - p.clk - 1,
        Some(p) => a.addr - p.addr - 1,
    };
    let init = real && sorted[r].init;
    let last_of_address = real && sorted.get(r + 1).is_none_or(|next| next.access.addr != a.addr);
    let limb = |v: u64| F::new(v & ((1 << RANGE_BITS) - 1));
    let bit = |b: bool| F::new(b as u64);
    [
        (mem::ADDR, F::new(a.addr)),
        (mem::CLK, F::new(a.clk)),
        (mem::VAL, a.value),
        (mem::WRITE, bit(a.write)),
        (mem::REAL, bit(real)),
        (mem::SAME, bit(same)),
        (mem::LO, limb(gap)),
        (mem::HI, F::new(gap >> RANGE_BITS)),
        (mem::ADDR_LO, limb(a.addr)),
        (mem::ADDR_HI, F::new(a.addr >> RANGE_BITS)),
        (mem::INIT, bit(init)),
        (mem::FINAL, bit(last_of_address)),
        (mem::SEND, bit(last_of_address && !seg.is_last)),
        (mem::SEG, F::new(seg.index)),
    ]
}

fn memory_trace(seg: &Segment) -> Result<ColMatrix, TraceError> {
    let opening = seg.live.iter().map(|&(addr, value)| MemRow {
        access: MemAccess { addr, clk: seg.start_clk.wrapping_sub(1), value, write: true },
        init: true,
    });
    let mut sorted: Vec<MemRow> =
        opening.chain(seg.accesses.iter().map(|&access| MemRow { access, init: false })).collect();
    sorted.par_sort_unstable_by_key(|r| (r.access.addr, !r.init, r.access.clk));
    let n = padded(sorted.len());
    let mut data = zeroed("memory", mem::WIDTH, n)?;
    blocks_of(&mut data, n).into_par_iter().enumerate().for_each(|(b, mut cols)| {
        for i in 0..cols[0].len() {
            for (c, v) in memory_row(&sorted, seg, b * BLOCK + i) {
                cols[c][i] = v;
            }
        }
    });
    Ok(ColMatrix::new(mem::WIDTH, n, data))
}

/// How often each value below `bins` occurs, counted per thread and
/// summed. Values past the bins (only an execution that broke the ISA
/// makes them) are not counted: their bus then refuses them.
fn histogram(bins: usize, values: impl ParallelIterator<Item = u64>) -> Vec<F> {
    let counts = values
        .fold(
            || vec![0u64; bins],
            |mut acc, v| {
                if let Some(c) = acc.get_mut(v as usize) {
                    *c += 1;
                }
                acc
            },
        )
        .reduce(
            || vec![0u64; bins],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        );
    counts.into_iter().map(F::new).collect()
}

/// The program table's one main column: how often each pc is fetched,
/// padding rows (repeats of the final halt) included.
fn program_multiplicities(program: &Program, steps: &[Step]) -> ColMatrix {
    // Only the last segment is padded; the others have a power-of-two count.
    let mut mult = histogram(padded(program.len()), steps.par_iter().map(|s| s.pc as u64));
    let last = steps.last().expect("non-empty").pc as usize;
    mult[last] += F::new((padded(steps.len()) - steps.len()) as u64);
    debug_assert_eq!(prog::MULT, 0);
    ColMatrix::from_columns(vec![mult])
}

/// The range table's one main column: how often each 16-bit value is
/// looked up by the memory table's limbs.
fn range_multiplicities(memory: &ColMatrix) -> ColMatrix {
    let limbs = [mem::LO, mem::HI, mem::ADDR_LO, mem::ADDR_HI];
    let values = limbs.into_par_iter().flat_map(|c| memory.column(c).par_iter().map(|v| v.value()));
    ColMatrix::from_columns(vec![histogram(1 << RANGE_BITS, values)])
}
