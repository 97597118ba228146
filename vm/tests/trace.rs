//! The parallel trace generator against a plain sequential one (the
//! definition it replaced), cell for cell: every example, runs that end
//! inside, at and past block boundaries, heavy memory use, and executions
//! that broke the ISA.

use backend_api::{ColMatrix, F};
use vm::air::{cpu, decode, mem, MIN_LOG_HEIGHT, RANGE_BITS};
use vm::exec::{Deviation, MemAccess};
use vm::isa::NUM_REGS;
use vm::{assemble, examples, execute, trace, ExecOptions, Execution, Opcode, Program};

fn padded(n: usize) -> usize {
    n.next_power_of_two().max(1 << MIN_LOG_HEIGHT)
}

/// The sequential definition.
fn reference(program: &Program, ex: &Execution) -> Vec<ColMatrix> {
    let cpu_trace = cpu_trace(program, ex);
    let memory = memory_trace(&ex.memory);
    let mut pc_mult = vec![0u64; padded(program.len())];
    for &pc in cpu_trace.column(cpu::PC) {
        pc_mult[pc.value() as usize] += 1;
    }
    let mut range_mult = vec![0u64; 1 << RANGE_BITS];
    for col in [mem::LO, mem::HI, mem::ADDR_LO, mem::ADDR_HI] {
        for &v in memory.column(col) {
            if let Some(m) = range_mult.get_mut(v.value() as usize) {
                *m += 1;
            }
        }
    }
    let program_trace = ColMatrix::from_columns(vec![pc_mult.into_iter().map(F::new).collect()]);
    let range_trace = ColMatrix::from_columns(vec![range_mult.into_iter().map(F::new).collect()]);
    vec![cpu_trace, memory, program_trace, range_trace]
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
        // The pc after the step: the next row's (padding: the halt's own).
        set(r, cpu::NPC, F::new(ex.steps[(r + 1).min(rows - 1)].pc as u64));
        in_ptr += (ins.op == Opcode::Read) as u64;
        out_ptr += (ins.op == Opcode::Write) as u64;
    }
    // A whole run is segment 0: the segment column stays zero.
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
            // A whole run has no rows from before it and sends nothing on.
            (mem::FINAL, F::new((real && sorted.get(r + 1).is_none_or(|b| b.addr != a.addr)) as u64)),
        ];
        for (c, v) in row {
            data[c * n + r] = v;
        }
        (addr, clk) = (a.addr, a.clk);
    }
    ColMatrix::new(mem::WIDTH, n, data)
}

fn same_traces(name: &str, src: &str, inputs: &[u64], deviation: Option<Deviation>) {
    let p = assemble(src).unwrap();
    let inputs: Vec<F> = inputs.iter().map(|&v| F::new(v)).collect();
    let ex = execute(&p, &inputs, &ExecOptions { record: true, deviation, ..Default::default() }).unwrap();
    let got = trace::generate(&p, &ex).unwrap();
    let want = reference(&p, &ex);
    for (t, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!((g.width(), g.height()), (w.width(), w.height()), "{name}: table {t} shape");
        for c in 0..w.width() {
            if let Some(r) = (0..w.height()).find(|&r| g.get(r, c) != w.get(r, c)) {
                panic!("{name}: table {t} column {c} row {r}: {} != {}", g.get(r, c), w.get(r, c));
            }
        }
    }
}

#[test]
fn parallel_traces_equal_the_sequential_definition() {
    for (name, src, inputs) in examples::ALL {
        same_traces(name, src, inputs, None);
    }
    // chain runs 4n + 8 cycles: inside one block, one row short of two,
    // exactly three (a power-of-two table with no padding), and past it.
    for n in [3, 1021, 3070, 5000] {
        same_traces(&format!("chain {n}"), examples::CHAIN, &[n, 3], None);
    }
    // Thousands of memory accesses over many addresses, several blocks.
    same_traces("factorial 1500", examples::FACTORIAL, &[1500], None);
    same_traces("matmul 24", examples::MATMUL, &[24], None);
    let p = F::ZERO - F::ONE;
    let store = "read r1\nstore [r1], r1\nwrite r1\nhalt";
    same_traces("an address past memory", store, &[p.value()], Some(Deviation::UncheckedAddresses));
    same_traces("no memory, one step", "halt", &[], None);
}
