//! Trace generation: an execution record to the four main traces, in the
//! machine's table order (cpu, memory, program, range), each padded to a
//! power-of-two height with rows that satisfy the constraints.

use crate::air::{cpu, decode, mem, prog, MIN_LOG_HEIGHT, RANGE_BITS};
use crate::exec::{Execution, MemAccess};
use crate::isa::{Opcode, Program, NUM_REGS};
use backend_api::{ColMatrix, F};

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    #[error("the execution was not recorded (run with `record: true`)")]
    NotRecorded,
    #[error("the execution has no steps")]
    Empty,
}

fn padded(n: usize) -> usize {
    n.next_power_of_two().max(1 << MIN_LOG_HEIGHT)
}

/// Builds the main traces of a recorded execution of `program`.
pub fn generate(program: &Program, ex: &Execution) -> Result<Vec<ColMatrix>, TraceError> {
    if ex.steps.is_empty() {
        return Err(if ex.cycles == 0 { TraceError::Empty } else { TraceError::NotRecorded });
    }
    let cpu_trace = cpu_trace(program, ex);
    let memory = memory_trace(&ex.memory);

    let mut pc_mult = vec![0u64; program_fixed_height(program)];
    for &pc in cpu_trace.column(cpu::PC) {
        pc_mult[pc.value() as usize] += 1;
    }
    let mut range_mult = vec![0u64; 1 << RANGE_BITS];
    for col in [mem::LO, mem::HI, mem::ADDR_LO, mem::ADDR_HI] {
        // A limb out of range (only from an execution that broke the ISA)
        // has no table row to count: the range bus then refuses it.
        for &v in memory.column(col) {
            if let Some(m) = range_mult.get_mut(v.value() as usize) {
                *m += 1;
            }
        }
    }
    let program_trace = ColMatrix::from_columns(vec![pc_mult.into_iter().map(F::new).collect()]);
    let range_trace = ColMatrix::from_columns(vec![range_mult.into_iter().map(F::new).collect()]);
    debug_assert_eq!(prog::MULT, 0);
    Ok(vec![cpu_trace, memory, program_trace, range_trace])
}

fn program_fixed_height(program: &Program) -> usize {
    padded(program.len())
}

fn cpu_trace(program: &Program, ex: &Execution) -> ColMatrix {
    let rows = ex.steps.len();
    let n = padded(rows);
    let mut data = vec![F::ZERO; cpu::WIDTH * n];
    let mut set = |r: usize, c: usize, v: F| data[c * n + r] = v;
    let (mut in_ptr, mut out_ptr) = (0u64, 0u64);
    for r in 0..n {
        // Padding repeats the final halt, one cycle later each row.
        let step = &ex.steps[r.min(rows - 1)];
        let ins = &program.instructions[step.pc as usize];
        set(r, cpu::CLK, F::new(r as u64));
        set(r, cpu::PC, F::new(step.pc as u64));
        for j in 1..NUM_REGS {
            set(r, cpu::REG + j - 1, step.regs[j]);
        }
        let x = step.regs[ins.rs1 as usize];
        let y = step.regs[ins.rs2 as usize];
        set(r, cpu::X, x);
        set(r, cpu::Y, y);
        set(r, cpu::RES, step.res);
        if matches!(ins.op, Opcode::Eq | Opcode::Beq | Opcode::Bne) {
            set(r, cpu::INV, (x - y - ins.imm).inverse().unwrap_or(F::ZERO));
        }
        set(r, cpu::IN_PTR, F::new(in_ptr));
        set(r, cpu::OUT_PTR, F::new(out_ptr));
        for (i, v) in decode(ins).into_iter().enumerate() {
            set(r, cpu::DECODED + i, v);
        }
        in_ptr += (ins.op == Opcode::Read) as u64;
        out_ptr += (ins.op == Opcode::Write) as u64;
    }
    ColMatrix::new(cpu::WIDTH, n, data)
}

fn memory_trace(accesses: &[MemAccess]) -> ColMatrix {
    let mut sorted = accesses.to_vec();
    sorted.sort_unstable_by_key(|a| (a.addr, a.clk));
    let n = padded(sorted.len());
    let mut data = vec![F::ZERO; mem::WIDTH * n];
    let (mut addr, mut clk) = (0u64, 0u64);
    for r in 0..n {
        let (a, real) = match sorted.get(r) {
            Some(a) => (*a, true),
            // Padding: writes to the last address, one cycle apart (gap 0).
            None => (MemAccess { addr, clk: if r == 0 { 0 } else { clk + 1 }, value: F::ZERO, write: true }, false),
        };
        let same = r > 0 && a.addr == addr;
        let gap = match (r, same) {
            (0, _) => 0,
            (_, true) => a.clk - clk - 1,
            (_, false) => a.addr - addr - 1,
        };
        let row = [
            (mem::ADDR, F::new(a.addr)),
            (mem::CLK, F::new(a.clk)),
            (mem::VAL, a.value),
            (mem::WRITE, F::new(a.write as u64)),
            (mem::REAL, F::new(real as u64)),
            (mem::SAME, F::new(same as u64)),
            (mem::LO, F::new(gap & ((1 << RANGE_BITS) - 1))),
            (mem::HI, F::new(gap >> RANGE_BITS)),
            (mem::ADDR_LO, F::new(a.addr & ((1 << RANGE_BITS) - 1))),
            (mem::ADDR_HI, F::new(a.addr >> RANGE_BITS)),
        ];
        for (c, v) in row {
            data[c * n + r] = v;
        }
        (addr, clk) = (a.addr, a.clk);
    }
    ColMatrix::new(mem::WIDTH, n, data)
}
