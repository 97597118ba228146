//! The executor: runs a program on public inputs and, when asked, records
//! what trace generation needs (the state before every step and every
//! memory access).

use crate::isa::{Instruction, Opcode, Program, MEM_LIMIT, NUM_REGS};
use backend_api::F;
use std::collections::HashMap;

/// Where the default cycle limit sits: well past the 2^20-cycle examples,
/// well below what a host can hold as a trace.
pub const DEFAULT_MAX_CYCLES: u64 = 1 << 24;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    #[error("cycle limit of {limit} reached without halting")]
    CycleLimit { limit: u64 },
    #[error("bad memory address {addr} at pc {pc} (line {line}): addresses lie in [0, 2^32)")]
    BadAddress { pc: usize, line: usize, addr: F },
    #[error("bad jump target {target} at pc {pc} (line {line}): the program has {len} instructions")]
    BadJump { pc: usize, line: usize, target: F, len: usize },
    #[error("execution ran past the last instruction (pc {pc}); end the program with `halt`")]
    FellOffEnd { pc: usize },
    #[error("`read` at pc {pc} (line {line}) found no input left: {given} input(s) were given")]
    InputExhausted { pc: usize, line: usize, given: usize },
    #[error("the program halted after reading {read} of {given} input(s); a statement binds exactly the inputs read")]
    UnreadInputs { read: usize, given: usize },
}

/// The machine state before one step, and the value that step produced
/// (its result register value, the value loaded/stored/read/written, or
/// the equality bit of a branch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub pc: u32,
    pub regs: [F; NUM_REGS],
    pub res: F,
}

/// One memory access, at the cycle (`clk`) of the step that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemAccess {
    pub addr: u64,
    pub clk: u64,
    pub value: F,
    pub write: bool,
}

/// What a run produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Execution {
    pub inputs: Vec<F>,
    pub outputs: Vec<F>,
    /// Steps executed, the final `halt` included.
    pub cycles: u64,
    /// Per step, when recorded.
    pub steps: Vec<Step>,
    /// Every load and store in time order, when recorded.
    pub memory: Vec<MemAccess>,
}

/// A deliberate departure from the ISA, so tests can build the witness a
/// cheating prover would (the executor carries on coherently from it) and
/// check that the AIR rejects it. Never set outside tests.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deviation {
    /// The n-th load (0-based) returns the stored value plus one.
    LoadPlusOne { nth_load: usize },
    /// The n-th load returns the value its address held before the last
    /// write to it (zero if it was written once).
    StaleLoad { nth_load: usize },
    /// The n-th load returns `value` although its address was never
    /// written (it must be such a load).
    UnwrittenLoad { nth_load: usize, value: F },
    /// Addresses are not checked against [0, 2^32).
    UncheckedAddresses,
    /// The n-th `read` skips one input.
    SkipInput { nth_read: usize },
    /// The n-th `read` returns the input before it again.
    RepeatInput { nth_read: usize },
    /// The step at `cycle` also writes its result to register `reg`.
    ExtraWrite { cycle: u64, reg: u8 },
    /// The first `halt` does not stop: execution goes on at pc + 1.
    HaltFallsThrough,
}

#[derive(Clone, Debug)]
pub struct ExecOptions {
    pub max_cycles: u64,
    /// Record steps and memory accesses (needed to build traces).
    pub record: bool,
    #[doc(hidden)]
    pub deviation: Option<Deviation>,
}

impl Default for ExecOptions {
    fn default() -> ExecOptions {
        ExecOptions { max_cycles: DEFAULT_MAX_CYCLES, record: false, deviation: None }
    }
}

fn to_addr(v: F, dev: Option<Deviation>) -> Option<u64> {
    (v.value() < MEM_LIMIT || dev == Some(Deviation::UncheckedAddresses)).then_some(v.value())
}

/// Word memory; remembers each address's value before its last write only
/// when a deviation needs it.
struct Memory {
    now: HashMap<u64, F>,
    before: Option<HashMap<u64, F>>,
    loads: usize,
}

impl Memory {
    fn new(dev: Option<Deviation>) -> Memory {
        let before = matches!(dev, Some(Deviation::StaleLoad { .. })).then(HashMap::new);
        Memory { now: HashMap::new(), before, loads: 0 }
    }

    fn store(&mut self, addr: u64, v: F) {
        let old = self.now.insert(addr, v);
        if let Some(before) = &mut self.before {
            before.insert(addr, old.unwrap_or(F::ZERO));
        }
    }

    fn load(&mut self, addr: u64, dev: Option<Deviation>) -> F {
        let n = self.loads;
        self.loads += 1;
        let v = self.now.get(&addr).copied().unwrap_or(F::ZERO);
        match dev {
            Some(Deviation::LoadPlusOne { nth_load }) if nth_load == n => v + F::ONE,
            Some(Deviation::StaleLoad { nth_load }) if nth_load == n => {
                self.before.as_ref().and_then(|b| b.get(&addr)).copied().unwrap_or(F::ZERO)
            }
            Some(Deviation::UnwrittenLoad { nth_load, value }) if nth_load == n && !self.now.contains_key(&addr) => {
                value
            }
            _ => v,
        }
    }
}

/// The input the `read` numbered `nth` returns, and the index after it.
fn read_input(inputs: &[F], next: usize, nth: usize, dev: Option<Deviation>) -> Option<(F, usize)> {
    let idx = match dev {
        Some(Deviation::SkipInput { nth_read }) if nth_read == nth => next + 1,
        Some(Deviation::RepeatInput { nth_read }) if nth_read == nth && next > 0 => {
            return inputs.get(next).map(|_| (inputs[next - 1], next + 1));
        }
        _ => next,
    };
    inputs.get(idx).map(|&v| (v, idx + 1))
}

/// Runs `program` on `inputs`.
pub fn execute(program: &Program, inputs: &[F], opts: &ExecOptions) -> Result<Execution, ExecError> {
    let dev = opts.deviation;
    let mut regs = [F::ZERO; NUM_REGS];
    let mut mem = Memory::new(dev);
    let mut pc: usize = 0;
    let mut ex = Execution { inputs: inputs.to_vec(), ..Default::default() };
    let (mut next_input, mut reads) = (0usize, 0usize);
    let mut halt_falls_through = dev == Some(Deviation::HaltFallsThrough);
    let len = program.len();
    for clk in 0..opts.max_cycles {
        let Some(&ins) = program.instructions.get(pc) else {
            return Err(ExecError::FellOffEnd { pc });
        };
        let line = program.lines.get(pc).copied().unwrap_or(0);
        let Instruction { op, rs1, rs2, imm, tgt, .. } = ins;
        let x = regs[rs1 as usize];
        let y = regs[rs2 as usize];
        let yi = y + imm;
        let mut next = pc + 1;
        let res = match op {
            Opcode::Add => x + yi,
            Opcode::Sub => x - yi,
            Opcode::Mul => x * yi,
            Opcode::Eq | Opcode::Beq | Opcode::Bne => {
                let eq = x == yi;
                if (op == Opcode::Beq && eq) || (op == Opcode::Bne && !eq) {
                    next = tgt as usize;
                }
                F::new(eq as u64)
            }
            Opcode::Load | Opcode::Store => {
                let a = x + imm;
                let addr = to_addr(a, dev).ok_or(ExecError::BadAddress { pc, line, addr: a })?;
                let write = op == Opcode::Store;
                let value = if write {
                    mem.store(addr, y);
                    y
                } else {
                    mem.load(addr, dev)
                };
                if opts.record {
                    ex.memory.push(MemAccess { addr, clk, value, write });
                }
                value
            }
            Opcode::Jal => {
                next = tgt as usize;
                F::new(pc as u64 + 1)
            }
            Opcode::Jalr => {
                let t = x + imm;
                if t.value() >= len as u64 {
                    return Err(ExecError::BadJump { pc, line, target: t, len });
                }
                next = t.value() as usize;
                F::new(pc as u64 + 1)
            }
            Opcode::Read => {
                let (v, after) = read_input(inputs, next_input, reads, dev).ok_or(ExecError::InputExhausted {
                    pc,
                    line,
                    given: inputs.len(),
                })?;
                (next_input, reads) = (after, reads + 1);
                v
            }
            Opcode::Write => {
                ex.outputs.push(x);
                x
            }
            Opcode::Halt => {
                next = pc;
                F::ZERO
            }
        };
        if opts.record {
            ex.steps.push(Step { pc: pc as u32, regs, res });
        }
        if let Some(d) = ins.dest() {
            regs[d] = res;
        }
        if let Some(Deviation::ExtraWrite { cycle, reg }) = dev {
            if cycle == clk && reg != 0 {
                regs[reg as usize] = res;
            }
        }
        ex.cycles = clk + 1;
        if op == Opcode::Halt {
            if std::mem::take(&mut halt_falls_through) {
                pc += 1;
                continue;
            }
            if next_input != inputs.len() {
                return Err(ExecError::UnreadInputs { read: next_input, given: inputs.len() });
            }
            return Ok(ex);
        }
        pc = next;
    }
    Err(ExecError::CycleLimit { limit: opts.max_cycles })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::assemble;

    fn run(src: &str, inputs: &[u64]) -> Result<Execution, ExecError> {
        let p = assemble(src).unwrap();
        let inputs: Vec<F> = inputs.iter().map(|&v| F::new(v)).collect();
        execute(&p, &inputs, &ExecOptions { record: true, ..Default::default() })
    }

    #[test]
    fn arithmetic_memory_and_io() {
        let ex = run(
            "read r1\n li r2, 7\n mul r3, r1, r2 + 1\n store [r2 + 3], r3\n load r4, [10]\n sub r4, r4, 1\n\
             eq r5, r4, 23\n write r4\n write r5\n halt",
            &[3],
        )
        .unwrap();
        assert_eq!(ex.outputs, vec![F::new(23), F::ONE]);
        assert_eq!(ex.cycles, 10);
        assert_eq!(ex.memory.len(), 2);
        assert_eq!(ex.memory[1], MemAccess { addr: 10, clk: 4, value: F::new(24), write: false });
    }

    #[test]
    fn typed_errors() {
        assert_eq!(run("l: jmp l", &[]), Err(ExecError::CycleLimit { limit: DEFAULT_MAX_CYCLES }));
        assert!(matches!(
            run("li r1, -1\nload r2, [r1]\nhalt", &[]),
            Err(ExecError::BadAddress { pc: 1, line: 2, .. })
        ));
        assert!(matches!(run("li r1, 9\njr r1\nhalt", &[]), Err(ExecError::BadJump { pc: 1, .. })));
        assert_eq!(run("read r1\nhalt", &[]), Err(ExecError::InputExhausted { pc: 0, line: 1, given: 0 }));
        assert_eq!(run("halt", &[1]), Err(ExecError::UnreadInputs { read: 0, given: 1 }));
        assert_eq!(run("nop", &[]), Err(ExecError::FellOffEnd { pc: 1 }));
    }

    #[test]
    fn r0_stays_zero_and_calls_return() {
        let ex = run("li r0, 5\ncall f\nwrite r0\nwrite r1\nhalt\nf: li r1, 9\nret", &[]).unwrap();
        assert_eq!(ex.outputs, vec![F::ZERO, F::new(9)]);
    }
}
