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

/// A deliberate inconsistency, so tests can check the memory argument
/// rejects it: the n-th load (0-based) returns the stored value plus one,
/// and execution goes on with it as if memory had said so.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadFault {
    pub nth_load: usize,
}

#[derive(Clone, Debug)]
pub struct ExecOptions {
    pub max_cycles: u64,
    /// Record steps and memory accesses (needed to build traces).
    pub record: bool,
    #[doc(hidden)]
    pub fault: Option<LoadFault>,
}

impl Default for ExecOptions {
    fn default() -> ExecOptions {
        ExecOptions { max_cycles: DEFAULT_MAX_CYCLES, record: false, fault: None }
    }
}

fn to_addr(v: F) -> Option<u64> {
    (v.value() < MEM_LIMIT).then_some(v.value())
}

/// Runs `program` on `inputs`.
pub fn execute(program: &Program, inputs: &[F], opts: &ExecOptions) -> Result<Execution, ExecError> {
    let mut regs = [F::ZERO; NUM_REGS];
    let mut mem: HashMap<u64, F> = HashMap::new();
    let mut pc: usize = 0;
    let mut ex = Execution { inputs: inputs.to_vec(), ..Default::default() };
    let mut next_input = 0usize;
    let mut loads = 0usize;
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
                let addr = to_addr(a).ok_or(ExecError::BadAddress { pc, line, addr: a })?;
                let write = op == Opcode::Store;
                let value = if write {
                    mem.insert(addr, y);
                    y
                } else {
                    let mut v = mem.get(&addr).copied().unwrap_or(F::ZERO);
                    if opts.fault == Some(LoadFault { nth_load: loads }) {
                        v += F::ONE;
                    }
                    loads += 1;
                    v
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
                let v = *inputs.get(next_input).ok_or(ExecError::InputExhausted { pc, line, given: inputs.len() })?;
                next_input += 1;
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
        ex.cycles = clk + 1;
        if op == Opcode::Halt {
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
